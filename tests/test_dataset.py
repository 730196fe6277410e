"""The dataset folder: load_dataset, features, determinism, push plan, bad input."""

import filecmp
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from poolbench_data.hub import build as build_mod
from poolbench_data.hub.build import build_benchmark
from poolbench_data.hub.features import features
from poolbench_data.hub.folder import check_config, layout
from poolbench_data.hub.push import PushFailed, local_files, plan_operations, push

PLAYERS = ("oracle", "heuristic-centre", "random")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("ds") / "poolbench"
    counts = build_benchmark(root, eval_n=7, train_n=3, train_seed=5, players=PLAYERS, workers=2, progress=False,
                             shard_rows={"traces": 8})
    return root, counts


def test_folder_has_hub_layout(built):
    root, counts = built
    sims = counts.pop("simulations")
    assert counts == {"test": {"scenarios": 7, "traces": 21}, "train": {"scenarios": 3, "traces": 9}}
    assert sims["run"] > 0 and sims["saved"] > 0  # the floor reuses at least the Oracle's played shot
    assert sims["stopped"] == 0  # every played shot ran to rest
    lay = layout(root)
    assert set(lay) == {"scenarios", "traces"}
    assert len(lay["traces"]["test"]) == 3  # 21 rows in shards of 8: streamed, not one blob
    assert (root / "README.md").read_text().startswith("---\n")
    assert not list(root.parent.glob(".poolbench.*"))  # no staging leftovers


def test_load_dataset_by_name_from_parent_folder(built, monkeypatch):
    from datasets import load_dataset

    root, _ = built
    monkeypatch.chdir(root.parent)
    for config in ("scenarios", "traces"):
        ds = load_dataset("poolbench", config)
        assert set(ds) == {"test", "train"}
        assert ds["test"].features == features(config)
    sc = load_dataset("poolbench", "scenarios", split="test")
    assert [r["category"] for r in sc][:7] == ["open", "partial-block", "indirect", "crowded", "sparse",
                                              "foul-trap", "spin-shot"]
    row = sc[0]
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert "GHOST BALL" in row["prompt"][0]["content"] and row["prompt_version"]
    assert json.loads(row["oracle_action"])["target_ball"] == row["oracle_shot"]["target_ball"]
    tr = load_dataset("poolbench", "traces", split="test")
    oracle = [r for r in tr if r["player"] == "oracle"]
    assert all(r["target_matches_oracle"] and r["angle_error_deg"] == 0.0 for r in oracle)
    pots = [r for r in tr if r["pocketed"]]
    assert pots and all("ball-pocket-" in r["event_text"] for r in pots)
    assert all(r["events"][0]["type"] == "stick_ball" for r in tr)


def test_traces_replay_from_stored_scenario_and_shot(built, monkeypatch):
    """The simulator is the only source of truth: every row re-simulates."""
    from datasets import load_dataset

    from poolbench_data.core.physics import simulate
    from poolbench_data.core.records import Scenario, Shot

    root, _ = built
    monkeypatch.chdir(root.parent)
    boards = {r["id"]: Scenario.from_row(r) for r in load_dataset("poolbench", "scenarios", split="test")}
    for r in load_dataset("poolbench", "traces", split="test"):
        res = simulate(boards[r["scenario_id"]], Shot.from_row(r["action"]))
        assert [e.to_row() for e in res.events] == r["events"]


def test_unknown_config_lists_the_available_ones(built, monkeypatch):
    from datasets import load_dataset

    root, _ = built
    monkeypatch.chdir(root.parent)
    with pytest.raises(ValueError) as e:
        load_dataset("poolbench", "boards")
    assert "scenarios" in str(e.value) and "traces" in str(e.value)
    with pytest.raises(ValueError, match="available configs: scenarios, traces, pairs"):
        check_config("boards")


@pytest.mark.slow
def test_loads_in_an_environment_with_only_datasets(built, tmp_path):
    """A user without poolbench_data: a fresh venv with only `datasets`."""
    from importlib.metadata import version

    root, _ = built
    uv = Path(sys.executable).with_name("uv")
    venv = tmp_path / "only-datasets"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([str(uv), "venv", "-q", "--python", base, str(venv)], check=True)
    subprocess.run([str(uv), "pip", "install", "-q", "--python", str(venv / "bin" / "python"),
                    f"datasets=={version('datasets')}"], check=True)
    code = ("import json,importlib.util;from datasets import load_dataset;"
            "assert importlib.util.find_spec('poolbench_data') is None;"
            "print(json.dumps({c: load_dataset('poolbench', c, split='test').features.to_dict() "
            "for c in ('scenarios','traces')}))")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    out = subprocess.run([str(venv / "bin" / "python"), "-c", code], cwd=root.parent, env=env,
                         capture_output=True, text=True, check=True).stdout
    got = json.loads(out.strip().splitlines()[-1])
    assert got == {c: features(c).to_dict() for c in ("scenarios", "traces")}


@pytest.mark.slow
def test_second_build_is_byte_identical(built, tmp_path):
    root, _ = built
    again = tmp_path / "poolbench"
    build_benchmark(again, eval_n=7, train_n=3, train_seed=5, players=PLAYERS, workers=1, progress=False,
                    shard_rows={"traces": 8})
    files = local_files(root)
    assert files == local_files(again)
    _, mismatch, errors = filecmp.cmpfiles(root, again, files, shallow=False)
    assert mismatch == [] and errors == []


def test_push_plan_is_exactly_the_folder_plus_stale_deletes(built, capsys):
    root, _ = built
    files = local_files(root)
    assert "README.md" in files and "provenance.json" in files
    remote = [".gitattributes", "README.md", "data/traces/test-00007.parquet"]
    ops = plan_operations(root, remote)
    adds = [op.path_in_repo for op in ops if type(op).__name__ == "CommitOperationAdd"]
    deletes = [op.path_in_repo for op in ops if type(op).__name__ == "CommitOperationDelete"]
    assert adds == files and deletes == ["data/traces/test-00007.parquet"]
    lines = push(root, "someone/poolbench", dry_run=True, remote_files=remote)
    printed = capsys.readouterr().out
    assert len(lines) == len(files) + 1 and all(line.strip() in printed for line in lines)


def test_dry_run_offline_assumes_empty_repo_and_real_push_fails_fast(built, capsys):
    from huggingface_hub.errors import OfflineModeIsEnabled

    root, _ = built
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    lines = push(root, "someone/poolbench", dry_run=True)
    assert sorted(line.split()[1] for line in lines) == local_files(root)
    assert "assuming an empty repo" in capsys.readouterr().out
    # A real push fails at its first Hub call (creating the repo), at once, instead of retrying: one error naming
    # the repo, the cause and the kept folder.
    with pytest.raises(PushFailed, match=r"push to dataset someone/poolbench failed \(OfflineModeIsEnabled: Cannot "
                                         r"reach https://huggingface\.co/api/repos/create: offline mode is enabled"
                                         r".*\).*folder .* is kept") as failed:
        push(root, "someone/poolbench", token="hf_fake")
    assert isinstance(failed.value.__cause__, OfflineModeIsEnabled)
    for bad in ("poolbench", "a/b/c", "bad name/x"):
        with pytest.raises(ValueError, match="--repo_id"):
            push(root, bad, dry_run=True)
    # A folder that is not a built dataset is refused by our own check, before any Hub call.
    with pytest.raises(FileNotFoundError, match=r"is not a built dataset folder \(no README\.md\); build it first"):
        push(root / "data", "someone/poolbench", token="hf_fake")


def test_existing_folder_is_refused_and_left_intact(built):
    root, _ = built
    before = {f: (root / f).read_bytes() for f in local_files(root)}
    with pytest.raises(FileExistsError, match="--overwrite"):
        build_benchmark(root, eval_n=1, players=PLAYERS, progress=False)
    assert {f: (root / f).read_bytes() for f in local_files(root)} == before


def test_interrupted_build_leaves_nothing_and_rerun_is_clean(tmp_path, monkeypatch):
    out = tmp_path / "poolbench"
    real = build_mod.scenario_row
    calls = {"n": 0}

    def crash_after_two(*a, **k):
        calls["n"] += 1
        if calls["n"] > 2:
            raise KeyboardInterrupt("simulated interruption")
        return real(*a, **k)

    monkeypatch.setattr(build_mod, "scenario_row", crash_after_two)
    with pytest.raises(KeyboardInterrupt):
        build_benchmark(out, eval_n=4, players=("oracle",), progress=False)
    assert not out.exists() and not list(tmp_path.iterdir())
    monkeypatch.setattr(build_mod, "scenario_row", real)
    counts = build_benchmark(out, eval_n=4, players=("oracle",), progress=False)
    assert counts["test"] == {"scenarios": 4, "traces": 4}


def test_interrupted_overwrite_keeps_the_old_folder(built, tmp_path, monkeypatch):
    import shutil

    root, _ = built
    copy = tmp_path / "poolbench"
    shutil.copytree(root, copy)
    monkeypatch.setattr(build_mod, "write_card", lambda *_: (_ for _ in ()).throw(RuntimeError("boom")))
    with pytest.raises(RuntimeError):
        build_benchmark(copy, eval_n=2, players=("oracle",), overwrite=True, progress=False)
    assert local_files(copy) == local_files(root)


@pytest.mark.parametrize("kwargs, words", [
    (dict(train_seed=0), "leak the evaluation boards"),
    (dict(players=("heuristic",)), "must include 'oracle'"),
    (dict(players=("oracle", "genius")), "unknown player"),
    (dict(eval_n=0), "eval_n=0"),
])
def test_bad_build_arguments(tmp_path, kwargs, words):
    with pytest.raises(ValueError, match=words):
        build_benchmark(tmp_path / "x", **{"eval_n": 1, "progress": False, **kwargs})
    assert not (tmp_path / "x").exists()


def test_card_has_the_required_sections(built):
    text = (built[0] / "README.md").read_text()
    for heading in ("## Configs and splits", "## Protocol and metrics", "## Rebuild", "## Limitations",
                    "## License and citation", "different\n  base seed", "bibtex", "\"pooltool\": \"0.6.0\""):
        assert heading in text
    assert "| `scenarios` | `test` | 7 |" in text and "oracle" in text.split("Reference results")[1]


def test_builder_script_runs_with_dataclass_arguments(tmp_path, capsys):
    sys.path.insert(0, str(Path(__file__).parents[1] / "builders"))
    try:
        import build_dataset
    finally:
        sys.path.pop(0)
    out = tmp_path / "poolbench"
    build_dataset.main(["--output_dir", str(out), "--eval_n", "2", "--train_n", "0", "--workers", "1",
                        "--players", "oracle,random", "--push_to_hub", "--dry_run"])
    printed = capsys.readouterr().out
    assert "dry run: one commit" in printed and "add    README.md" in printed
    assert layout(out)["scenarios"] == {"test": ["data/scenarios/test-00000.parquet"]}


def test_a_bad_repo_id_is_refused_before_the_build(tmp_path, capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location("bd", Path(__file__).parents[1] / "builders" / "build_dataset.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their annotations through it
    spec.loader.exec_module(module)
    out = tmp_path / "never"
    assert module.main(["--output_dir", str(out), "--push_to_hub", "--repo_id", "no-owner", "--dry_run"]) == 2
    err = capsys.readouterr().err
    assert "--repo_id 'no-owner'" in err and len(err.strip().splitlines()) == 1 and not out.exists()


def test_played_shots_whose_simulation_stopped_early_are_counted(tmp_path, monkeypatch):
    """The builder's count of shots scored from where the balls were when the simulation stopped: every one here,
    with a simulator that always stops at the event limit (one process, so the patch holds)."""
    from datasets import load_dataset

    from poolbench_data.core import physics

    monkeypatch.setattr(physics, "_run", lambda system, max_events, timeout_s: "event-limit")
    counts = build_benchmark(tmp_path / "poolbench", eval_n=2, train_n=0, players=["oracle", "random"], workers=1,
                             progress=False)
    monkeypatch.chdir(tmp_path)
    fired = [row for row in load_dataset("poolbench", "traces", split="test") if row["sim_status"] != "not-fired"]
    assert fired and all(row["sim_status"] == "event-limit" for row in fired)
    assert counts["simulations"]["stopped"] == len(fired)
