"""The cue ball's departure lines a ghost_ball report shows (`lines`: core.cue_paths.departure_lines), and what a
player that reads them and does not simulate makes of them (analysis/position_lines.py). The tool configs built
from the lines are tested with the other run-out configs (tests/test_position_data.py)."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from poolbench_data.boards.generate import generate
from poolbench_data.core.candidates import candidates
from poolbench_data.core.cue_paths import departure_lines, shot_points
from poolbench_data.core.records import PLAYER_GROUP, BallPos
from poolbench_data.llm.tools import ball_report, call_of, result_tokens, turn_result



def _angle(a: float, b: float) -> float:
    """The angle between two headings, 0..180 degrees."""
    d = abs(a - b) % 360.0
    return 360.0 - d if d > 180.0 else d


def _line(s, ball: str, pocket: str) -> tuple[float, float]:
    """(the aim's heading, the object ball's heading after contact) of the report's shot."""
    (cx, cy), (tx, ty), _, (gx, gy) = shot_points(s, ball, pocket)
    return (math.degrees(math.atan2(gy - cy, gx - cx)) % 360.0,
            math.degrees(math.atan2(ty - gy, tx - gx)) % 360.0)


def test_the_departure_lines_are_the_players_rules_of_the_cut():
    """Stun leaves on the tangent line, square to the object ball's line; follow bends from it towards the aim and
    draw away from it; the 30-degree rule: a half-ball hit with follow leaves ~34 degrees off the aim."""
    seen = 0
    for s in generate(12, base_seed=3):
        for c in candidates(s)[:4]:
            aim, obj = _line(s, c.ball, c.pocket)
            lines = departure_lines(s, c.ball, c.pocket)
            cut = _angle(aim, obj)
            if cut < 1.0:
                continue
            assert _angle(lines["stun"], obj) == pytest.approx(90.0, abs=1e-6)
            assert _angle(lines["follow"], aim) < _angle(lines["stun"], aim) < _angle(lines["draw"], aim)
            seen += 1
            if 25.0 < cut < 35.0:  # near half-ball: the follow line is 30-odd degrees off the aim
                assert 28.0 < _angle(lines["follow"], aim) < 40.0
    assert seen >= 20


def test_a_straight_shot_stops_on_stun_follows_on_and_draws_back():
    s = generate(1, base_seed=3)[0]
    c = candidates(s)[0]
    (tx, ty), (px, py) = shot_points(s, c.ball, c.pocket)[1:3]
    u = ((px - tx) / math.dist((px, py), (tx, ty)), (py - ty) / math.dist((px, py), (tx, ty)))
    cue = BallPos("cue", tx - 0.3 * u[0], ty - 0.3 * u[1])  # on the object ball's line to the potting point
    straight = replace(s, balls=(cue, *s.balls[1:]))
    lines = departure_lines(straight, c.ball, c.pocket)
    aim = _line(straight, c.ball, c.pocket)[0]
    assert lines["stun"] is None
    assert _angle(lines["follow"], aim) < 1e-6 and _angle(lines["draw"], aim) == pytest.approx(180.0)


def test_a_report_with_lines_adds_the_headings_of_its_open_shots_only():
    shown = 0
    for s in generate(8, base_seed=5):
        for b in (x.id for x in s.balls if x.group == PLAYER_GROUP):
            plain, lined = ball_report(s, b), ball_report(s, b, lines=True)
            for p, q in zip(plain["shots"], lined["shots"]):
                extra = {k: v for k, v in q.items() if k not in p}
                assert {k: q[k] for k in p} == p
                if p["open"]:
                    want = departure_lines(s, b, p["pocket"])
                    assert extra == {"cue_after_deg": {k: round(v, 1) for k, v in want.items()}}
                    shown += 1
                else:
                    assert extra == {}
            assert {k: v for k, v in lined.items() if k != "shots"} == {k: v for k, v in plain.items()
                                                                        if k != "shots"}
            tokens = len(json.dumps(turn_result(s, call_of(b), 2, lines=True)))
            assert tokens / 2 < result_tokens(lines=True)  # a JSON token covers more than 2 characters here
    assert shown >= 5


# --- analysis/position_lines.py: what the lines are worth to a player that does not simulate ---------------------

def _position_lines():
    import importlib.util

    spec = importlib.util.spec_from_file_location("position_lines", Path(__file__).resolve().parents[1] / "analysis"
                                                  / "position_lines.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass is resolved through its module
    spec.loader.exec_module(module)
    return module


def test_the_line_reader_plays_the_line_that_passes_nearest_the_next_ghost_ball():
    pl = _position_lines()
    from poolbench_data.core.cue_paths import path_pocket

    checked = 0
    for s in generate(20, base_seed=7):
        found = pl.first_open(s)
        if found is None:
            continue
        ball, shot = found
        chosen = pl.line_spin(s, ball, shot)
        gx, gy = shot_points(s, ball, shot["pocket"])[3]
        targets = [c.ghost for c in candidates(s) if c.ball != ball and not c.pocket_blockers]
        gaps = {}
        for name, h in shot["cue_after_deg"].items():
            if h is not None and path_pocket(gx, gy, math.cos(math.radians(h)), math.sin(math.radians(h)), 0) != 0:
                gaps[name] = min(pl._ray_gap(gx, gy, h, *t) for t in targets) if targets else math.inf
        if gaps and min(gaps.values()) < math.inf:
            assert gaps[chosen] == min(gaps.values())
            checked += 1
    assert checked >= 5


def test_the_analysis_plays_every_player_on_the_same_starts(tmp_path, capsys):
    pl = _position_lines()
    out = tmp_path / "lines.json"
    assert pl.main(["--n", "3", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result["players"]) == {"default", "stun", "follow", "draw", "lines"}
    assert set(result["players"]["lines"]["lines_chosen"]) <= {"line stun", "line follow", "line draw",
                                                               "nothing open"}
    assert all(0 <= v["runouts"] <= 3 for v in result["players"].values())
    assert "lines against each fixed spin" in capsys.readouterr().out
