"""Checks that make a ball layout safe to simulate.

pooltool does not validate positions: overlapping balls collide at t=0 and a
ball off the cloth stays there. Every scenario passes through here.
"""

from __future__ import annotations

import math
import reprlib

from poolbench_data.core.vocab import CUE, EIGHT, OBJECT_BALLS, SOLIDS, InvalidScenario
from poolbench_data.core.geometry import point_segment_distance
from poolbench_data.core.table import geometry

# Messages quote the user's value; a hostile one (a 10,000-deep list, a huge
# string) must neither recurse nor flood the one-line error.
_SHOW = reprlib.Repr()
_SHOW.maxlevel, _SHOW.maxstring, _SHOW.maxother, _SHOW.maxlong = 3, 40, 40, 40


def show(value) -> str:
    return _SHOW.repr(value)


def placement_problem(x: float, y: float) -> str | None:
    """Why a ball centred at (x, y) cannot stand there, or None if it can."""
    g = geometry()
    R = g.ball_radius
    if not (R <= x <= g.width - R and R <= y <= g.length - R):
        return (f"is off the cloth at ({x:.4f}, {y:.4f}); its centre must lie in "
                f"x in [{R:.4f}, {g.width - R:.4f}], y in [{R:.4f}, {g.length - R:.4f}]")
    for p in g.pockets:
        if math.hypot(x - p.x, y - p.y) < p.radius + R:
            return f"is in the mouth of pocket {p.id} at ({x:.4f}, {y:.4f}); move it at least {p.radius + R:.4f} m from the pocket centre"
    for cid, x1, y1, x2, y2 in g.linear_cushions:
        if point_segment_distance(x, y, x1, y1, x2, y2) < R - 1e-12:
            return f"overlaps cushion {cid} at ({x:.4f}, {y:.4f}); move it onto the cloth"
    for cid, cx, cy, cr in g.circular_cushions:
        if math.hypot(x - cx, y - cy) < cr + R:
            return f"overlaps the pocket jaw {cid} at ({x:.4f}, {y:.4f}); move it away from the pocket"
    return None


def coordinates(bid, xy, where: str) -> tuple[float, float]:
    """The ball's (x, y) if both are finite numbers; InvalidScenario otherwise."""
    if bid != CUE and bid not in OBJECT_BALLS:
        raise InvalidScenario(f"{where}: unknown ball id {show(bid)}; ids are 'cue' and '1'..'15'")
    if not isinstance(xy, (tuple, list)) or len(xy) != 2:
        raise InvalidScenario(f"{where}: ball {bid!r} needs two coordinates (x, y), got {show(xy)}")
    for name, v in zip("xy", xy):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise InvalidScenario(f"{where}: ball {bid!r} coordinate {name}={show(v)} is not a number")
        try:
            finite = math.isfinite(v)
        except OverflowError:  # an int too large for a float
            finite = False
        if not finite:
            raise InvalidScenario(f"{where}: ball {bid!r} coordinate {name}={show(v)} is not finite; give metres on the table")
    return xy[0], xy[1]


def validate_positions(positions: dict, where: str = "scenario") -> None:
    """Raise InvalidScenario naming the ball and the problem."""
    if CUE not in positions:
        raise InvalidScenario(f"{where}: missing cue ball; add a ball with id 'cue'")
    for bid, xy in positions.items():
        x, y = coordinates(bid, xy, where)
        problem = placement_problem(float(x), float(y))
        if problem:
            raise InvalidScenario(f"{where}: ball {bid!r} {problem}")
    if not any(b != CUE for b in positions):
        raise InvalidScenario(f"{where}: no object balls; add at least one solid (1-7)")
    D = 2 * geometry().ball_radius
    items = list(positions.items())
    for i, (a, (ax, ay)) in enumerate(items):
        for b, (bx, by) in items[i + 1:]:
            d = math.hypot(ax - bx, ay - by)
            if d < D:
                raise InvalidScenario(
                    f"{where}: balls {a!r} and {b!r} overlap (centres {d:.4f} m apart, need >= {D:.5f}); move one of them")


def playable_problem(ids, where: str = "scenario") -> str | None:
    """Why the benchmark cannot be played on a board with these balls: the
    player has solids (the baselines aim at one) and the game is eight-ball."""
    ids = set(ids)
    if not ids & set(SOLIDS):
        return f"{where}: no solid on the table; add at least one solid (1-7), the player's group"
    if EIGHT not in ids:
        return f"{where}: no 8-ball on the table; add ball '8'"
    return None
