"""One-cushion kick candidates: the cue ball banks off one rail, then meets
an own ball. For boards where no straight shot reaches an own ball (the
indirect category), the only legal shots there are.

The cue ball's centre bounces off the line a ball radius inside each rail, so
the aim is the ghost ball (or, for a plain contact, the ball itself) mirrored
across that line. Real cushions are not mirrors (pooltool models rebound
losses and spin), which is why kick candidates are searched in the simulator.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from poolbench_data.core import geometry as geo
from poolbench_data.core.candidates import MAX_CUT
from poolbench_data.core.records import CUE, PLAYER_GROUP, Scenario, Shot
from poolbench_data.core.table import POCKET_IDS, geometry

RAIL_MARGIN = 0.01  # metres: keep the bounce this far from a pocket mouth


@dataclass(frozen=True)
class Kick:
    ball: str
    pocket: str  # the pocket for a pot; for a plain contact, the one the ball is nearest
    rail: str  # left | right | bottom | top
    pot: bool  # aimed to pot (ghost ball) or only to contact (full hit)
    phi: float  # cue ball -> mirrored aim point, degrees in [0, 360)
    cost: float

    def shot(self, V0: float, dphi: float = 0.0) -> Shot:
        return Shot(phi=(self.phi + dphi) % 360.0, V0=V0, target_ball=self.ball, target_pocket=self.pocket)


@functools.cache
def _rails() -> dict[str, tuple[str, float, tuple[tuple[float, float], ...]]]:
    """rail -> (axis, the line the ball centre bounces on, open spans along it)."""
    g = geometry()
    R = g.ball_radius
    spans: dict[str, list] = {"left": [], "right": [], "bottom": [], "top": []}
    for _, x1, y1, x2, y2 in g.linear_cushions:
        for rail, fixed, value in (("left", "x", 0.0), ("right", "x", g.width), ("bottom", "y", 0.0),
                                   ("top", "y", g.length)):
            a, b = (x1, x2) if fixed == "x" else (y1, y2)
            if abs(a - value) < 1e-9 and abs(b - value) < 1e-9:
                lo, hi = sorted((y1, y2) if fixed == "x" else (x1, x2))
                spans[rail].append((lo + RAIL_MARGIN, hi - RAIL_MARGIN))
    lines = {"left": ("x", R), "right": ("x", g.width - R), "bottom": ("y", R), "top": ("y", g.length - R)}
    return {rail: (axis, at, tuple(spans[rail])) for rail, (axis, at) in lines.items()}


def _bounce(cx, cy, tx, ty, rail) -> tuple[float, float, float, float] | None:
    """(mirrored aim x, y, bounce x, y) for a path cue -> rail -> (tx, ty), or
    None when the bounce would fall in a pocket mouth."""
    axis, at, spans = _rails()[rail]
    if axis == "x":
        mx, my = 2 * at - tx, ty
        if (cx - at) * (tx - at) <= 0:
            return None
        t = (at - cx) / (mx - cx)
        bx, by = at, cy + t * (my - cy)
        along = by
    else:
        mx, my = tx, 2 * at - ty
        if (cy - at) * (ty - at) <= 0:
            return None
        t = (at - cy) / (my - cy)
        bx, by = cx + t * (mx - cx), at
        along = bx
    if not any(lo <= along <= hi for lo, hi in spans):
        return None
    return mx, my, bx, by


def kick_candidates(scenario: Scenario, group: str = PLAYER_GROUP) -> list[Kick]:
    """Every clear one-rail kick at an own ball, pots first by cost, then
    plain contacts: both legs and the ball's way to the pocket free of balls."""
    balls = {b.id: (b.x, b.y) for b in scenario.balls}
    cx, cy = balls[CUE]
    g = geometry()
    diag = math.hypot(g.width, g.length)
    out = []
    for t in scenario.balls:
        if t.group != group:
            continue
        ignore = (CUE, t.id)
        aims = []
        for pid in POCKET_IDS:
            px, py = geo.aim_point(t.x, t.y, pid, "potting-point")
            aims.append((pid, True, *geo.ghost_ball(t.x, t.y, px, py), px, py))
        near = min(POCKET_IDS, key=lambda p: math.hypot(g.pocket(p).x - t.x, g.pocket(p).y - t.y))
        aims.append((near, False, t.x, t.y, None, None))
        for pid, pot, ax, ay, px, py in aims:
            for rail in _rails():
                b = _bounce(cx, cy, ax, ay, rail)
                if b is None:
                    continue
                mx, my, bx, by = b
                stop = (ax, ay) if pot else _short_of(bx, by, t.x, t.y, g.ball_diameter)
                if geo.path_blockers(cx, cy, bx, by, balls, ignore) or geo.path_blockers(bx, by, *stop, balls, ignore):
                    continue
                cut = geo.cut_angle(bx, by, ax, ay, px, py) if pot else 0.0
                if pot and (cut > MAX_CUT or geo.path_blockers(t.x, t.y, px, py, balls, ignore)):
                    continue
                path = math.hypot(bx - cx, by - cy) + math.hypot(ax - bx, ay - by)
                out.append(Kick(t.id, pid, rail, pot, geo.angle_deg(cx, cy, mx, my),
                                (0.0 if pot else 10.0) + cut / 90.0 + path / diag))
    out.sort(key=lambda k: (k.cost, int(k.ball), k.pocket, k.rail))
    return out


def _short_of(bx, by, tx, ty, D) -> tuple[float, float]:
    """Where the cue ball's centre stops when it meets the ball at (tx, ty)."""
    d = math.hypot(tx - bx, ty - by)
    return (tx - (tx - bx) * D / d, ty - (ty - by) * D / d) if d > D else (bx, by)
