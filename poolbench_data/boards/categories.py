"""The seven categories' defining properties, checked by geometry.

Each check is a pure function of a Scenario; generation rejects samples that
fail their category's check (docs/scenarios.md states the definitions).
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from poolbench_data.core import geometry as geo
from poolbench_data.core.candidates import candidates
from poolbench_data.core.records import CUE, PLAYER_GROUP, Scenario
from poolbench_data.core.table import geometry

CROWD_RADIUS = 0.4
CROWD_MIN_BALLS = 8
SPARSE_MAX_OBJECT_BALLS = 6
SPARSE_MIN_GAP = 0.35  # minimum centre distance between any two balls
TRAP_DISTANCE_BALLS = 2.0  # "on or next to": within two ball diameters of the line
SPIN_MAX_GAP = 0.005  # cue ball surface to cushion surface, metres


def _positions(s: Scenario) -> dict[str, tuple[float, float]]:
    return {b.id: (b.x, b.y) for b in s.balls}


def clean_own_balls(s: Scenario) -> set[str]:
    """Own balls with at least one clean pot line (clear cue->ghost and
    ball->pocket lines, free ghost position, cut <= 60 deg)."""
    return {c.ball for c in candidates(s, "potting-point") if c.clean}


def is_open(s: Scenario) -> bool:
    return len(clean_own_balls(s)) >= 2


def is_partial_block(s: Scenario) -> bool:
    own = {b.id for b in s.own()}
    clean = clean_own_balls(s)
    return bool(clean) and bool(own - clean)


def directly_hittable_own(s: Scenario) -> set[str]:
    return set(_directly_hittable_own(s))


# A board asks it up to three times (its category check when drawn, its
# label, the kick Oracle), and each is a ray cast over the own balls' cones.
@functools.lru_cache(maxsize=256)
def _directly_hittable_own(s: Scenario) -> frozenset[str]:
    pos = _positions(s)
    cx, cy = pos.pop(CUE)
    own = {b.id for b in s.own()}
    return frozenset(geo.directly_hittable(cx, cy, pos, targets=own))


def is_indirect(s: Scenario) -> bool:
    """No straight cue-ball shot, at any angle, hits an own ball first."""
    return not directly_hittable_own(s)


def max_disc_count(points: np.ndarray, r: float) -> int:
    """Most points inside any disc of radius r (exact: an optimal disc can be
    moved until it is centred on a point or has two points on its rim)."""
    pts = np.asarray(points, dtype=float)
    centres = [p for p in pts]
    for a, b in itertools.combinations(pts, 2):
        d = float(np.hypot(*(b - a)))
        if 0 < d <= 2 * r:
            mid, h = (a + b) / 2, math.sqrt(r * r - d * d / 4)
            n = np.array([-(b - a)[1], (b - a)[0]]) / d
            centres += [mid + h * n, mid - h * n]
    C = np.array(centres)
    dist = np.hypot(pts[None, :, 0] - C[:, None, 0], pts[None, :, 1] - C[:, None, 1])
    return int((dist <= r + 1e-9).sum(axis=1).max())


def is_crowded(s: Scenario) -> bool:
    pts = np.array([(b.x, b.y) for b in s.object_balls])
    return max_disc_count(pts, CROWD_RADIUS) >= CROWD_MIN_BALLS


def is_sparse(s: Scenario) -> bool:
    if len(s.object_balls) > SPARSE_MAX_OBJECT_BALLS:
        return False
    return all(math.hypot(a.x - b.x, a.y - b.y) >= SPARSE_MIN_GAP for a, b in itertools.combinations(s.balls, 2))


def trap_balls(s: Scenario) -> list[str]:
    """Opponent balls or the 8 on or next to the line to the nearest own ball."""
    c = s.cue
    nearest = s.nearest_own()
    D = geometry().ball_diameter
    dx, dy = nearest.x - c.x, nearest.y - c.y
    out = []
    for b in s.object_balls:
        if b.group == PLAYER_GROUP:
            continue
        # Only balls between the two: one behind the cue ball is no trap.
        if 0.0 < ((b.x - c.x) * dx + (b.y - c.y) * dy) / (dx * dx + dy * dy) < 1.0:
            if geo.point_segment_distance(b.x, b.y, c.x, c.y, nearest.x, nearest.y) <= TRAP_DISTANCE_BALLS * D:
                out.append(b.id)
    return out


def is_foul_trap(s: Scenario) -> bool:
    return bool(trap_balls(s))


def cue_cushion_gap(s: Scenario) -> float:
    """Distance from the cue ball's surface to the nearest straight cushion."""
    g = geometry()
    c = s.cue
    return min(geo.point_segment_distance(c.x, c.y, *seg[1:]) for seg in g.linear_cushions) - g.ball_radius


def is_spin_shot(s: Scenario) -> bool:
    return cue_cushion_gap(s) <= SPIN_MAX_GAP


CHECKS = {
    "open": is_open,
    "partial-block": is_partial_block,
    "indirect": is_indirect,
    "crowded": is_crowded,
    "sparse": is_sparse,
    "foul-trap": is_foul_trap,
    "spin-shot": is_spin_shot,
}


def has_property(s: Scenario, category: str | None = None) -> bool:
    return CHECKS[category or s.category](s)
