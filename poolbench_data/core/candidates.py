"""Ghost-ball candidates: every own ball x every pocket, scored by cut angle,
path length and line-of-sight clearance (the paper, section 3.4)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from poolbench_data.core import geometry as geo
from poolbench_data.core.records import CUE, PLAYER_GROUP, Scenario, Shot
from poolbench_data.core.table import POCKET_IDS, geometry
from poolbench_data.core.validation import placement_problem

MAX_CUT = 80.0  # beyond this the object ball barely moves; never a candidate
CLEAN_CUT = 60.0


@dataclass(frozen=True)
class Candidate:
    ball: str
    pocket: str
    aim: str  # "potting-point" or "centre"
    phi: float  # cue ball -> ghost ball, degrees in [0, 360)
    cut: float
    path: float  # |C->G| + |T->aim point|
    cue_blockers: tuple[str, ...]  # balls on the cue ball's line to the ghost
    pocket_blockers: tuple[str, ...]  # balls on the object ball's line to the pocket
    ghost_ok: bool  # the ghost position is on the cloth and free
    cost: float
    ghost: tuple[float, float]  # where the cue ball must be at contact

    @property
    def open(self) -> bool:
        """Nothing in either path, the ghost ball free, and a cut the object ball can be sent along."""
        return self.ghost_ok and not self.cue_blockers and not self.pocket_blockers and self.cut < MAX_CUT

    @property
    def clean(self) -> bool:
        return self.open and self.cut <= CLEAN_CUT  # CLEAN_CUT < MAX_CUT

    def shot(self, V0: float, dphi: float = 0.0) -> Shot:
        return Shot(phi=(self.phi + dphi) % 360.0, V0=V0, target_ball=self.ball, target_pocket=self.pocket)


def _cost(cut: float, path: float, n_blockers: int, ghost_ok: bool) -> float:
    diag = math.hypot(geometry().width, geometry().length)
    return (cut / 90.0 + 0.5 * path / diag + 1.0 * n_blockers
            + (1.0 if cut > 70.0 else 0.0) + (0.0 if ghost_ok else 1.0))


def candidate(scenario: Scenario, ball: str, pocket: str, aim: str = "potting-point",
              max_cut: float = 180.0) -> Candidate | None:
    """One ball and pocket: where the ghost ball is, the cut, what is in the
    way; None when the cut exceeds max_cut (checked before the paths)."""
    balls = {b.id: (b.x, b.y) for b in scenario.balls}
    cx, cy = balls[CUE]
    tx, ty = balls[ball]
    px, py = geo.aim_point(tx, ty, pocket, aim)
    gx, gy = geo.ghost_ball(tx, ty, px, py)
    cut = geo.cut_angle(cx, cy, gx, gy, px, py)
    if cut > max_cut:
        return None
    D = geometry().ball_diameter
    ghost_ok = placement_problem(gx, gy) is None and all(
        math.hypot(gx - x, gy - y) >= D for b, (x, y) in balls.items() if b not in (CUE, ball))
    cue_bl = tuple(geo.path_blockers(cx, cy, gx, gy, balls, ignore=(CUE, ball)))
    pocket_bl = tuple(geo.path_blockers(tx, ty, px, py, balls, ignore=(CUE, ball)))
    path = math.hypot(gx - cx, gy - cy) + math.hypot(px - tx, py - ty)
    return Candidate(ball, pocket, aim, geo.angle_deg(cx, cy, gx, gy), cut, path, cue_bl, pocket_bl, ghost_ok,
                     _cost(cut, path, len(cue_bl) + len(pocket_bl), ghost_ok), (gx, gy))


def candidates(scenario: Scenario, aim: str = "potting-point", group: str = PLAYER_GROUP) -> list[Candidate]:
    """All candidates with cut <= MAX_CUT, cheapest first (ties by ball, pocket)."""
    out = [c for t in scenario.balls if t.group == group for pid in POCKET_IDS
           if (c := candidate(scenario, t.id, pid, aim, MAX_CUT)) is not None]
    out.sort(key=lambda c: (c.cost, int(c.ball), c.pocket))
    return out


def speed_for(c: Candidate) -> float:
    """The prompt's rule of thumb: 8-12 m/s, more for steep cuts and long paths."""
    diag = math.hypot(geometry().width, geometry().length)
    return round(8.0 + 4.0 * min(1.0, 0.5 * c.cut / 70.0 + 0.5 * c.path / diag), 3)
