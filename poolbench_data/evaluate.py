"""Play a language model on scenarios: the same pipeline as the baselines.

messages (prompts) -> backend.generate -> parse_action -> simulate -> score.
The backend only turns message lists into strings; everything before and
after it is shared with every player.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from poolbench_data.parsing import parse_action
from poolbench_data.prompts import ACTION_JSON_SCHEMA, PROMPT_VERSION, messages
from poolbench_data.records import Scenario, Shot
from poolbench_data.runs import ShotRecord, play_shot

FEWSHOT_SEED = 99  # worked examples come from boards outside both splits


@dataclass(frozen=True)
class EvalSettings:
    model: str
    backend: str
    samples: int = 1
    temperature: float = 0.2
    max_tokens: int = 300
    seed: int = 0
    structured: bool = False
    few_shot: int = 0
    prompt_version: str = PROMPT_VERSION

    def to_dict(self) -> dict:
        return asdict(self)


def few_shot_examples(k: int, exclude: Sequence[str] = ()) -> list[tuple[Scenario, Shot]]:
    """k worked examples: boards from FEWSHOT_SEED where the Oracle pots."""
    from poolbench_data.players import oracle
    from poolbench_data.scenarios import iter_scenarios

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
                   progress: bool = True) -> list[ShotRecord]:
    """One batched generation for all scenarios, then physics for every sample."""
    from tqdm.auto import tqdm

    convs = conversations(scenarios, settings.few_shot)
    outs = backend.generate(convs, n=settings.samples, temperature=settings.temperature,
                            max_tokens=settings.max_tokens, seed=settings.seed,
                            json_schema=ACTION_JSON_SCHEMA if settings.structured else None)
    failures = {f.conversation: f for f in getattr(backend, "last_failures", [])}
    name = player or settings.model
    records = []
    for i, (s, texts) in enumerate(tqdm(list(zip(scenarios, outs)), desc="simulating", unit="scenario",
                                        disable=not progress)):
        for j, text in enumerate(texts):
            p = parse_action(text, s)
            message = p.message
            if i in failures and not text:
                message = f"{failures[i].kind}: {failures[i].error}"
            records.append(play_shot(s, p.shot, player=name, kind="llm", sample=j, how=p.status,
                                     raw_response=text, parse_status=p.status, parse_message=message))
    return records


def llm_trace_rows(records: Sequence[ShotRecord], oracle_shots: dict[str, Shot], settings: EvalSettings) -> list[dict]:
    from poolbench_data.hub.rows import trace_row

    return [trace_row(r, oracle_shots.get(r.scenario_id), model=settings.model,
                      prompt_version=settings.prompt_version, temperature=settings.temperature,
                      seed=settings.seed) for r in records]


def decomposition(records: Sequence[ShotRecord], oracle_shots: dict[str, Shot]) -> dict:
    """Target-vs-angle decomposition (paper section 6.3) for one player: the
    traces' per-shot diagnostics, counted over the shots that were fired."""
    from poolbench_data.hub.rows import fired, oracle_diagnostics
    from poolbench_data.stats import quantile

    shots = [(r, oracle_diagnostics(r, oracle_shots.get(r.scenario_id))) for r in records if fired(r)]
    match = [r for r, d in shots if d["target_matches_oracle"]]
    errors = [abs(d["angle_error_deg"]) for _, d in shots if d["angle_error_deg"] is not None]
    return {
        "shots": len(records),
        "fired": len(shots),
        "target_matches_oracle": len(match),
        "median_abs_angle_error_deg": quantile(errors, 0.5) if errors else None,
        "within_1deg": sum(e <= 1.0 for e in errors),
        "within_5deg": sum(e <= 5.0 for e in errors),
        "contact_given_target_match": sum(r.metrics.legal_contact for r in match),
        "pot_given_target_match": sum(r.metrics.own_potted for r in match),
    }


def format_decomposition(rows: dict[str, dict]) -> str:
    head = (f"{'Player':24} {'fired':>6} {'target=Oracle':>13} {'med |dphi|':>10} {'<=1deg':>7} {'<=5deg':>7} "
            f"{'contact|match':>13} {'pot|match':>9}")
    lines = ["Target-vs-angle decomposition (against the Oracle's shot)", head, "-" * len(head)]
    for p, d in rows.items():
        med = f"{d['median_abs_angle_error_deg']:.2f}" if d["median_abs_angle_error_deg"] is not None else "-"
        lines.append(f"{p:24} {d['fired']:>3}/{d['shots']:<2} {d['target_matches_oracle']:>13} {med:>10} "
                     f"{d['within_1deg']:>7} {d['within_5deg']:>7} {d['contact_given_target_match']:>13} "
                     f"{d['pot_given_target_match']:>9}")
    return "\n".join(lines)


def parse_summary(records: Sequence[ShotRecord]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in records:
        out[r.parse_status] = out.get(r.parse_status, 0) + 1
    return dict(sorted(out.items()))
