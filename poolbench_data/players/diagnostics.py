"""Per-shot diagnostics against the Oracle (the paper's section 6.3 wish):
did the player pick the Oracle's target, and how far off was its aim."""

from __future__ import annotations

import math

from poolbench_data.core.records import Shot
from poolbench_data.players.play import ShotRecord


def angular_error(phi: float, reference: float) -> float:
    """Smallest signed difference phi - reference, in (-180, 180]."""
    d = math.fmod(phi - reference, 360.0)
    if d > 180.0:
        d -= 360.0
    elif d <= -180.0:
        d += 360.0
    return d


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
