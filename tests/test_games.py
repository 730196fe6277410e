"""Games played shot by shot (issue 65): DeepPHY's nine-ball rules, the run-out's, the baselines that play them,
determinism across processes, and `poolbench baseline --game`. Real pooltool, no mocks; a nine-ball shot costs
tens of milliseconds, so the episodes here are few and short."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace

import numpy as np
import pytest

from poolbench_data.core.records import Scenario, Shot
from poolbench_data.games import nineball
from poolbench_data.games.nineball import DISCRETE, RACK_SEED, rack, respot, strike
from poolbench_data.games.play import _task, play_episode, run_episodes
from poolbench_data.games.players import Mock, make_player
from poolbench_data.games.records import Strike
from poolbench_data.games.runout import Runout
from poolbench_data.games.search import simulations_run
from poolbench_data.games.step import start_game, step
from poolbench_data.protocol.parsing import parse_action
from poolbench_data.protocol.strikespot import parse_strike

RUNOUT = Runout()


def _angle(a, b) -> float:
    return math.degrees(math.atan2(b[1] - a[1], b[0] - a[0])) % 360.0


def _runout(positions: dict, seed: int = 1):
    return RUNOUT.from_scenario(Scenario.create("t-runout", "open", seed, positions))


# --- nine-ball: DeepPHY's rules -------------------------------------------------------------------------------

def test_the_break_is_pooltools_rack_on_its_default_table_aimed_at_the_one():
    import pooltool as pt

    state = start_game("nineball", 0)
    assert state.attempts == 0 and not state.done and state.start_seed == RACK_SEED
    assert [b.id for b in state.balls] == ["cue", *map(str, range(1, 10))]
    assert state.balls == start_game("nineball", 7).balls, "the exact setup: one rack for every episode"
    t = pt.Table.default()
    apex = min(state.balls[1:], key=lambda b: b.y)
    assert apex.id == "1" and state.balls[0].y < t.l / 4  # the cue ball where the rack puts it, behind the head string
    after, outcome = step(state, strike("High", "Middle Spin"))
    assert outcome.attempt == 1 and outcome.shot.target_ball == "1" and outcome.shot.V0 == 8.0
    assert outcome.result.first_contact == "1" and after.attempts == 1
    assert start_game("nineball-seeded", 0).balls != start_game("nineball-seeded", 1).balls


def test_drawing_a_rack_leaves_the_global_generators_as_they_were():
    random.seed(123)
    np.random.seed(123)
    expected = (random.random(), np.random.rand())
    random.seed(123)
    np.random.seed(123)
    first = rack.__wrapped__(5)
    assert (random.random(), np.random.rand()) == expected
    assert rack.__wrapped__(5) == first


def test_a_pocketed_cue_ball_is_put_back_at_half_width_quarter_length():
    t = nineball.table()
    after, outcome = step(start_game("nineball", 0), strike("Low", "Top Left Spin"))  # scratches on this rack
    assert outcome.scratch and outcome.respotted and "scratch" in outcome.foul_reasons
    assert not after.done and after.attempts == 1, "a scratch costs only the attempt"
    cue = after.balls[0]
    assert cue.id == "cue" and (cue.x, cue.y) == (t.w / 2, t.l / 4)
    # a ball on the spot: the cue ball goes to the nearest free point on the long centre line
    taken = (replace(cue, id="5"),)
    moved = respot(taken)
    assert moved.x == t.w / 2 and moved.y < t.l / 4 and math.dist((moved.x, moved.y), (cue.x, cue.y)) >= 0.05715


def test_the_aim_is_the_lowest_numbered_ball_on_the_table():
    state = start_game("nineball", 0)
    state = replace(state, balls=tuple(b for b in state.balls if b.id not in ("1", "2")))
    after, outcome = step(state, Strike(3.0, 0.1, -0.2))  # a continuous action: speed and spin, no aim
    cue, three = state.balls[0], state.ball("3")
    assert outcome.shot.target_ball == "3"
    assert outcome.shot.phi == pytest.approx(_angle((cue.x, cue.y), (three.x, three.y)), abs=1e-9)
    assert (outcome.shot.a, outcome.shot.b) == (0.1, -0.2)


def test_the_nine_on_the_break_is_a_success():
    state = start_game("nineball-seeded", 2)  # a rack whose break can pot the 9
    after, outcome = step(state, strike("High", "Middle Right Spin"))
    assert "9" in outcome.potted and after.success and after.done
    assert after.end == outcome.end == "nine-potted" and after.attempts == 1
    assert step(after, strike("Low", "Top Spin")) == (after, None), "an action after the end is ignored"


def test_a_wasted_attempt_counts_and_out_of_range_spin_is_not_fired():
    state = start_game("nineball", 0)
    after, outcome = step(state, None, parse_status="no-json", parse_message="no action line")
    assert not outcome.fired and outcome.parse_status == "no-json" and after.attempts == 1 and not after.done
    assert after.balls == state.balls
    after, outcome = step(state, Strike(5.0, 0.9, 0.0))
    assert not outcome.fired and outcome.parse_status == "out-of-range"


def test_the_episode_ends_at_the_cap():
    episode = play_episode("nineball", "mock", 3, max_attempts=2)
    assert episode.attempts <= 2 and episode.final.done
    assert episode.success or episode.final.end == "attempts"


# --- run-out: a PoolBench eight-ball visit --------------------------------------------------------------------

def test_the_eight_early_is_a_loss_and_after_the_group_a_win():
    cue, eight = (0.45, 0.45), (0.2, 0.2)
    state = _runout({"cue": cue, "8": eight, "1": (0.8, 1.8), "12": (0.3, 1.5)})
    after, outcome = step(state, Shot(_angle(cue, eight), 3.0, 0.0, 0.0))
    assert "8" in outcome.potted and after.end == "eight-early" and after.done and not after.success
    assert not outcome.clean
    cleared = replace(state, balls=tuple(b for b in state.balls if b.id != "1"))
    assert RUNOUT.on_eight(cleared)
    after, outcome = step(cleared, Shot(_angle(cue, eight), 3.0, 0.0, 0.0, target_ball="8"))
    assert outcome.potted == ("8",) and outcome.clean and after.success and after.end == "won"
    assert outcome.result.first_contact == "8" and "ball-pocket-8-lb" in outcome.event_text


def test_a_visit_goes_on_after_a_clean_pot_and_ends_on_a_miss():
    cue, one, two = (0.45, 0.45), (0.2, 0.2), (0.5, 1.6)
    state = _runout({"cue": cue, "1": one, "2": two, "8": (0.9, 1.0), "12": (0.2, 1.8)}, seed=2)
    after, outcome = step(state, Shot(_angle(cue, one), 3.0, 0.0, 0.0, target_ball="1"))
    assert outcome.clean and outcome.potted == ("1",) and not after.done
    assert "1" not in after.object_ids and after.ball("2") == state.ball("2")  # the rest where they stood
    c = after.balls[0]
    assert (c.x, c.y) == tuple(outcome.result.final_positions[0][1:])  # the cue ball where the simulator left it
    last, outcome = step(after, Shot(_angle((c.x, c.y), two), 2.0, target_ball="2"))
    assert outcome.result.first_contact == "2" and not outcome.potted
    assert last.done and last.end == "miss" and last.attempts == 2 and not last.success


def test_the_protocols_json_action_takes_optional_spin():
    board = Scenario.create("t", "open", 1, {"cue": (0.5, 0.5), "1": (0.5, 1.5), "8": (0.2, 1.0)})
    text = '{"target_ball": "1", "target_pocket": "lt", "aim_angle_deg": 90, "cue_speed": 6, "a": 0.2, "b": -0.3}'
    shot = parse_action(text, board, spin=True).shot
    assert (shot.a, shot.b) == (0.2, -0.3)
    assert parse_action(text, board).shot.b == 0.25, "without spin the fields are ignored extras"
    assert parse_action(text.replace("-0.3", "-0.8"), board, spin=True).status == "out-of-range"


# --- DeepPHY's answer line ------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, status, action", [
    ("Speed: Medium, Strikespot: Bottom Spin", "ok", ("Medium", "Bottom Spin")),
    (" `Speed: [High], Strikespot: [Top Left Spin].`", "ok", ("High", "Top Left Spin")),
    ("Aim low. Speed: Low, Strikespot: middle spin. So: Speed: Low, Strikespot: Middle Spin.", "ok",
     ("Low", "Middle Spin")),
    ("Speed: High, Strikespot: Top Spin\nSpeed: Low, Strikespot: Top Spin", "multiple-json", None),
    ("Speed: Very High, Strikespot: Top Spin", "out-of-range", None),
    ("Speed: High", "missing-field", None),
    ("I would hit it hard.", "no-json", None),
    ("", "empty", None),
])
def test_deepphys_line_format(text, status, action):
    parsed = parse_strike(text)
    assert parsed.status == status
    if action:
        assert (parsed.speed, parsed.spot) == action and strike(*action) in DISCRETE


# --- baselines ------------------------------------------------------------------------------------------------

def test_mock_never_repeats_an_action_within_an_episode():
    assert len(set(DISCRETE)) == 27
    episode = play_episode("nineball", "mock", 0)
    actions = episode.final.actions
    assert len(actions) == episode.attempts and len(set(actions)) == len(actions)
    state = replace(start_game("nineball", 0), actions=DISCRETE[:26], attempts=26)
    assert Mock().decide(state).action == DISCRETE[26], "the one action not yet tried"


def test_a_searching_player_plays_the_shot_it_simulated():
    state = _runout({"cue": (0.5, 0.6), "1": (0.3, 1.2), "2": (0.75, 1.7), "8": (0.9, 0.4), "13": (0.15, 0.4)})
    moves = {}
    for name in ("position-oracle", "oracle"):
        moves[name] = move = make_player("runout", name).decide(state)
        assert move.result is not None and move.how.startswith(("pot", "position")), (name, move.how)
        before = simulations_run()
        after, outcome = step(state, move.action, result=move.result)
        assert simulations_run() == before and outcome.clean, name
    assert moves["position-oracle"].sims > moves["oracle"].sims == 0, "the Oracle's shots were the grid's already"
    again = make_player("runout", "position-oracle").decide(state)
    assert again.sims == 0 and again == replace(moves["position-oracle"], sims=0), "no candidate is run twice"


# --- determinism and the command line -------------------------------------------------------------------------

def test_an_episode_is_the_same_in_a_process_pool_as_in_this_process():
    from poolbench_data.players.pool import imap_bounded

    tasks = [("nineball", "mock", k, 0, 3) for k in range(2)] + [("runout", "oracle", k, 0, 15) for k in (0, 4)]
    here = [_task(t).digest() for t in tasks]
    pooled = [e.digest() for e in imap_bounded(_task, iter(tasks), 2)]
    assert here == pooled and len(set(here)) == len(here)
    assert [e.digest() for e in run_episodes("nineball", ["mock"], 2, max_attempts=3)] == here[:2]


def test_the_command_prints_table_16_and_refuses_bad_flags(tmp_path, capsys):
    from poolbench_data.cli import main

    out = tmp_path / "g.json"
    assert main(["baseline", "--game", "nineball", "--n", "2", "--attempts", "3", "--players", "mock",
                 "--workers", "1", "--quiet", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Att. 1" in text and "Att. 3" in text and "Avg. Att." in text and "mock (n=2)" in text
    assert "DeepPHY MOCK (published) (n=300)" in text and "2.33" in text and "10.00" in text and out.is_file()
    runout = tmp_path / "r.json"
    assert main(["baseline", "--game", "runout", "--n", "2", "--players", "heuristic,random", "--workers", "1",
                 "--quiet", "--out", str(runout)]) == 0
    text = capsys.readouterr().out
    assert "Balls per visit" in text and "Paired on the same starts" in text and "heuristic vs random" in text
    results = json.loads(runout.read_text())
    balls = {(e["player"], e["episode"]): e["balls"] for e in results["episodes"]}
    (pair,) = results["paired"]  # the first player listed against each of the others
    diffs = [balls["heuristic", k] - balls["random", k] for k in range(2)]
    assert (pair["a"], pair["b"], pair["n"]) == ("heuristic", "random", 2)
    assert (pair["balls"]["a_more"], pair["balls"]["b_more"]) == (sum(d > 0 for d in diffs), sum(d < 0 for d in diffs))
    for argv, flag in [(["--game", "chess"], "--game"), (["--game", "nineball", "--attempts", "0"], "--attempts"),
                       (["--game", "runout", "--players", "mock"], "--players")]:
        try:
            code = main(["baseline", *argv, "--out", str(tmp_path / "never.json")])
        except SystemExit as e:  # argparse refuses a choice that is not one
            code = e.code
        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1 and flag in err and "Traceback" not in err, (argv, err)
    assert not (tmp_path / "never.json").exists()
