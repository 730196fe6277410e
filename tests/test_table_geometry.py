import math

import numpy as np
import pytest

from poolbench_data.core import geometry as geo
from poolbench_data.core.table import POCKET_IDS, geometry, pooltool_table


def test_geometry_is_read_from_pooltool_table():
    g, t = geometry(), pooltool_table()
    assert (g.width, g.length) == (1.0668, 2.1336) == (t.w, t.l)
    for p in g.pockets:
        assert (p.x, p.y, p.radius) == (t.pockets[p.id].center[0], t.pockets[p.id].center[1], t.pockets[p.id].radius)
    assert [p.id for p in g.pockets] == list(POCKET_IDS)
    assert len(g.linear_cushions) == len(t.cushion_segments.linear)
    assert g.ball_radius == pytest.approx(0.028575)


def test_ghost_ball_reproduces_the_prompts_worked_example():
    # System prompt: C=(0.5,0.3), T=(0.7,1.0), P=(1.07,2.13) -> G=(0.6822,0.9457), 74.2 deg
    gx, gy = geo.ghost_ball(0.7, 1.0, 1.07, 2.13)
    assert (round(gx, 4), round(gy, 4)) == (0.6822, 0.9457)
    assert round(geo.angle_deg(0.5, 0.3, gx, gy), 1) == 74.2


def test_cut_angle_straight_and_perpendicular():
    assert geo.cut_angle(0, 0, 1, 0, 2, 0) == pytest.approx(0.0)
    assert geo.cut_angle(0, 0, 1, 0, 1, 1) == pytest.approx(90.0)
    assert geo.cut_angle(0, 0, 1, 0, 2, -1) == pytest.approx(45.0)


def test_first_hits_returns_nearest_ball_on_the_ray():
    balls = {"1": (0.5, 1.0), "9": (0.5, 0.7)}
    hits = geo.first_hits(0.5, 0.3, np.array([90.0, 270.0, 0.0]), balls)
    assert hits == ["9", None, None]


def test_directly_hittable_sees_a_ball_hidden_behind_another_only_at_the_edges():
    # 1 directly behind 9: still reachable with a thin cut past 9? No: 9 is
    # nearer and aligned, so its contact cone covers 1's entirely.
    hidden = {"9": (0.5, 0.7), "1": (0.5, 1.2)}
    assert geo.directly_hittable(0.5, 0.3, hidden) == {"9"}
    offset = {"9": (0.5, 0.7), "1": (0.75, 1.2)}
    assert geo.directly_hittable(0.5, 0.3, offset) == {"9", "1"}


def _hittable_casting_every_ray(cx, cy, balls, step_deg=0.01):
    # The exhaustive sweep, the reference: all 36,000 directions plus every cone's edges.
    D = geometry().ball_diameter
    phis = [np.arange(0.0, 360.0, step_deg)]
    for bx, by in balls.values():
        d, centre = math.hypot(bx - cx, by - cy), math.degrees(math.atan2(by - cy, bx - cx))
        half = math.degrees(math.asin(min(1.0, D / d)))
        phis.append(np.array([centre - half + 1e-6, centre + half - 1e-6, centre]))
    return {h for h in geo.first_hits(cx, cy, np.concatenate(phis), balls) if h}


@pytest.mark.slow
def test_directly_hittable_casts_only_the_targets_cones_and_agrees_with_every_ray():
    # Random crowded layouts (cue ball anywhere, cones across the 0/360 seam)
    # and the own balls of random boards: the same sets as casting all rays.
    from poolbench_data.boards.generate import iter_specs, generate_scenario

    rng = np.random.default_rng(7)
    D = geometry().ball_diameter
    layouts = []
    for _ in range(60):
        pts = []
        while len(pts) < 12:
            p = rng.uniform([0.1, 0.1], [0.96, 2.03])
            if all(math.dist(p, q) > D for q in pts):
                pts.append(tuple(p))
        cue, *rest = pts
        balls = {str(i + 1): q for i, q in enumerate(rest)}
        layouts.append((cue, balls, set(rng.choice(sorted(balls), 4, replace=False))))
    for spec in iter_specs(30, 4242, 0):
        s = generate_scenario(*spec)
        pos = {b.id: (b.x, b.y) for b in s.balls}
        cue = pos.pop("cue")
        layouts.append((cue, pos, {b.id for b in s.own()}))
    seen = 0
    for (cx, cy), balls, own in layouts:
        every = _hittable_casting_every_ray(cx, cy, balls)
        assert geo.directly_hittable(cx, cy, balls) == every
        assert geo.directly_hittable(cx, cy, balls, targets=own) == every & own
        seen += len(every & own) < len(own)
    assert seen > 10  # the layouts do hide some targets


def test_path_blockers_use_ball_diameter_corridor():
    D = geometry().ball_diameter
    balls = {"9": (0.5 + 0.99 * D, 1.0), "10": (0.5 + 1.01 * D, 1.0)}
    assert geo.path_blockers(0.5, 0.5, 0.5, 1.5, balls) == ["9"]


def test_potting_point_differs_from_centre_and_lies_near_the_mouth():
    g = geometry()
    for p in g.pockets:
        x, y = geo.aim_point(0.5, 1.0, p.id, "potting-point")
        assert math.hypot(x - p.x, y - p.y) < 2 * p.radius
    assert geo.aim_point(0.5, 1.0, "rt", "centre") == (g.pocket("rt").x, g.pocket("rt").y)
    with pytest.raises(ValueError, match="unknown aim"):
        geo.aim_point(0.5, 1.0, "rt", "middle")
