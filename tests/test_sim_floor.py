"""The simulation floor (core.simcache) changes simulation counts, never answers."""

from __future__ import annotations

import importlib.util
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from poolbench_data.core.physics import simulate
from poolbench_data.core.records import PLAYER_GROUP, Shot, group_of
from poolbench_data.core.simcache import BoardSims, sure_wrong_first_contact
from poolbench_data.players import DEFAULT_BASELINES
from poolbench_data.players.baselines import oracle
from poolbench_data.players.play import play_scenario

FIXTURES = Path(__file__).with_name("fixtures")


def _digests_module():
    spec = importlib.util.spec_from_file_location("make_floor_digests", FIXTURES / "make_floor_digests.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_geometry_never_calls_a_shot_hopeless_that_pooltool_plays_legally(benchmark_scenarios):
    # The claim the floor rests on, checked against the simulator: every shot
    # called a sure wrong-first-contact really touches a non-own ball first.
    rng = np.random.default_rng(7)
    called = 0
    for s in benchmark_scenarios:
        target = s.nearest_own()
        aim = math.degrees(math.atan2(target.y - s.cue.y, target.x - s.cue.x))
        for phi in np.concatenate([aim + rng.normal(0, 4, 4), rng.uniform(0, 360, 2)]):
            shot = Shot(float(phi % 360), float(rng.uniform(2, 12)))
            if sure_wrong_first_contact(s, shot):
                called += 1
                first = simulate(s, shot).first_contact
                assert first is not None and group_of(first) != PLAYER_GROUP, (s.id, shot, first)
    assert called >= 20  # the check was exercised, not vacuous


def test_grazing_spinning_and_rail_paths_are_left_to_the_simulator(board):
    s = board({"cue": (0.5, 0.5), "1": (0.5, 1.8), "9": (0.5, 1.0)})
    straight = Shot(90.0, 8.0)
    assert sure_wrong_first_contact(s, straight)  # the 9 sits on the line to the 1
    assert not sure_wrong_first_contact(s, Shot(90.0, 8.0, a=0.2))  # side spin: not proven straight
    assert not sure_wrong_first_contact(s, Shot(90.0, 8.0, theta=10.0))
    D = 2 * 0.028575
    graze = math.degrees(math.atan2(D, 0.5))  # the path just touches the 9
    assert not sure_wrong_first_contact(s, Shot(90.0 - graze, 8.0))
    assert not sure_wrong_first_contact(s, Shot(90.0 - 2 * graze, 8.0))  # misses the 9 altogether
    own_first = board({"cue": (0.5, 0.5), "1": (0.5, 1.0), "9": (0.5, 1.8)})
    assert not sure_wrong_first_contact(own_first, straight)
    along_rail = board({"cue": (0.03, 0.5), "1": (0.5, 0.2), "9": (0.03, 1.5)})
    assert not sure_wrong_first_contact(along_rail, straight)  # the path runs within a hair of the cushion
    assert sure_wrong_first_contact(board({"cue": (0.1, 0.5), "1": (0.5, 0.2), "9": (0.1, 1.5)}), straight)


@pytest.mark.slow
def test_the_oracle_decides_the_same_with_fewer_simulations(benchmark_scenarios):
    indirect = [s for s in benchmark_scenarios if s.category == "indirect"]
    assert indirect
    for s in indirect[:3]:
        plain = oracle(s, sims=BoardSims(s, floor=False))
        floored = BoardSims(s)
        fast = oracle(s, sims=floored)
        assert (fast.shot, fast.how) == (plain.shot, plain.how)
        assert fast.sims < plain.sims and floored.skipped > 0


def test_a_board_counts_what_it_ran_and_what_it_saved(benchmark_scenarios):
    s = benchmark_scenarios[0]
    before, after = play_scenario(s, DEFAULT_BASELINES, floor=False), play_scenario(s, DEFAULT_BASELINES)
    assert [replace(r, sims=0) for r in before.records] == [replace(r, sims=0) for r in after.records]
    assert before.pottability.how == after.pottability.how
    assert before.sims_saved == 0 and after.sims_saved > 0
    assert after.sims_run + after.sims_saved >= before.sims_run > after.sims_run


@pytest.mark.slow
def test_a_200_board_build_has_the_recorded_rows_but_the_simulation_counts(tmp_path):
    # floor_digests.json holds the digests of the build with every shot simulated (see its script).
    make = _digests_module()
    golden = json.loads((FIXTURES / "floor_digests.json").read_text())
    assert (golden["n"], golden["seed"]) == (make.N, make.SEED)
    digests = make.row_digests(make.build(tmp_path / "ds"))
    for config, rows in golden["digests"].items():
        changed = [i for i, (a, b) in enumerate(zip(rows, digests[config])) if a != b]
        assert len(digests[config]) == len(rows) and not changed, f"{config}: rows {changed[:10]} differ"
