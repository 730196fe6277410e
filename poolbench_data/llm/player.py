"""Play a language model on scenarios: the same pipeline as the baselines.

messages (prompts) -> backend.generate -> parse_action -> simulate -> score.
The backend only turns message lists into strings; everything before and
after it is shared with every player.

A shot whose request failed for good (timeout, refused, past the deadline)
is no answer of the model's: it gets the parse status REQUEST_FAILED, no
raw response, and is neither a foul nor a miss (reports leave it out of the
model's rates and count it apart).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from poolbench_data.protocol.parsing import parse_action
from poolbench_data.protocol.prompts import (
    ACTION_JSON_SCHEMA,
    DEFAULT_MAX_TOKENS,
    DEFAULT_TEMPERATURE,
    MAX_FEW_SHOT,
    PROMPT_VERSION,
    messages,
)
from poolbench_data.core.records import NOT_FIRED, Metrics, Scenario, Shot
from poolbench_data.core.shutdown import stop_if_requested
from poolbench_data.llm.backend import GenerationFailure, GenerationResult
from poolbench_data.players.play import ShotRecord, play_shot
from poolbench_data.players.traces import trace_row

FEWSHOT_SEED = 99  # worked examples come from boards outside both splits
REQUEST_FAILED = "request-failed"


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
    """k worked examples (0 to MAX_FEW_SHOT): boards from FEWSHOT_SEED where the Oracle pots."""
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= MAX_FEW_SHOT:
        raise ValueError(f"few_shot={k!r}: give a whole number of worked examples from 0 to {MAX_FEW_SHOT}")
    examples = list(_few_shot_examples(k, tuple(exclude)))
    if len(examples) < k:  # never a prompt with fewer examples than asked for
        raise ValueError(f"only {len(examples)} of {k} worked examples found among the boards searched")
    return examples


# The Oracle's search costs seconds a board, and the prompt-length check and
# the run both need the same examples.
@functools.lru_cache(maxsize=8)
def _few_shot_examples(k: int, exclude: tuple[str, ...]) -> tuple[tuple[Scenario, Shot], ...]:
    from poolbench_data.players import oracle
    from poolbench_data.boards.generate import iter_scenarios

    out: list[tuple[Scenario, Shot]] = []
    if k <= 0:
        return ()
    for s in iter_scenarios(10 * k + 20, FEWSHOT_SEED):
        if s.id in exclude:
            continue
        d = oracle(s)
        if d.how == "pot":
            out.append((s, d.shot))
            if len(out) == k:
                break
    return tuple(out)


def conversations(scenarios: Sequence[Scenario], few_shot: int = 0) -> list[list[dict]]:
    examples = few_shot_examples(few_shot)
    return [messages(s, examples) for s in scenarios]


def load_tokenizer(model: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model)


def prompt_tokens(tokenizer, convs: Sequence[list[dict]]) -> list[int]:
    """Prompt length in tokens of each conversation, as vLLM's `LLM.chat`
    counts it: the model's chat template with the assistant's turn opened,
    then tokenized without adding special tokens again."""
    texts = [tokenizer.apply_chat_template(c, add_generation_prompt=True, tokenize=False) for c in convs]
    return [len(tokenizer.encode(t, add_special_tokens=False)) for t in texts]


def evaluate_model(scenarios: Sequence[Scenario], backend, settings: EvalSettings, *, player: str | None = None,
                   progress: bool = True, convs: list[list[dict]] | None = None
                   ) -> tuple[list[ShotRecord], GenerationResult]:
    """One batched generation for all scenarios, then physics for every sample.
    `convs`: the conversations to send (default: the protocol's prompts)."""
    from tqdm.auto import tqdm

    convs = convs if convs is not None else conversations(scenarios, settings.few_shot)
    gen = backend.generate(convs, n=settings.samples, temperature=settings.temperature,
                           max_tokens=settings.max_tokens, seed=settings.seed,
                           json_schema=ACTION_JSON_SCHEMA if settings.structured else None)
    failed = gen.failed_slots()
    name = player or settings.model
    records = []
    for i, (s, texts) in enumerate(tqdm(list(zip(scenarios, gen.texts)), desc="simulating", unit="scenario",
                                        disable=not progress)):
        stop_if_requested()
        for j, text in enumerate(texts):
            records.append(answer_record(s, text, failed.get((i, j)), player=name, sample=j))
    return records, gen


def answer_record(s: Scenario, text: str, failure: GenerationFailure | None, *, player: str,
                  sample: int) -> ShotRecord:
    """One answer parsed, played and scored; a request that failed is recorded as such."""
    if failure is not None:
        return request_failed(s, failure, player=player, sample=sample)
    p = parse_action(text, s)
    return play_shot(s, p.shot, player=player, kind="llm", sample=sample, how=p.status, raw_response=text,
                     parse_status=p.status, parse_message=p.message)


def request_failed(s: Scenario, failure: GenerationFailure, *, player: str, sample: int) -> ShotRecord:
    """The record of a shot whose request got no response: not fired, and no foul of the model's."""
    metrics = Metrics(False, False, False, False, (NOT_FIRED, REQUEST_FAILED))
    return ShotRecord(s.id, s.category, player, "llm", sample, None, None, metrics, how=REQUEST_FAILED,
                      raw_response=None, parse_status=REQUEST_FAILED,
                      parse_message=f"{failure.kind}: {failure.error}")


def llm_trace_rows(records: Sequence[ShotRecord], oracle_shots: dict[str, Shot], settings: EvalSettings) -> list[dict]:
    return [trace_row(r, oracle_shots.get(r.scenario_id), model=settings.model,
                      prompt_version=settings.prompt_version, temperature=settings.temperature,
                      seed=settings.seed) for r in records]
