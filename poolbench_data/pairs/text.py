"""Physics-labelled preference pairs (the paper's zero-annotation promise).

Responses are ordered by `fine_score`: the four physics levels of
`core.scoring.physics_score` (0 not fired, 1 foul, 2 legal contact, 3 legal
pot), refined within a level by what the simulator and the Oracle's shot can
still tell apart: +0.5 when the cue ball's first contact is the ball the
response declared, and up to +0.49 for aim close to the Oracle's (linear in
the absolute angular error, 0 at 180 degrees). The refinement stays below 1,
so it never reorders levels. A pair exists only where the chosen side is
strictly better; failed requests and empty answers never enter a pair (they
say nothing about the model), nor a shot whose simulation stopped early (the
event limit, the wall clock: scored from where the balls were, not from what
the shot does).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from poolbench_data.core.records import STOPPED_EARLY, Metrics
from poolbench_data.core.scoring import physics_score as _score

SOURCES = ("oracle-vs-llm", "on-policy")


TARGET_BONUS = 0.5
AIM_BONUS = 0.49
# Failed generations (the evaluator's status for a request that failed for good).
NO_ANSWER = ("request-failed",)


def physics_score(row: dict) -> float:
    """Level of one trace row (its metric and foul_reasons columns)."""
    return _score(Metrics.from_row(row))


def fine_score(row: dict) -> float:
    """physics_score plus the within-level refinement (module docstring)."""
    level = physics_score(row)
    if level == 0:
        return level
    action = row.get("action") or {}
    hit_declared = row.get("first_contact") is not None and row.get("first_contact") == action.get("target_ball")
    err = row.get("angle_error_deg")
    aim = AIM_BONUS * (1.0 - min(abs(err), 180.0) / 180.0) if err is not None else 0.0
    return round(level + (TARGET_BONUS if hit_declared else 0.0) + aim, 6)


def answered(row: dict) -> bool:
    """A model's row a pair can use: a response came, and its shot, if fired, ran to rest."""
    return (bool(row.get("raw_response")) and row.get("parse_status") not in NO_ANSWER
            and row.get("sim_status") not in STOPPED_EARLY)


def _outcome(row: dict) -> dict:
    return {"score": fine_score(row), "parse_status": row["parse_status"],
            **{k: bool(row[k]) for k in ("legal_contact", "own_potted", "foul", "opp_or_8_potted", "clean_pot")}}


def _pair(scenario: dict, chosen_text: str, rejected_text: str, chosen: dict, rejected: dict, source: str,
          chosen_model: str, rejected_model: str, prompt: list[dict] | None = None) -> dict:
    """One pair row; `prompt` defaults to the board's (system, user) messages."""
    cs, rs = fine_score(chosen), fine_score(rejected)
    return {
        "prompt": scenario["prompt"] if prompt is None else prompt,
        "chosen": [{"role": "assistant", "content": chosen_text}],
        "rejected": [{"role": "assistant", "content": rejected_text}],
        "scenario_id": scenario["id"], "category": scenario["category"], "source": source,
        "chosen_model": chosen_model, "rejected_model": rejected_model,
        "chosen_outcome": _outcome(chosen), "rejected_outcome": _outcome(rejected),
        "chosen_score": cs, "rejected_score": rs, "margin": cs - rs, "prompt_version": scenario["prompt_version"],
    }


def _llm_rows(traces: Iterable[dict]) -> dict[str, list[dict]]:
    by: dict[str, list[dict]] = {}
    for r in traces:
        if r["player_kind"] == "llm" and answered(r):
            by.setdefault(r["scenario_id"], []).append(r)
    return by


def oracle_pairs(scenarios: Sequence[dict], traces: Sequence[dict]) -> list[dict]:
    """Chosen: the Oracle's action in the protocol's JSON format; rejected:
    each LLM response the simulator scores strictly lower."""
    oracle = {r["scenario_id"]: r for r in traces if r["player"] == "oracle"}
    llm = _llm_rows(traces)
    out = []
    for s in scenarios:
        o = oracle.get(s["id"])
        if o is None or o.get("sim_status") in STOPPED_EARLY:
            continue
        o = {**o, "parse_status": "ok"}  # the chosen side is the Oracle's action written in the protocol's JSON
        for r in sorted(llm.get(s["id"], []), key=lambda r: (r["player"], r["sample"])):
            if physics_score(o) > physics_score(r):
                out.append(_pair(s, s["oracle_action"], r["raw_response"] or "", o, r, "oracle-vs-llm", "oracle",
                                 r["model"] or r["player"]))
    return out


def on_policy_pairs(scenarios: Sequence[dict], traces: Sequence[dict]) -> list[dict]:
    """Best against worst of a model's own samples, where their fine scores differ."""
    llm = _llm_rows(traces)
    out = []
    for s in scenarios:
        by_player: dict[str, list[dict]] = {}
        for r in llm.get(s["id"], []):
            by_player.setdefault(r["player"], []).append(r)
        for player, rows in sorted(by_player.items()):
            rows = sorted(rows, key=lambda r: r["sample"])
            best = max(rows, key=fine_score)  # first of the best, by sample order
            worst = min(rows, key=fine_score)
            if fine_score(best) > fine_score(worst):
                model = best["model"] or player
                out.append(_pair(s, best["raw_response"] or "", worst["raw_response"] or "", best, worst,
                                 "on-policy", model, model))
    return out


def build_pairs(scenarios: Sequence[dict], traces: Sequence[dict], sources: Sequence[str] = SOURCES) -> list[dict]:
    unknown = [x for x in sources if x not in SOURCES]
    if unknown:
        raise ValueError(f"unknown pair source(s) {unknown}; available: {', '.join(SOURCES)}")
    pairs = []
    if "oracle-vs-llm" in sources:
        pairs += oracle_pairs(scenarios, traces)
    if "on-policy" in sources:
        pairs += on_policy_pairs(scenarios, traces)
    assert all(p["margin"] > 0 for p in pairs)  # equal scores never pair
    return pairs
