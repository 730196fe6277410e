"""builders/build_pairs.py on a real folder: traces -> pairs config -> TRL format."""

import sys
from pathlib import Path

import pytest
from conftest import copy_of

from poolbench_data.llm.player import EvalSettings, evaluate_model, llm_trace_rows
from poolbench_data.hub.build import build_benchmark
from poolbench_data.hub.folder import read_rows
from poolbench_data.hub.update import replace_rows
from poolbench_data.llm.replay import ReplayBackend
from poolbench_data.core.records import Scenario, Shot

sys.path.insert(0, str(Path(__file__).parents[1] / "builders"))
import build_pairs  # noqa: E402

sys.path.pop(0)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("pairs") / "poolbench"
    build_benchmark(root, eval_n=1, train_n=3, train_seed=2, players=("oracle",), progress=False)
    scen = read_rows(root, "scenarios", "train")
    boards = [Scenario.from_row(r) for r in scen]
    oracle = {r["id"]: Shot.from_row(r["oracle_shot"]) for r in scen}
    # Two samples a board: garbage, then the Oracle's own answer (a tie with the Oracle).
    backend = ReplayBackend([["I'd hit it softly.", r["oracle_action"]] for r in scen])
    settings = EvalSettings(model="toy", backend="replay", samples=2)
    recs, _ = evaluate_model(boards, backend, settings, player="toy", progress=False)
    replace_rows(root, "traces", "train", llm_trace_rows(recs, oracle, settings), drop=lambda r: False)
    return root


def test_build_pairs_writes_a_trl_ready_config(folder, monkeypatch):
    from datasets import load_dataset

    from poolbench_data.hub.features import features
    from poolbench_data.checks.pairs import check_pairs

    build_pairs.main(["--dataset_dir", str(folder)])
    monkeypatch.chdir(folder.parent)
    pairs = load_dataset("poolbench", "pairs", split="train")
    assert pairs.features == features("pairs")
    check_pairs(pairs)
    pots = sum(r["oracle_pots"] for r in read_rows(folder, "scenarios", "train"))
    by = {s: sum(p["source"] == s for p in pairs) for s in ("oracle-vs-llm", "on-policy")}
    # Oracle beats the garbage sample wherever it pots; never the tied sample.
    assert by["oracle-vs-llm"] >= pots and by["on-policy"] == 3
    assert all(p["margin"] > 0 and p["chosen_score"] > p["rejected_score"] for p in pairs)
    assert all(p["rejected"][0]["content"] == "I'd hit it softly." for p in pairs)
    assert {p["scenario_id"][:3] for p in pairs} == {"pb2"}  # train boards only
    assert "pairs" in (folder / "README.md").read_text()


def test_bad_pair_builds_are_refused(folder, small_dataset, tmp_path, capsys):
    def refused(args, words):
        assert build_pairs.main(args) == 2
        err = capsys.readouterr().err
        assert words in err and len(err.strip().splitlines()) == 1, err

    refused(["--dataset_dir", str(folder), "--split", "test"], "evaluation boards")
    refused(["--dataset_dir", str(tmp_path / "never-read"), "--sources", ","], "--sources ',': no source")
    refused(["--dataset_dir", str(tmp_path / "never-read"), "--sources", "on-policy,best"], "unknown source(s) ['best']")
    refused(["--dataset_dir", str(tmp_path)], "not a dataset folder")
    bare = copy_of(small_dataset, tmp_path)  # no model's answers in it
    refused(["--dataset_dir", str(bare)], "run `poolbench eval --split train")


def test_a_build_with_no_pairs_keeps_the_folder_unchanged(small_dataset, tmp_path, capsys):
    root = copy_of(small_dataset, tmp_path)
    scen = read_rows(root, "scenarios", "train")
    settings = EvalSettings(model="toy", backend="replay", samples=1)  # one answer a board: nothing to compare
    recs, _ = evaluate_model([Scenario.from_row(r) for r in scen], ReplayBackend([["no idea"] for _ in scen]),
                             settings, player="toy", progress=False)
    replace_rows(root, "traces", "train", llm_trace_rows(recs, {}, settings), drop=lambda r: False)
    before = sorted(p.name for p in (root / "data").iterdir())
    assert build_pairs.main(["--dataset_dir", str(root), "--sources", "on-policy"]) == 2
    err = capsys.readouterr().err
    assert f"no pairs from {len(scen)} scenarios" in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in (root / "data").iterdir()) == before and "pairs" not in before
