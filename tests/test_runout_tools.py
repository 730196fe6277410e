"""The run-out with the ghost_ball tool: the cue ball's departure lines a report shows (`lines`), and the tool
configs (`sft_runout_tools`, `pairs_position_tools`) built on a real folder, read back with `datasets` and replayed
through the game evaluator's own tool loop."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from datasets import load_dataset

from poolbench_data.boards.generate import generate
from poolbench_data.boards.splits import eval_id_prefix
from poolbench_data.checks.demos import check_sft_rows
from poolbench_data.checks.pairs import check_pairs
from poolbench_data.core.candidates import candidates
from poolbench_data.core.cue_paths import departure_lines, shot_points
from poolbench_data.core.records import PLAYER_GROUP, BallPos, Shot
from poolbench_data.demos.runout import ACTION, start_of
from poolbench_data.games.step import rules_of, step
from poolbench_data.hub.build import build_benchmark
from poolbench_data.hub.features import features
from poolbench_data.hub.folder import read_provenance, read_rows
from poolbench_data.llm.backend import GenerationResult
from poolbench_data.llm.game_player import GameSettings, play_games, seats_of
from poolbench_data.llm.observation import read_answer
from poolbench_data.llm.tools import (LINES_NOTE, LINES_VERSION, TOOL_NOTE, ball_report, call_of, result_tokens,
                                      tool_calls, turn_result)

sys.path.insert(0, str(Path(__file__).parents[1] / "builders"))
import build_pairs  # noqa: E402
import build_sft  # noqa: E402

sys.path.pop(0)

CONFIGS = ("sft_runout_tools", "pairs_position_tools")


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


# --- the tool configs on a real folder --------------------------------------------------------------------------

FOLDER = dict(eval_n=1, train_n=2, train_seed=1, players=("oracle",), progress=False)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runout-tools") / "runout-tools"
    build_benchmark(root, **FOLDER)
    assert build_sft.main(["--dataset_dir", str(root), "--game", "runout", "--runout_n", "2", "--tools",
                           "--tool_lines", "--workers", "1"]) == 0
    assert build_pairs.main(["--dataset_dir", str(root), "--position", "--position_n", "2", "--position_tools",
                             "--tool_lines", "--position_options", "3", "--workers", "1"]) == 0
    return root


@pytest.fixture(scope="module")
def rows(folder) -> dict[str, list[dict]]:
    return {c: load_dataset(str(folder), c, split="train").to_list() for c in CONFIGS}


def _state(row: dict, boards: dict):
    start = start_of(boards[row["scenario_id"]])
    return replace(start, balls=tuple(BallPos(b["id"], b["x"], b["y"]) for b in row["balls"]),
                   attempts=row["turn"] - 1)


def test_the_tool_configs_load_as_training_sets_with_their_provenance(folder, rows):
    demos, pairs = rows["sft_runout_tools"], rows["pairs_position_tools"]
    for config in CONFIGS:
        assert load_dataset(str(folder), config, split="train").features == features(config)
    assert len(demos) >= 4 and pairs
    check_sft_rows(demos, eval_id_prefix(folder))
    check_pairs(pairs, eval_id_prefix(folder))
    assert {r["tool_version"] for r in demos + pairs} == {LINES_VERSION}
    assert {r["scenario_id"][:4] for r in demos + pairs} == {"pb1-"}
    built = read_provenance(folder)
    assert built["sft_runout_tools"]["settings"] == {"split": "train", "game": "runout", "runout_n": 2,
                                                     "tool_lines": True}
    assert built["pairs_position_tools"]["settings"]["tool_lines"] is True
    card = (folder / "README.md").read_text()
    assert "config_name: sft_runout_tools" in card and "### `sft_runout_tools` and `pairs_position_tools`" in card


def test_every_demonstration_is_a_tool_turn_the_evaluator_plays_the_same(folder, rows):
    """The demonstrations' calls and answers, given to the game evaluator's own tool loop (`poolbench eval --game
    runout --tools --tool_lines`): it sends each demonstration's conversation (prompt, call, the tool's report)
    word for word and every answer pots cleanly."""
    demos = rows["sft_runout_tools"]
    boards = {r["id"]: r for r in read_rows(folder, "scenarios", "train")}
    ids = sorted({r["scenario_id"] for r in demos})
    by = {(ids.index(r["scenario_id"]), r["turn"]): r["messages"] for r in demos}
    plain = [[{"role": m["role"], "content": m["content"]} for m in r["messages"]] for r in demos]
    assert all(m[0]["content"].endswith(TOOL_NOTE + LINES_NOTE) for m in plain)
    assert all([m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "assistant"] for msgs in plain)
    assert all(not m["context"] for r in demos for m in r["messages"])

    of_observation = {msgs[1]["content"]: msgs for msgs in by.values()}

    class Scripted:
        """Answers as the demonstrations did: the call after the observation, the answer after the report."""

        def generate(self, convs, n=1, **kw):
            return GenerationResult([[of_observation[conv[1]["content"]][2 if conv[-1]["role"] == "user" else 4]
                                      ["content"]] for conv in convs])

    settings = GameSettings(model="scripted", backend="scripted", game="runout", action=ACTION, tools=True,
                            tool_lines=True)
    starts = [start_of(boards[i]) for i in ids]
    threads = []
    seats = play_games(seats_of(starts, settings), Scripted(), settings, player="scripted",
                       on_turn=threads.append)
    for k, seat in enumerate(seats):
        mine = sorted((r for r in demos if r["scenario_id"] == ids[k]), key=lambda r: r["turn"])
        assert [s.last.clean for s in seat.states[1:len(mine) + 1]] == [True] * len(mine)
        assert seat.prompts[:len(mine)] == [[{"role": m["role"], "content": m["content"]} for m in r["messages"][:2]]
                                            for r in mine]
    for row in (t for t in threads if (t["episode"], t["turn"]) in by):
        msgs = by[row["episode"], row["turn"]]
        assert row["tool_calls"] == [{"arguments": tool_calls(msgs[2]["content"])[0]["arguments"],
                                      "result": json.loads(msgs[3]["content"])}]
        assert row["raw_response"] == msgs[4]["content"]


def test_a_tool_pair_sets_two_answers_at_the_called_ball_after_its_report(folder, rows):
    boards = {r["id"]: r for r in read_rows(folder, "scenarios", "train")}
    for r in rows["pairs_position_tools"]:
        assert [m["role"] for m in r["prompt"]] == ["system", "user", "assistant", "tool"]
        ball = tool_calls(r["prompt"][2]["content"])[0]["arguments"]["target_ball"]
        state = _state(r, boards)
        report = json.loads(r["prompt"][3]["content"])
        assert report == turn_result(rules_of("runout").scenario(state), call_of(ball), 2,
                                     lines=True)
        aims = {x["pocket"]: x["potting_point_aim_angle_deg"] for x in report["shots"] if x["open"]}
        assert r["chosen_continuation"] > r["rejected_continuation"] and r["chosen_cue"] != r["rejected_cue"]
        for side in ("chosen", "rejected"):
            shot, status, _ = read_answer(state, r[side][0]["content"], ACTION)
            after = step(state, shot)[0]
            assert status == "ok" and shot == Shot.from_row(r[f"{side}_action"]) and after.last.clean
            assert shot.target_ball == ball and round(shot.phi, 2) == aims[shot.target_pocket]
