"""poolbench_data/core/cue_paths.py: where the cue ball runs after contact, by geometry (the tangent line,
mirrored off the cushions) and by closed-form physics (the path to its first cushion), against the simulator."""

from __future__ import annotations

import math

from poolbench_data.boards.generate import generate
from poolbench_data.core.cue_paths import cue_path, path_pocket, strike, tangent_path
from poolbench_data.core.records import Shot
from poolbench_data.demos.tools import listed_own, played
from poolbench_data.llm.tools import ball_report
from poolbench_data.protocol.prompts import format_action

SPEEDS = (3.0, 5.0)  # the slowest speed the choice rules try, and the tool SFT model's


def test_the_tangent_line_is_geometry_of_the_cut():
    from poolbench_data.core.geometry import aim_point
    from poolbench_data.core.records import Scenario
    from poolbench_data.core.table import geometry

    # The ghost ball where the lines to rc's potting point and to rb's centre meet at a right angle (on the
    # circle over them): cut into rc, the cue ball leaves along the line to rb when it comes from the rc-side of
    # the shot line, away from it from the other side; a straight shot has no tangent line.
    rb = next(p for p in geometry().pockets if p.id == "rb")
    px, py = aim_point(0.5, 0.5, "rc", "potting-point")
    centre, radius = ((px + rb.x) / 2, (py + rb.y) / 2), math.dist((px, py), (rb.x, rb.y)) / 2
    gx, gy = centre[0] - radius * math.cos(0.3), centre[1] + radius * math.sin(0.3)
    u = ((px - gx) / math.dist((px, py), (gx, gy)), (py - gy) / math.dist((px, py), (gx, gy)))
    ball = (gx + geometry().ball_diameter * u[0], gy + geometry().ball_diameter * u[1])
    assert aim_point(*ball, "rc", "potting-point") == (px, py)
    seen = {}
    for side in (1, -1):
        t = (side * u[1], -side * u[0])
        d = (math.cos(0.7) * u[0] + math.sin(0.7) * t[0], math.cos(0.7) * u[1] + math.sin(0.7) * t[1])
        s = Scenario.create("t", "open", 0, {"cue": (gx - 0.3 * d[0], gy - 0.3 * d[1]), "1": ball, "8": (0.2, 2.0)})
        seen[side] = tangent_path(s, "1", "rc", cushions=0)
    straight = Scenario.create("t", "open", 0, {"cue": (gx - 0.3 * u[0], gy - 0.3 * u[1]), "1": ball, "8": (0.2, 2.0)})
    assert seen == {1: 0, -1: None} and tangent_path(straight, "1", "rc") is None


def test_a_path_is_mirrored_off_the_cushions_into_a_pocket():
    from poolbench_data.core.table import geometry

    geo = geometry()
    lb, r = next(p for p in geo.pockets if p.id == "lb"), geo.ball_radius
    x, y = geo.width / 2, geo.length / 2

    def toward(tx, ty):
        n = math.dist((x, y), (tx, ty))
        return (tx - x) / n, (ty - y) / n

    assert path_pocket(x, y, *toward(lb.x, lb.y), cushions=3) == 0
    # Aimed at lb's mirror image across the right cushion (where the ball's centre meets it): one cushion, then lb.
    mirrored = toward(2 * (geo.width - r) - lb.x, lb.y)
    assert path_pocket(x, y, *mirrored, cushions=3) == 1
    assert path_pocket(x, y, *mirrored, cushions=0) is None
    assert path_pocket(x, y, 1.0, 0.0, cushions=3) == 0  # straight across into the side pocket rc
    assert path_pocket(x, geo.length / 4, 1.0, 0.0, cushions=3) is None  # across and back, off the pockets


def test_the_cue_path_meets_the_simulators_first_cushion():
    """Before its first cushion the closed-form path is the simulator's: the cue ball's next contact after the
    object ball, where it is a straight cushion, within 2 cm, and a pocket where it is one."""
    from poolbench_data.core.physics import _run, build_system
    from poolbench_data.protocol.parsing import parse_action

    checked = 0
    for s in generate(16, base_seed=1):
        ball = listed_own(s)[0]
        x = next((x for x in ball_report(s, ball)["shots"] if x["open"]), None)
        for v in (SPEEDS if x else ()):
            shot = Shot(phi=x["potting_point_aim_angle_deg"], V0=v, target_ball=ball, target_pocket=x["pocket"])
            system = build_system(s, parse_action(format_action(shot, s), s).shot)
            _run(system, 1000, 20.0)
            kinds = ("ball_ball", "ball_linear_cushion", "ball_circular_cushion", "ball_pocket")
            cue = [e for e in system.events if "cue" in e.ids and e.event_type.value in kinds]
            if len(cue) < 2 or cue[0].event_type.value != "ball_ball" or cue[1].event_type.value == "ball_ball":
                continue  # missed, or ran into another ball: out of the model
            path, kind = cue_path(s, ball, x["pocket"], v), cue[1].event_type.value
            if kind == "ball_linear_cushion":
                agent = next(a for a in cue[1].agents if a.agent_type.value == "ball")
                assert path[0] == "cushion" and math.dist(agent.final.state.rvw[0][:2], path[1:]) < 0.02, (s.id, v)
                checked += 1
            elif kind == "ball_pocket":
                assert path == ("pocket", cue[1].ids[1]), (s.id, v)  # a scratch straight off the object ball
    assert checked >= 8  # the followed straight shot below is the pocket's case


def test_a_followed_straight_shot_runs_the_cue_ball_into_the_pocket():
    from poolbench_data.core.records import Scenario

    # The players' top spin: after a full hit the cue ball follows the object ball, and the simulator scratches.
    s = Scenario.create("t", "open", 0, {"cue": (0.6, 0.6), "1": (0.25, 0.25), "8": (0.2, 2.0)})
    x = next(x for x in ball_report(s, "1")["shots"] if x["pocket"] == "lb")
    assert x["cut_angle_deg"] == 0.0
    for v in SPEEDS:
        assert cue_path(s, "1", "lb", v) == ("pocket", "lb")
        shot = Shot(phi=x["potting_point_aim_angle_deg"], V0=v, target_ball="1", target_pocket="lb")
        assert "scratch" in played(s, format_action(shot, s))[1].foul_reasons
    ratio, spin = strike()
    assert 1.3 < ratio < 1.45 and spin == 0.625  # pooltool's strike: ball speed over cue speed, spin over speed
