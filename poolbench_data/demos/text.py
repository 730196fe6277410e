"""Oracle demonstrations for a supervised warm start (the `sft` config).

DPO learns only what differs between chosen and rejected, so a model that
cannot yet write the action gets no push toward writing it well; the warm
start teaches the format (and what it can of the aim) from the Oracle's
shots first. Rows are TRL's conversational prompt-completion format.
"""

from __future__ import annotations

from collections.abc import Sequence

from poolbench_data.boards.splits import EVAL_SPLITS


def demonstration(oracle_trace: dict) -> str | None:
    """'pot' for the Oracle's legal pot, 'contact' for a legal contact without
    foul, None (no demonstration) otherwise."""
    if oracle_trace["clean_pot"]:
        return "pot"
    if oracle_trace["legal_contact"] and not oracle_trace["foul"]:
        return "contact"
    return None


def sft_rows(scenarios: Sequence[dict], traces: Sequence[dict], split: str) -> list[dict]:
    """One row per board whose Oracle shot is worth imitating, in board order."""
    if split in EVAL_SPLITS:
        raise ValueError(f"split {split!r} holds the evaluation boards; demonstrations come from train splits only")
    oracle = {t["scenario_id"]: t for t in traces if t["player"] == "oracle"}
    rows = []
    for s in scenarios:
        o = oracle.get(s["id"])
        kind = demonstration(o) if o is not None else None
        if kind is None:
            continue
        rows.append({
            "prompt": s["prompt"],
            "completion": [{"role": "assistant", "content": s["oracle_action"]}],
            "scenario_id": s["id"], "category": s["category"], "split": split, "demonstration": kind,
            "player": "oracle",
            **{k: bool(o[k]) for k in ("legal_contact", "own_potted", "foul", "opp_or_8_potted", "clean_pot")},
            "prompt_version": s["prompt_version"],
        })
    return rows
