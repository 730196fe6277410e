"""Sharded builds: K slices built apart, merged into the one-piece bytes."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest
from conftest import SMALL_DATASET

from poolbench_data.hub.build import build_benchmark, shard_range
from poolbench_data.hub.shards import merge_shards

REPO = Path(__file__).resolve().parents[1]
ARGS = SMALL_DATASET  # what the session's two shards (tests/conftest.py) were built with


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "builders" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def parts(two_shards) -> Path:
    return two_shards  # read only: the tests that change a shard copy it first


def test_ranges_cover_every_index_once():
    for n in (0, 1, 5, 7, 100):
        for k in (1, 2, 3, 8):
            covered = [j for i in range(k) for j in range(*shard_range(n, (i, k)))]
            assert covered == list(range(n))


def test_two_shards_merge_into_the_one_piece_build_byte_for_byte(parts, small_dataset, tmp_path):
    whole = small_dataset  # the same settings, built in one piece
    merged = tmp_path / "merged"
    counts = merge_shards(sorted(parts.iterdir()), merged)
    assert counts == {"test": {"scenarios": 3, "traces": 6}, "train": {"scenarios": 3, "traces": 6}}
    a, b = _files(whole), _files(merged)
    assert sorted(a) == sorted(b)
    assert [f for f in a if a[f] != b[f]] == []


def test_a_shard_holds_its_own_index_range(parts):
    from poolbench_data.hub.folder import read_rows

    assert [r["index"] for r in read_rows(parts / "s0", "scenarios", "test")] == [0]
    assert [r["index"] for r in read_rows(parts / "s1", "scenarios", "test")] == [1, 2]
    assert [r["id"] for r in read_rows(parts / "s1", "scenarios", "train")] == ["pb5-000001", "pb5-000002"]


def test_incomplete_duplicated_or_mixed_shard_sets_are_refused(parts, tmp_path):
    with pytest.raises(ValueError, match=r"shard\(s\) \[1\] of 2 missing"):
        merge_shards([parts / "s0"], tmp_path / "a")
    shutil.copytree(parts / "s0", tmp_path / "copy")
    with pytest.raises(ValueError, match="appears twice"):
        merge_shards([parts / "s0", tmp_path / "copy", parts / "s1"], tmp_path / "b")
    other = tmp_path / "other"
    build_benchmark(other, shard=(1, 2), **{**ARGS, "train_seed": 8})
    with pytest.raises(ValueError, match="other seeds, settings or versions"):
        merge_shards([parts / "s0", other], tmp_path / "c")
    assert not (tmp_path / "a").exists() and not (tmp_path / "c").exists()


def test_scripts_refuse_bad_shards_in_one_line(parts, tmp_path, capsys):
    build = _script("build_dataset")
    assert build.main(["--shard", "2/2", "--output_dir", str(tmp_path / "x")]) == 2
    assert build.main(["--shard", "half", "--output_dir", str(tmp_path / "x")]) == 2
    assert build.main(["--shard", "0/2", "--push_to_hub", "--output_dir", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("error: --shard") or "--push_to_hub" in line for line in err)
    assert not (tmp_path / "x").exists()
    merge = _script("merge_shards")
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    (lonely / "s0").symlink_to(parts / "s0")
    assert merge.main(["--shards_dir", str(lonely), "--output_dir", str(tmp_path / "m")]) == 2
    assert "missing; build them with --shard I/2" in capsys.readouterr().err


def test_shard_rows_must_be_what_shard_json_promises(parts, tmp_path):
    # A shard that lost a file: half the test traces would merge, exit 0.
    lost = shutil.copytree(parts, tmp_path / "lost")
    (lost / "s1" / "data" / "traces" / "test-00000.parquet").unlink()
    with pytest.raises(ValueError, match=r"s1 holds 0 traces/test rows where its shard.json promises 4 \(4 missing"):
        merge_shards(sorted(lost.iterdir()), tmp_path / "a")
    # Shard 0's rows copied into shard 1: boards twice, others missing.
    swapped = shutil.copytree(parts, tmp_path / "swapped")
    shutil.rmtree(swapped / "s1" / "data")
    shutil.copytree(swapped / "s0" / "data", swapped / "s1" / "data")
    with pytest.raises(ValueError, match=r"s1 holds 1 scenarios/test rows where its shard.json promises 2 "
                                         r"\(2 missing, 1 duplicated or foreign\)"):
        merge_shards(sorted(swapped.iterdir()), tmp_path / "b")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.mark.parametrize("text, problem", [
    ("{not json", "is not valid JSON"),
    ('{"shard": 0, "of": 2}', "lacks ranges, benchmark"),
    ('{"shard": 0, "of": 2, "ranges": {}, "benchmark": {}}', "lacks benchmark.versions, benchmark.settings"),
])
def test_a_malformed_shard_json_is_one_line_naming_the_file(parts, tmp_path, capsys, text, problem):
    bad = shutil.copytree(parts, tmp_path / "bad")
    (bad / "s0" / "shard.json").write_text(text)
    merge = _script("merge_shards")
    assert merge.main(["--shards_dir", str(bad), "--output_dir", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "s0/shard.json" in err[0] and problem in err[0]
    assert not (tmp_path / "m").exists()
