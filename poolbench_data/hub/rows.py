"""Pure per-row functions: records in, dataset rows out."""

from __future__ import annotations

from poolbench_data.records import Event, Shot
from poolbench_data.runs import ScenarioRun, ShotRecord, angular_error
from poolbench_data.table import geometry

_CUSHION = ("ball_linear_cushion", "ball_circular_cushion")


def event_text(events: tuple[Event, ...]) -> str:
    """CueTip-style trace (section 3.1): ball-ball-cue-3, ball-cushion-3, ball-pocket-3-rt."""
    parts = []
    for e in events:
        if e.type == "ball_ball":
            parts.append(f"ball-ball-{e.ids[0]}-{e.ids[1]}")
        elif e.type in _CUSHION:
            parts.append(f"ball-cushion-{e.ids[0]}")
        elif e.type == "ball_pocket":
            parts.append(f"ball-pocket-{e.ids[0]}-{e.ids[1]}")
    return ", ".join(parts)


def scenario_row(run: ScenarioRun, base_seed: int, index: int) -> dict:
    from poolbench_data.prompts import PROMPT_VERSION, format_action, messages

    s = run.scenario
    oracle = next(r for r in run.records if r.player == "oracle")
    return {
        **s.to_row(),
        "base_seed": base_seed,
        "index": index,
        "table": geometry().to_row(),
        "prompt": messages(s),
        "prompt_version": PROMPT_VERSION,
        "oracle_shot": oracle.shot.to_row(),
        "oracle_action": format_action(oracle.shot, s),
        "oracle_pots": oracle.metrics.clean_pot,
        "oracle_how": oracle.how,
        "oracle_sims": oracle.sims,
        "straight_pottable": run.pottability.pottable,
        "pottable_how": run.pottability.how,
    }


def fired(rec: ShotRecord) -> bool:
    """The shot was simulated (parsed, and valid enough for the engine)."""
    return rec.result is not None and rec.result.status != "error"


def played_shot(rec: ShotRecord) -> Shot | None:
    """The action as simulated: phi wrapped into [0, 360) when it ran."""
    return rec.shot.validated() if fired(rec) else rec.shot


def oracle_diagnostics(rec: ShotRecord, oracle_shot: Shot | None) -> dict:
    """The paper's wished-for diagnostics (section 6.3): the same target as
    the Oracle's, and the aim's angular error from it (only for fired shots)."""
    shot = played_shot(rec)
    diag = {"oracle_target_ball": None, "oracle_target_pocket": None, "target_matches_oracle": None,
            "pocket_matches_oracle": None, "angle_error_deg": None}
    if oracle_shot is not None:
        diag["oracle_target_ball"] = oracle_shot.target_ball
        diag["oracle_target_pocket"] = oracle_shot.target_pocket
        if shot is not None:
            diag["target_matches_oracle"] = shot.target_ball == oracle_shot.target_ball
            diag["pocket_matches_oracle"] = shot.target_pocket == oracle_shot.target_pocket
            if fired(rec):
                diag["angle_error_deg"] = angular_error(shot.phi, oracle_shot.phi)
    return diag


def trace_row(rec: ShotRecord, oracle_shot: Shot | None, *, model: str | None = None,
              prompt_version: str | None = None, temperature: float | None = None,
              seed: int | None = None) -> dict:
    r = rec.result
    shot = played_shot(rec)
    return {
        "scenario_id": rec.scenario_id, "category": rec.category, "player": rec.player, "player_kind": rec.kind,
        "sample": rec.sample, "model": model, "prompt_version": prompt_version, "temperature": temperature,
        "seed": seed, "raw_response": rec.raw_response, "parse_status": rec.parse_status,
        "parse_message": rec.parse_message,
        "action": shot.to_row() if shot is not None else None,
        "decision_how": rec.how, "decision_sims": rec.sims,
        "sim_status": r.status if r is not None else "not-fired",
        "sim_message": r.message if r is not None else "",
        "events": [e.to_row() for e in r.events] if r is not None else [],
        "event_text": event_text(r.events) if r is not None else "",
        "first_contact": r.first_contact if r is not None else None,
        "cushion_contacts": [{"ball": b, "cushion": c} for b, c in r.cushion_contacts] if r is not None else [],
        "pocketed": [{"ball": b, "pocket": p} for b, p in r.pocketed] if r is not None else [],
        "final_positions": [{"id": i, "x": x, "y": y} for i, x, y in r.final_positions] if r is not None else [],
        **rec.metrics.to_row(),
        **oracle_diagnostics(rec, oracle_shot),
    }


def baseline_trace_rows(run: ScenarioRun) -> list[dict]:
    oracle = next((r.shot for r in run.records if r.player == "oracle"), None)
    return [trace_row(rec, oracle) for rec in run.records]
