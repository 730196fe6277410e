"""The `episodes` config (issue 65 item 6): a build's baseline episodes load with only `datasets`, equal the
episodes games.play plays, are the same bytes across builds, workers and shards, leave the other configs as they
were, and a model's episodes (the evaluator's episodes.jsonl rows) become rows of the same shape. Real pooltool and
datasets; episodes of at most 3 attempts, so each build costs seconds."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SMALL_DATASET

from poolbench_data.games.play import play_episode
from poolbench_data.hub.build import build_benchmark
from poolbench_data.hub.episodes import EpisodePlan, episode_record, model_episode_rows, record_digest
from poolbench_data.hub.features import features
from poolbench_data.hub.folder import read_rows
from poolbench_data.hub.shards import merge_shards

REPO = Path(__file__).resolve().parents[1]
PLAN = EpisodePlan(("runout", "nineball-seeded"), (("oracle",), ("mock",)), n=2, attempts=3)
SEEDS = {"test": 0, "train": SMALL_DATASET["train_seed"]}


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _played(row: dict):
    return play_episode(row["game"], row["player"], row["index"], row["base_seed"], PLAN.attempts)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("episodes") / "poolbench"
    build_benchmark(root, workers=2, episodes=PLAN, **SMALL_DATASET)
    return root


def test_the_episodes_load_with_only_datasets_and_are_the_episodes_games_play_plays(built, tmp_path):
    code = ("import json, sys; from datasets import load_dataset\n"
            "out = {s: load_dataset('poolbench', 'episodes', split=s) for s in ('test', 'train')}\n"
            "assert 'poolbench_data' not in sys.modules\n"
            "print(json.dumps({'features': out['test'].features.to_dict(),"
            " 'rows': {s: d.to_list() for s, d in out.items()}}))")
    env = {**os.environ, "HF_DATASETS_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    got = json.loads(subprocess.run([sys.executable, "-c", code], cwd=built.parent, env=env, capture_output=True,
                                    text=True, check=True).stdout.strip().splitlines()[-1])
    assert got["features"] == features("episodes").to_dict()
    for split, seed in SEEDS.items():
        rows = got["rows"][split]
        assert [(r["id"], r["player"]) for r in rows] == [
            (f"{g}-pb{seed}-{k:06d}", p) for g, p, k in PLAN.keys(0, 2)]
        assert all(r["base_seed"] == seed and r["player_kind"] == "baseline" and r["model"] == "" for r in rows)
        for row in rows:
            episode = _played(row)
            assert record_digest(episode_record(row)) == episode.digest(), row["id"]
            assert row["balls"] == episode.balls and row["attempts"] == episode.attempts <= PLAN.attempts
            assert all(t["prompt"] == [] and t["answer"] == "" for t in row["turns"])
    runout = got["rows"]["test"][0]
    assert runout["start"]["start"] == "pb0-000000", "a test run-out starts from the benchmark's board"
    assert runout["turns"][0]["action"]["kind"] == "shot" and runout["turns"][0]["events"]
    card = (built / "README.md").read_text()
    assert "config_name: episodes" in card and "| `episodes` | `test` | 4 |" in card
    assert json.loads((built / "provenance.json").read_text())["benchmark"]["settings"]["episodes"] == PLAN.settings()


def test_the_same_bytes_on_one_worker_and_the_other_configs_as_without_episodes(built, small_dataset, tmp_path):
    again = tmp_path / "poolbench"
    build_benchmark(again, workers=1, episodes=PLAN, **SMALL_DATASET)
    assert _files(again) == _files(built)
    data = {f: b for f, b in _files(built).items() if f.startswith("data/") and "/episodes/" not in f}
    assert data == {f: b for f, b in _files(small_dataset).items() if f.startswith("data/")}


def test_shards_merge_into_the_one_piece_build_and_a_missing_episode_is_refused(built, tmp_path):
    parts = tmp_path / "parts"
    for i in range(2):
        build_benchmark(parts / f"s{i}", shard=(i, 2), workers=1, episodes=PLAN, **SMALL_DATASET)
    merge_shards([parts / "s0", parts / "s1"], tmp_path / "merged")
    assert _files(tmp_path / "merged") == _files(built)
    import pyarrow.parquet as pq

    shard = parts / "s1" / "data" / "episodes" / "test-00000.parquet"
    pq.write_table(pq.read_table(shard).slice(1), shard)
    with pytest.raises(ValueError, match=r"s1 holds 1 episodes/test rows where its shard.json promises 2"):
        merge_shards([parts / "s0", parts / "s1"], tmp_path / "refused")
    assert not (tmp_path / "refused").exists()


def test_a_models_episodes_become_rows_of_the_same_shape(built, tmp_path):
    """The evaluator's episodes.jsonl rows: Episode.to_row() with the model, the episode k, the sample, and a
    prompt and an answer a turn; a failed request's episode is left out, a start from another seed refused."""
    from datasets import load_dataset

    from poolbench_data.hub.update import replace_rows

    def record(game, k, seed, **extra):
        episode = play_episode(game, "heuristic" if game == "runout" else "mock", k, seed, 2)
        n = len(episode.outcomes)
        return {**episode.to_row(), "player": "m", "player_kind": "llm", "model": "org/m", "episode": k,
                "sample": 1, "answers": [f"answer {i}" for i in range(n)],
                "prompts": [[{"role": "user", "content": f"table {i}"}] for i in range(n)], **extra}

    records = [record("runout", 1, 0), record("nineball-seeded", 0, SEEDS["train"]),
               record("runout", 0, 0, request_failed=True)]
    split_rows = model_episode_rows(records, SEEDS)
    assert [len(split_rows[s]) for s in ("test", "train")] == [1, 1]
    folder = Path(shutil.copytree(built, tmp_path / "poolbench"))
    for split, rows in split_rows.items():
        replace_rows(folder, "episodes", split, rows, drop=lambda r: r["player_kind"] == "llm")
    loaded = load_dataset(str(folder), "episodes", split="test")
    assert [r["player_kind"] for r in loaded] == ["baseline"] * 4 + ["llm"]
    row = loaded[-1]
    assert row["id"] == "runout-pb0-000001" and row["model"] == "org/m" and row["sample"] == 1
    assert [t["answer"] for t in row["turns"]][:1] == ["answer 0"] and row["turns"][0]["prompt"][0]["content"]
    want = {k: v for k, v in records[0].items() if k in episode_record(row)}
    assert episode_record(row) == want
    assert read_rows(folder, "episodes", "train")[-1]["game"] == "nineball-seeded"
    with pytest.raises(ValueError, match="--episodes: episode 3 of runout .* none of the folder's base seeds"):
        model_episode_rows([record("runout", 3, 9)], SEEDS)


def _builder():
    spec = importlib.util.spec_from_file_location("bd_episodes", REPO / "builders" / "build_dataset.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their annotations through it
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("flags, words", [
    (["--episodes_games", "chess"], "--episodes_games 'chess' is not a game; choose from nineball"),
    (["--episodes_games", "runout,runout"], "--episodes_games 'runout,runout' names a game twice"),
    (["--episodes_players", "runout:genius"], "--episodes_players: unknown player(s) ['genius'] for runout"),
    (["--episodes_games", "runout", "--episodes_players", "mock"], "--episodes_players 'mock' plays none of runout"),
    (["--episodes_players", "chess:mock"], "--episodes_players 'chess:mock': 'chess' is not one of --episodes_games"),
    (["--episodes_players", "runout:oracle"], "--episodes_players names no player for nineball-seeded"),
    (["--episodes_players", "mock,mock"], "--episodes_players: player(s) ['mock'] listed more than once"),
    (["--episodes_attempts", "0"], "--episodes_attempts 0 must be >= 1"),
    (["--episodes_n", "-1"], "--episodes_n -1 is negative"),
])
def test_bad_episode_flags_are_one_line_before_any_work(flags, words, tmp_path, capsys):
    out = tmp_path / "never"
    assert _builder().main(["--output_dir", str(out), "--eval_n", "1", "--train_n", "0", *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and words in err, err
    assert not out.exists()
