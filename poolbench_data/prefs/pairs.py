"""Physics-labelled preference pairs (the paper's zero-annotation promise).

Responses are ordered by `core.scoring.physics_score` of their trace row's
metrics; a pair exists only where the chosen side is strictly better.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from poolbench_data.core.records import Metrics
from poolbench_data.core.scoring import physics_score as _score

SOURCES = ("oracle-vs-llm", "on-policy")


def physics_score(row: dict) -> float:
    """Score of one trace row (its metric and foul_reasons columns)."""
    return _score(Metrics.from_row(row))


def _outcome(row: dict) -> dict:
    return {"score": physics_score(row), "parse_status": row["parse_status"],
            **{k: bool(row[k]) for k in ("legal_contact", "own_potted", "foul", "opp_or_8_potted", "clean_pot")}}


def _pair(scenario: dict, chosen_text: str, rejected_text: str, chosen: dict, rejected: dict, source: str,
          chosen_model: str, rejected_model: str) -> dict:
    cs, rs = physics_score(chosen), physics_score(rejected)
    return {
        "prompt": scenario["prompt"],
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
        if r["player_kind"] == "llm":
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
        if o is None:
            continue
        o = {**o, "parse_status": "ok"}  # the chosen side is the Oracle's action written in the protocol's JSON
        for r in sorted(llm.get(s["id"], []), key=lambda r: (r["player"], r["sample"])):
            if physics_score(o) > physics_score(r):
                out.append(_pair(s, s["oracle_action"], r["raw_response"] or "", o, r, "oracle-vs-llm", "oracle",
                                 r["model"] or r["player"]))
    return out


def on_policy_pairs(scenarios: Sequence[dict], traces: Sequence[dict]) -> list[dict]:
    """Best against worst of a model's own samples, where their scores differ."""
    llm = _llm_rows(traces)
    out = []
    for s in scenarios:
        by_player: dict[str, list[dict]] = {}
        for r in llm.get(s["id"], []):
            by_player.setdefault(r["player"], []).append(r)
        for player, rows in sorted(by_player.items()):
            rows = sorted(rows, key=lambda r: r["sample"])
            best = max(rows, key=physics_score)  # first of the best, by sample order
            worst = min(rows, key=physics_score)
            if physics_score(best) > physics_score(worst):
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
