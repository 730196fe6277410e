"""Play a language model on scenarios: the same pipeline as the baselines.

messages (prompts) -> backend.generate -> parse_action -> simulate -> score.
The backend only turns message lists into strings; everything before and
after it is shared with every player.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from poolbench_data.protocol.parsing import parse_action
from poolbench_data.protocol.prompts import (
    ACTION_JSON_SCHEMA,
    DEFAULT_MAX_TOKENS,
    DEFAULT_TEMPERATURE,
    PROMPT_VERSION,
    messages,
)
from poolbench_data.core.records import Scenario, Shot
from poolbench_data.llm.backend import GenerationResult
from poolbench_data.players.play import ShotRecord, play_shot
from poolbench_data.players.traces import trace_row

FEWSHOT_SEED = 99  # worked examples come from boards outside both splits


@dataclass(frozen=True)
class EvalSettings:
    model: str
    backend: str
    samples: int = 1
    temperature: float = DEFAULT_TEMPERATURE
    max_tokens: int = DEFAULT_MAX_TOKENS
    seed: int = 0
    structured: bool = False
    few_shot: int = 0
    prompt_version: str = PROMPT_VERSION

    def to_dict(self) -> dict:
        return asdict(self)


def few_shot_examples(k: int, exclude: Sequence[str] = ()) -> list[tuple[Scenario, Shot]]:
    """k worked examples: boards from FEWSHOT_SEED where the Oracle pots."""
    from poolbench_data.players import oracle
    from poolbench_data.boards.generate import iter_scenarios

    out: list[tuple[Scenario, Shot]] = []
    if k <= 0:
        return out
    for s in iter_scenarios(10 * k + 20, FEWSHOT_SEED):
        if s.id in exclude:
            continue
        d = oracle(s)
        if d.how == "pot":
            out.append((s, d.shot))
            if len(out) == k:
                break
    return out


def conversations(scenarios: Sequence[Scenario], few_shot: int = 0) -> list[list[dict]]:
    examples = few_shot_examples(few_shot)
    return [messages(s, examples) for s in scenarios]


def evaluate_model(scenarios: Sequence[Scenario], backend, settings: EvalSettings, *, player: str | None = None,
                   progress: bool = True) -> tuple[list[ShotRecord], GenerationResult]:
    """One batched generation for all scenarios, then physics for every sample."""
    from tqdm.auto import tqdm

    convs = conversations(scenarios, settings.few_shot)
    gen = backend.generate(convs, n=settings.samples, temperature=settings.temperature,
                           max_tokens=settings.max_tokens, seed=settings.seed,
                           json_schema=ACTION_JSON_SCHEMA if settings.structured else None)
    failures = {f.conversation: f for f in gen.failures}
    name = player or settings.model
    records = []
    for i, (s, texts) in enumerate(tqdm(list(zip(scenarios, gen.texts)), desc="simulating", unit="scenario",
                                        disable=not progress)):
        for j, text in enumerate(texts):
            p = parse_action(text, s)
            message = p.message
            if i in failures and not text:
                message = f"{failures[i].kind}: {failures[i].error}"
            records.append(play_shot(s, p.shot, player=name, kind="llm", sample=j, how=p.status,
                                     raw_response=text, parse_status=p.status, parse_message=message))
    return records, gen


def llm_trace_rows(records: Sequence[ShotRecord], oracle_shots: dict[str, Shot], settings: EvalSettings) -> list[dict]:
    return [trace_row(r, oracle_shots.get(r.scenario_id), model=settings.model,
                      prompt_version=settings.prompt_version, temperature=settings.temperature,
                      seed=settings.seed) for r in records]
