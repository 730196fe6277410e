"""analysis/choice_rules.py: rules that choose a shot and a speed from what the tool's reports show, fitted
on some boards and counted on others, beside the simulated ceilings
(docs/results.md#choice-rules-over-what-the-tool-shows)."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

from poolbench_data.boards.generate import generate
from poolbench_data.core.records import Shot
from poolbench_data.llm.tools import ball_report
from poolbench_data.demos.tools import listed_own, played
from poolbench_data.protocol.prompts import format_action

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("choice_rules", REPO / "analysis" / "choice_rules.py")
bench = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = bench  # the arguments dataclass is resolved through its module
spec.loader.exec_module(bench)


def _shot(call: int, cut: float, side: bool, clean_at: set[float], tangent: bool = False, travel: float = 1.0,
          into_pocket: set[float] = frozenset(), scratch_at: set[float] = frozenset()):
    return {"call": call, "cut": cut, "side": side, "clean": {v: v in clean_at for v in bench.SPEED_GRID},
            "tangent_path": 0 if tangent else None, "travel": travel,
            "cue_path": {v: "pocket" if v in into_pocket else "cushion" for v in bench.SPEED_GRID},
            "scratch": {v: v in scratch_at for v in bench.SPEED_GRID}}


@pytest.mark.slow
def test_candidates_are_the_open_shots_of_the_listed_calls_played_at_every_speed():
    s = next(s for s in generate(8) if sum(ball_report(s, b)["open"] for b in listed_own(s)[:3]) >= 2)
    cands = bench.candidates(s, 3)
    opened = [(i, x) for i, b in enumerate(listed_own(s)[:3]) for x in ball_report(s, b)["shots"] if x["open"]]
    assert [(c["call"], c["cut"]) for c in cands] == [(i, x["cut_angle_deg"]) for i, x in opened]
    i, x = opened[0]
    ball = listed_own(s)[i]
    for v in (bench.SPEED_GRID[0], bench.MODEL_SPEED):  # the recorded outcome is the simulator's
        m = played(s, format_action(Shot(phi=x["potting_point_aim_angle_deg"], V0=v, target_ball=ball,
                                         target_pocket=x["pocket"]), s))[1]
        assert cands[0]["clean"][v] == m.clean_pot
    from poolbench_data.core.geometry import aim_point, ghost_ball
    pos = {b.id: (b.x, b.y) for b in s.balls}
    point = aim_point(*pos[ball], x["pocket"], "potting-point")
    assert cands[0]["travel"] == math.dist(pos["cue"], ghost_ball(*pos[ball], *point)) + math.dist(pos[ball], point)
    assert bench.candidates(s, 1) == [c for c in cands if c["call"] == 0]


@pytest.mark.slow
def test_kicks_are_the_listed_calls_kicks_where_nothing_is_open():
    s = next(s for s in generate(60) if not any(ball_report(s, b)["open"] for b in listed_own(s)[:3])
             and sum(bool(ball_report(s, b).get("kick")) for b in listed_own(s)[:3]) >= 2)
    kicks = bench.kicks(s, 3)
    shown = [(i, ball_report(s, b)["kick"]) for i, b in enumerate(listed_own(s)[:3]) if ball_report(s, b).get("kick")]
    assert [(k["call"], k["pot"]) for k in kicks] == [(i, k["pot"]) for i, k in shown]
    i, k = shown[0]
    m = played(s, format_action(Shot(phi=k["aim_angle_deg"], V0=8.0, target_ball=listed_own(s)[i],
                                     target_pocket=k["pocket"]), s))[1]
    assert (kicks[0]["clean"][8.0], kicks[0]["contact"][8.0]) == (m.clean_pot, m.legal_contact)
    assert bench._board((s, 3)) == ([], kicks)
    opened = next(s for s in generate(8) if bench.candidates(s, 3))
    assert bench._board((opened, 3))[1] == []  # a board with an open shot: no kicks played


def _kick(call: int, clean_at: set[float], pot: bool = True):
    return {"call": call, "pot": pot, "clean": {v: v in clean_at for v in bench.SPEED_GRID},
            "contact": {v: True for v in bench.SPEED_GRID}}


def test_kick_rules_count_only_the_boards_with_nothing_open_but_a_kick():
    per_board = [([_shot(0, 5.0, False, {5.0})], []),  # an open shot: not a kick board
                 ([], [_kick(0, {8.0}), _kick(2, {5.0})]),
                 ([], []),  # nothing open, no kick shown
                 ([], [_kick(1, {5.0, 8.0}, pot=False), _kick(2, set())])]
    got = bench.kick_score(per_board)
    assert all(len(v) == 2 for v in got.values())
    assert sum(got[bench.KICK_RULE]) == 1 and sum(got["first kick shown at 8 m/s"]) == 2
    assert sum(got["last kick shown at 5 m/s"]) == 1 and sum(got["first kick aimed to pot at 5 m/s"]) == 0
    assert sum(got["ceiling: the best of the kicks shown and speeds"]) == 2
    assert bench.against_model(got, bench.KICK_RULE)["first kick shown at 8 m/s"] == (1, 0, 1.0)


def test_rules_are_fitted_on_one_set_and_counted_on_another():
    # Train: thin cuts pot only at 8 m/s, straight ones at 5; a side pocket never.
    train = [[_shot(0, 50.0, False, {8.0}), _shot(1, 5.0, False, {5.0})], [_shot(0, 5.0, True, set())],
             [_shot(0, 52.0, False, {8.0, 10.0})]]
    table = bench.fit(train)
    assert table[bench.key(train[0][0])] == (1.0, 8.0) and table[bench.key(train[0][1])] == (1.0, 5.0)
    assert table[bench.key(train[1][0])] == (0.0, bench.MODEL_SPEED)  # no speed pots: the model's stays
    # Held-out: the first shot is a thin cut that pots at 8 only; the fitted speed finds it, the model's rule not.
    held_out = [[_shot(0, 55.0, False, {8.0}), _shot(1, 40.0, True, {5.0})], [], [_shot(2, 3.0, False, {3.0})]]
    outcomes = bench.score(held_out, bench.fits(train), 3)
    assert all(len(v) == 2 for v in outcomes.values())  # the boards with an open shot, in order
    got = {name: sum(v) for name, v in outcomes.items()}
    assert got["first open shot at 5 m/s (the model's rule)"] == 0
    assert got["first open shot at 8 m/s"] == 1 and got["first open shot at 3 m/s"] == 1
    assert got["smallest cut of the 3 calls' open shots at 5 m/s"] == 1  # the side pocket's 40 degrees, at 5
    assert got["first open shot, fitted speed by cut and pocket"] == 1  # 55 -> 8 m/s; 3 -> 5 m/s misses
    assert got["ceiling: the first open shot at its best speed"] == 2
    assert got["ceiling: the first open ball's best shot and speed"] == 2
    assert got["ceiling: the best of the 3 calls' open shots and speeds"] == 2
    vs = bench.against_model(outcomes)
    assert vs[bench.MODEL_RULE] == (0, 0, 1.0) and vs["first open shot at 8 m/s"] == (1, 0, 1.0)


def test_the_added_geometry_rules_read_the_tangent_line_and_the_travel():
    # Train: short shots pot at 3 m/s only, long ones at 8, whatever the pocket; the tangent flag costs the pot.
    train = [[_shot(0, 10.0, False, {3.0}, travel=0.4)], [_shot(0, 10.0, False, {8.0}, True, 2.2)],
             [_shot(0, 12.0, False, {3.0}, travel=0.3)], [_shot(0, 14.0, False, {8.0}, True, 2.4)]]
    tables = bench.fits(train)
    assert tables["travel"][bench.travel_key(train[0][0])] == (1.0, 3.0)
    assert tables["pocket"][bench.key(train[0][0])] == (0.5, 3.0)  # by cut and pocket the two kinds are one cell
    held_out = [[_shot(0, 11.0, False, {3.0}, travel=0.2)], [_shot(0, 13.0, False, {8.0}, travel=2.3)],
                [_shot(0, 5.0, False, set(), tangent=True), _shot(1, 30.0, False, {5.0})],
                [_shot(0, 70.0, False, {3.0}, tangent=True)]]  # no fitted cell: only the tangent line slows it
    got = {name: sum(v) for name, v in bench.score(held_out, tables, 3).items()}
    assert got["first open shot, fitted speed by cut and travel"] == 2
    assert got["first open shot, fitted speed by cut and pocket"] == 1
    assert got["first open shot whose tangent line misses the pockets, 5 m/s"] == 1  # board 3's second shot
    assert got["first open shot, 3 m/s where its tangent line meets a pocket"] == 1  # the last board
    assert got[bench.MODEL_RULE] == 0


def test_bad_sizes_exit_2_before_any_simulation(capsys):
    assert bench.main(["--n", "0"]) == 2
    assert "--n must be >= 1" in capsys.readouterr().err
    assert bench.main(["--train_n", "-1"]) == 2 and bench.main(["--workers", "-1"]) == 2


def test_the_cue_path_rules_read_where_the_cue_ball_runs():
    everywhere = set(bench.SPEED_GRID)
    held_out = [[_shot(0, 20.0, False, {4.0}, into_pocket={5.0, 6.0}), _shot(1, 30.0, False, {5.0})],
                [_shot(0, 20.0, False, {5.0}, into_pocket=everywhere), _shot(1, 30.0, False, set())]]
    got = {name: v for name, v in bench.score(held_out, bench.fits([]), 3).items()}
    # board 1: 4 m/s is the nearest speed whose path misses, and the second shot's path misses at 5
    assert got["first open shot, speed nearest 5 whose cue path misses pockets"] == [True, True]
    assert got["first open shot whose cue path misses the pockets, 5 m/s"] == [True, False]
    assert got[bench.MODEL_RULE] == [False, True]  # every path pockets on board 2: the first shot, at 5


def test_the_simulated_scratch_bit_picks_the_nearest_speed_where_the_cue_ball_stays_up():
    held_out = [[_shot(0, 20.0, False, {4.0}, scratch_at={5.0, 6.0})],  # 4 and 6 are as near: the slower first
                [_shot(0, 20.0, False, {6.0}, scratch_at={4.0, 5.0})],
                [_shot(0, 20.0, False, {5.0}, scratch_at=set(bench.SPEED_GRID))]]  # falls in at every speed: 5
    got = bench.score(held_out, bench.fits([]), 3)
    assert got["simulated: speed nearest 5 at which the cue ball stays up"] == [True, True, True]
    assert got[bench.MODEL_RULE] == [False, False, True]
