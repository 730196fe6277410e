"""The run-out training configs on a real folder: `builders/build_sft.py --game runout` (`sft_runout`, the position
Oracle's turns) and `builders/build_pairs.py --position` (`pairs_position`), and with the ghost_ball tool
(`sft_runout_tools`, `pairs_position_tools`), built from a small folder's two train boards, read back with
`datasets`, and each row checked against the evaluator (the messages it sends on that turn, its tool loop), the
answer parser and the simulator."""

from __future__ import annotations

import json
import math
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from datasets import load_dataset

from poolbench_data.boards.splits import eval_id_prefix
from poolbench_data.checks.demos import check_sft_rows
from poolbench_data.checks.pairs import check_pairs
from poolbench_data.core.records import BallPos, Shot
from poolbench_data.demos.runout import ACTION, start_of, written_visit
from poolbench_data.games.players import make_player
from poolbench_data.games.step import rules_of, start_game, step
from poolbench_data.hub.build import build_benchmark
from poolbench_data.hub.features import features
from poolbench_data.hub.folder import read_provenance, read_rows
from poolbench_data.llm.game_player import GameSettings, play_games, prompt_sha256, seats_of
from poolbench_data.llm.backend import GenerationResult
from poolbench_data.llm.observation import game_system_prompt, read_answer
from poolbench_data.llm.tools import LINES_NOTE, LINES_VERSION, TOOL_NOTE, call_of, tool_calls, turn_result

sys.path.insert(0, str(Path(__file__).parents[1] / "builders"))
import build_pairs  # noqa: E402
import build_sft  # noqa: E402

sys.path.pop(0)

# One evaluation board, two train boards (seed 1): both visits run several turns, so the pairs have turns to come from.
FOLDER = dict(eval_n=1, train_n=2, train_seed=1, players=("oracle",), progress=False)
SFT = ["--game", "runout", "--runout_n", "2"]
PAIRS = ["--position", "--position_n", "2", "--position_options", "2"]  # the default continuation, position-oracle
CONFIGS = ("sft_runout", "pairs_position")


def _build(folder: Path, workers: int) -> Path:
    assert build_sft.main(["--dataset_dir", str(folder), *SFT, "--workers", str(workers)]) == 0
    assert build_pairs.main(["--dataset_dir", str(folder), *PAIRS, "--workers", str(workers)]) == 0
    return folder


def _copy(folder: Path, where: Path, name: str) -> Path:
    # A name of its own: `datasets` caches a local folder by its name and files, not their bytes.
    return Path(shutil.copytree(folder, where / name))


@pytest.fixture(scope="module")
def bare(tmp_path_factory) -> Path:
    """The folder before either config. Read only."""
    root = tmp_path_factory.mktemp("runout") / "runout-bare"
    build_benchmark(root, **FOLDER)
    return root


@pytest.fixture(scope="module")
def folder(bare, tmp_path_factory) -> Path:
    """Both configs, built in this process (one worker). Read only."""
    return _build(_copy(bare, tmp_path_factory.mktemp("built"), "runout-one-worker"), workers=1)


@pytest.fixture(scope="module")
def rows(folder) -> dict[str, list[dict]]:
    return {c: load_dataset(str(folder), c, split="train").to_list() for c in CONFIGS}


@pytest.fixture(scope="module")
def boards(folder) -> dict[str, dict]:
    return {r["id"]: r for r in read_rows(folder, "scenarios", "train")}


def _state(row: dict, boards: dict):
    """The table a row's answer is played from: its board's run-out with the row's balls, at its turn."""
    start = start_of(boards[row["scenario_id"]])
    assert row["seed"] == start.seed
    return replace(start, balls=tuple(BallPos(b["id"], b["x"], b["y"]) for b in row["balls"]),
                   attempts=row["turn"] - 1)


def _played(state, text: str):
    """The evaluator's reading of an answer, stepped: (the shot, the table after it)."""
    shot, status, _ = read_answer(state, text, ACTION)
    assert status == "ok", text
    return shot, step(state, shot)[0]


def test_both_configs_load_from_the_folder_as_training_sets(folder, rows):
    for config in CONFIGS:  # the card's YAML declares the features `datasets` applies
        assert load_dataset(str(folder), config, split="train").features == features(config)
    demos, pairs = rows["sft_runout"], rows["pairs_position"]
    assert len(demos) >= 6 and len(pairs) >= 2
    assert [(r["scenario_id"], r["turn"]) for r in demos] == sorted((r["scenario_id"], r["turn"]) for r in demos)
    # the checks training/sft.py and training/dpo.py run: no evaluation board, the TRL formats, no chosen == rejected
    check_sft_rows(demos, eval_id_prefix(folder))
    check_pairs(pairs, eval_id_prefix(folder))
    assert {r["scenario_id"][:4] for r in demos + pairs} == {"pb1-"}  # the train seed's boards only
    assert {r["split"] for r in demos + pairs} == {"train"}
    assert {r["player"] for r in demos} == {"position-oracle"}
    assert {r["continuation_player"] for r in pairs} == {"position-oracle"}
    assert all(r["completion"][0]["role"] == "assistant" and len(r["completion"]) == 1 for r in demos)
    built = read_provenance(folder)
    assert built["sft_runout"]["settings"] == {"split": "train", "game": "runout", "runout_n": 2}
    assert built["pairs_position"]["settings"] == {"split": "train", "position_n": 2,
                                                  "continuation": "position-oracle", "options": 2}
    card = (folder / "README.md").read_text()
    assert "### `sft_runout`" in card and "### `pairs_position`" in card and "config_name: pairs_position" in card


def test_every_prompt_is_what_the_evaluator_sends_on_that_turn(rows, boards):
    """The demonstrations' answers replayed through the game evaluator's own loop (llm.game_player.play_games,
    `poolbench eval --game runout`'s defaults): it sends each demonstration's prompt on its turn, plays the same
    visit, and every pair's prompt is a message list it sent on the pair's turn."""
    demos, pairs = rows["sft_runout"], rows["pairs_position"]
    ids = sorted({r["scenario_id"] for r in demos + pairs})
    starts = [start_of(boards[i]) for i in ids]
    # the starts `poolbench eval --game runout --seed S` plays: board k of the split's base seed
    assert starts == [start_game("runout", boards[i]["index"], boards[i]["base_seed"]) for i in ids]
    settings = GameSettings(model="replay", backend="replay", game="runout", action=ACTION)
    replay = {(ids.index(r["scenario_id"]), 0, r["turn"]): r["completion"][0]["content"] for r in demos}
    sent = []
    seats = play_games(seats_of(starts, settings), None, settings, player="replay", replay=replay,
                       on_turn=sent.append)
    system = {"role": "system", "content": game_system_prompt("runout", ACTION)}
    assert all(r["prompt"][0] == system and r["prompt"][1]["role"] == "user" for r in demos + pairs)
    for k, seat in enumerate(seats):
        mine = [r for r in demos if r["scenario_id"] == ids[k]]
        assert seat.prompts[:len(mine)] == [r["prompt"] for r in mine]
        assert [s.last.clean for s in seat.states[1:len(mine) + 1]] == [True] * len(mine)
    by_turn = {(ids[t["episode"]], t["turn"]): t["prompt_sha256"] for t in sent}
    assert all(by_turn[r["scenario_id"], r["turn"]] == prompt_sha256(r["prompt"]) for r in pairs)


def test_every_answer_reads_back_to_the_shot_and_pots_cleanly(rows, boards):
    for r in rows["sft_runout"]:
        shot, after = _played(_state(r, boards), r["completion"][0]["content"])
        assert shot == Shot.from_row(r["action"]) and after.last.clean
        assert list(after.last.potted) == r["potted"] and after.success == r["won"]
    for r in rows["pairs_position"]:
        assert r["chosen_continuation"] > r["rejected_continuation"] >= 0 and r["options"] == 2
        for side in ("chosen", "rejected"):
            shot, after = _played(_state(r, boards), r[side][0]["content"])
            cue = after.balls[0]
            assert shot == Shot.from_row(r[f"{side}_action"]) and after.last.clean
            assert (cue.id, cue.x, cue.y) == ("cue", r[f"{side}_cue"]["x"], r[f"{side}_cue"]["y"])
        assert r["chosen_cue"] != r["rejected_cue"] and r["chosen"] != r["rejected"]


def test_a_continuation_is_the_position_oracles_visit_from_the_table_left(rows, boards):
    r = rows["pairs_position"][0]
    for side in ("chosen", "rejected"):
        _, after = _played(_state(r, boards), r[side][0]["content"])
        visit = written_visit(after, make_player("runout", "position-oracle"))
        assert sum(t.balls for t in visit) == r[f"{side}_continuation"]


def test_the_same_bytes_at_two_workers(bare, folder, tmp_path):
    again = _build(_copy(bare, tmp_path, "runout-two-workers"), workers=2)
    files = sorted(p.relative_to(folder) for p in folder.rglob("*") if p.is_file())
    assert {Path(f"data/{c}/train-00000.parquet") for c in CONFIGS} <= set(files)
    assert files == sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    assert all((folder / p).read_bytes() == (again / p).read_bytes() for p in files)


@pytest.fixture(scope="module")
def no_train(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("no-train") / "runout-no-train"
    build_benchmark(root, **{**FOLDER, "train_n": 0})
    return root


@pytest.mark.parametrize("builder, argv, flag", [
    ("pairs", ["--position"], "--split 'train': "),
    ("pairs", ["--position", "--position_n", "0"], "--position_n must be >= 1"),
    ("pairs", ["--position", "--position_n", "3"], "--position_n 3: "),
    ("pairs", ["--position", "--position_options", "1"], "--position_options must be >= 2"),
    ("pairs", ["--position", "--position_continuation", "greedy"], "--position_continuation 'greedy'"),
    ("pairs", ["--position_n", "1"], "--position_n is read only with --position"),
    ("pairs", ["--position", "--tool_eval_dir", "runs/samples"], "--position and --tool_eval_dir"),
    ("pairs", ["--position", "--split", "test"], "--split test"),
    ("pairs", ["--position", "--workers", "-1"], "--workers"),
    ("sft", ["--game", "runout"], "--split 'train': "),
    ("sft", ["--game", "nineball"], "--game 'nineball'"),
    ("sft", ["--game", "runout", "--runout_n", "0"], "--runout_n must be >= 1"),
    ("sft", ["--game", "runout", "--runout_n", "3"], "--runout_n 3: "),
    ("sft", ["--runout_n", "1"], "--runout_n is read only with --game"),
    ("sft", ["--game", "runout", "--tools", "--tool_demo_speeds", "5"], "--tool_demo_speeds: read only for"),
    ("sft", ["--game", "runout", "--tool_lines"], "--tool_lines is read only with --tools"),
    ("sft", ["--tools", "--tool_lines"], "--tool_lines is read only with --game runout --tools"),
    ("pairs", ["--position", "--tool_lines"], "--tool_lines is read only with --position_tools"),
    ("pairs", ["--position_tools"], "--position_tools is read only with --position"),
    ("sft", ["--game", "runout", "--split", "test"], "--split test"),
])
def test_a_mistake_is_one_line_naming_the_flag_before_any_work(builder, argv, flag, bare, no_train, capsys):
    """Exit 2 with one line; the folder is untouched. The first two rows of each builder run on a folder
    without train scenarios, the others on one with two (of which 3 are too many)."""
    root = no_train if argv in (["--position"], ["--game", "runout"]) else bare
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    main = build_pairs.main if builder == "pairs" else build_sft.main
    assert main(["--dataset_dir", str(root), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and flag in err, err
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before


@pytest.mark.parametrize("builder, switch, names", [
    (build_sft, "game", ["runout_n", "workers"]),
    (build_pairs, "position", ["position_continuation", "position_n", "position_options", "position_tools"]),
])
def test_every_flag_read_only_with_the_run_out_switch_says_so(builder, switch, names):
    import dataclasses

    fields = {f.name: f for f in dataclasses.fields(builder.ScriptArguments)}
    only = sorted(name for name, f in fields.items() if f.metadata.get("requires") == switch)
    assert only == names
    assert all(fields[n].metadata["help"].startswith(f"With --{switch}") for n in only)


# --- with the ghost_ball tool (sft_runout_tools, pairs_position_tools) -------------------------------------------

TOOL_CONFIGS = ("sft_runout_tools", "pairs_position_tools")


@pytest.fixture(scope="module")
def tool_folder(bare, tmp_path_factory) -> Path:
    """Both tool configs with the cue ball's lines in every report; the pairs judged by the greedy Oracle's
    continuation, the cheap one. Read only."""
    root = _copy(bare, tmp_path_factory.mktemp("tools"), "runout-tools")
    assert build_sft.main(["--dataset_dir", str(root), "--game", "runout", "--runout_n", "2", "--tools",
                           "--tool_lines", "--workers", "1"]) == 0
    assert build_pairs.main(["--dataset_dir", str(root), "--position", "--position_n", "1", "--position_tools",
                             "--tool_lines", "--position_options", "2", "--position_continuation", "oracle",
                             "--workers", "1"]) == 0
    return root


@pytest.fixture(scope="module")
def tool_rows(tool_folder) -> dict[str, list[dict]]:
    return {c: load_dataset(str(tool_folder), c, split="train").to_list() for c in TOOL_CONFIGS}


def test_the_tool_configs_load_as_training_sets_with_their_provenance(tool_folder, tool_rows):
    folder, rows = tool_folder, tool_rows
    demos, pairs = rows["sft_runout_tools"], rows["pairs_position_tools"]
    for config in TOOL_CONFIGS:
        assert load_dataset(str(folder), config, split="train").features == features(config)
    assert len(demos) >= 4 and pairs
    check_sft_rows(demos, eval_id_prefix(folder))
    check_pairs(pairs, eval_id_prefix(folder))
    assert {r["tool_version"] for r in demos + pairs} == {LINES_VERSION}
    assert {r["scenario_id"][:4] for r in demos + pairs} == {"pb1-"}
    built = read_provenance(folder)
    assert built["sft_runout_tools"]["settings"] == {"split": "train", "game": "runout", "runout_n": 2,
                                                     "tool_lines": True}
    assert built["pairs_position_tools"]["settings"] == {"split": "train", "position_n": 1, "continuation": "oracle",
                                                        "options": 2, "tool_lines": True}
    assert {r["continuation_player"] for r in pairs} == {"oracle"} and all(r["options"] <= 2 for r in pairs)
    card = (folder / "README.md").read_text()
    assert "config_name: sft_runout_tools" in card and "### `sft_runout_tools` and `pairs_position_tools`" in card


def test_every_demonstration_is_a_tool_turn_the_evaluator_plays_the_same(tool_rows, boards):
    """The demonstrations' calls and answers, given to the game evaluator's own tool loop (`poolbench eval --game
    runout --tools --tool_lines`): it sends each demonstration's conversation (prompt, call, the tool's report)
    word for word and every answer pots cleanly."""
    demos = tool_rows["sft_runout_tools"]
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


def test_a_tool_pair_sets_two_answers_at_the_called_ball_after_its_report(tool_rows, boards):
    for r in tool_rows["pairs_position_tools"]:
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
            visit = written_visit(after, make_player("runout", "oracle"))  # the greedy Oracle plays on from there
            assert sum(t.balls for t in visit) == r[f"{side}_continuation"]


# --- TRL ------------------------------------------------------------------------


def _dpo_trainer(tiny_model: Path, folder: Path, out: Path, **config):
    pytest.importorskip("trl")
    pytest.importorskip("peft")
    from peft import LoraConfig
    from transformers import AutoTokenizer
    from trl import DPOConfig, DPOTrainer

    ds = load_dataset(str(folder), "pairs_position", split="train")
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    trainer = DPOTrainer(model=str(tiny_model), train_dataset=ds, processing_class=tokenizer,
                         args=DPOConfig(output_dir=str(out), use_cpu=True, bf16=False, max_length=2048,
                                        report_to="none", **config),
                         peft_config=LoraConfig(r=4, target_modules="all-linear"))
    return trainer, ds, tokenizer


def test_dpotrainer_takes_the_pairs_unmapped(tiny_model, folder, tmp_path):
    trainer, ds, tokenizer = _dpo_trainer(tiny_model, folder, tmp_path)
    processed = trainer.train_dataset
    assert len(processed) == len(ds)  # nothing dropped, nothing renamed
    row, raw = processed[0], ds[0]
    assert tokenizer.decode(row["prompt_ids"]) == tokenizer.apply_chat_template(raw["prompt"], tokenize=False,
                                                                                add_generation_prompt=True)
    assert tokenizer.decode(row["chosen_ids"]).startswith(raw["chosen"][0]["content"] + "<|im_end|>")
    assert tokenizer.decode(row["rejected_ids"]).startswith(raw["rejected"][0]["content"] + "<|im_end|>")


@pytest.mark.slow
def test_one_dpo_step_on_the_pairs(tiny_model, folder, tmp_path):
    trainer, _, _ = _dpo_trainer(tiny_model, folder, tmp_path, max_steps=1, per_device_train_batch_size=2,
                                 save_strategy="no", disable_tqdm=True)
    result = trainer.train()
    assert result.global_step == 1 and math.isfinite(result.training_loss)
