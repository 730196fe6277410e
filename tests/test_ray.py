"""--executor ray: a local 2-CPU Ray instance gives the local executor's bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from poolbench_data.players import DEFAULT_BASELINES
from poolbench_data.players.play import run_baselines
from poolbench_data.players.pool import check_executor, imap

pytest.importorskip("ray", reason="the ray extra is part of the CI install (scripts/setup.sh)")


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def ray_instance():
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def test_auto_with_no_ray_running_is_one_line_naming_our_flag_before_any_work(tmp_path, capsys, monkeypatch):
    """`--ray_address auto` finds the cluster as Ray does, before any board runs: none running here is one
    line naming --ray_address (Ray's own error names its `--address` flag, after the progress bar started)."""
    import ray
    from ray._private.services import find_gcs_addresses

    from poolbench_data.cli import main

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert not ray.is_initialized() and not find_gcs_addresses(), \
        "a Ray cluster runs on this machine: these tests start and look for their own"
    with pytest.raises(ValueError, match=r"^--ray_address auto"):
        check_executor("ray", "auto")
    assert main(["baseline", "--n", "2", "--executor", "ray", "--ray_address", "auto"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: --ray_address auto"), err
    assert "`--address`" not in err and captured.out == ""  # no progress bar, no table: no work started


def test_auto_finds_a_running_instance(ray_instance, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert check_executor("ray", "auto") == "ray"


class Counting:
    def __init__(self, n):
        self.n, self.taken = n, 0

    def __iter__(self):
        for i in range(self.n):
            self.taken += 1
            yield i


@pytest.mark.slow
def test_ray_streams_in_order_with_bounded_work_in_flight(ray_instance):
    items = Counting(1000)
    # json.dumps: Ray workers import the function by module, and tests/ is not a package.
    results = imap(json.dumps, items, 2, "ray")
    assert next(results) == "0"
    assert items.taken <= 2 * 4 + 1  # never the whole input at once
    assert list(results) == [str(i) for i in range(1, 1000)]


@pytest.mark.slow
def test_a_ray_build_equals_the_local_build_byte_for_byte(ray_instance, tmp_path):
    from poolbench_data.hub.build import build_benchmark
    from poolbench_data.hub.episodes import EpisodePlan

    # every baseline's records, and a few short run-out episodes: the episodes config is played on Ray too
    episodes = EpisodePlan(("runout",), (("heuristic",),), n=2, attempts=2)
    args = dict(eval_n=4, train_n=2, train_seed=3, progress=False, workers=2, episodes=episodes)
    build_benchmark(tmp_path / "local", **args)
    build_benchmark(tmp_path / "ray", executor="ray", **args)
    a, b = _files(tmp_path / "local"), _files(tmp_path / "ray")
    assert sorted(a) == sorted(b) and [f for f in a if a[f] != b[f]] == []


@pytest.mark.slow
def test_a_game_episode_is_the_same_on_ray_in_a_process_pool_and_in_this_process(ray_instance):
    """Seeded racks, a searching player's run-out and Random's draws: the episode is a pure function of its task."""
    from poolbench_data.games.play import play_episode, play_tasks

    tasks = [("nineball-seeded", "mock", k, 0, 3, 0) for k in range(2)] + [
        ("runout", "oracle", 0, 0, 15, 0), ("runout", "random", 1, 0, 15, 1)]
    here = [play_episode(*t).digest() for t in tasks]  # tests/test_games.py: a process pool gives these too
    on_ray = [e.digest() for e in play_tasks(tasks, workers=2, executor="ray")]
    assert here == on_ray and len(set(here)) == len(here)


def test_executor_mistakes_are_named_before_any_work():
    with pytest.raises(ValueError, match="--executor 'dask' is not one of local, ray"):
        check_executor("dask")
    with pytest.raises(ValueError, match="--ray_address 'auto' needs --executor ray"):
        check_executor("local", "auto")
    with pytest.raises(ValueError, match="--executor"):
        run_baselines([], DEFAULT_BASELINES, executor="spark")


def test_an_address_where_no_head_answers_is_one_line_within_seconds(tmp_path, capsys):
    import socket
    import time

    from poolbench_data.cli import main

    with socket.socket() as s:  # a port nothing listens on: bind, never listen
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
            started = time.monotonic()
            with pytest.raises(ValueError, match=f"no Ray head answers at 127.0.0.1:{port}"):
                check_executor("ray", address)
            assert time.monotonic() - started < 10
        with pytest.raises(ValueError, match="is not host:port"):
            check_executor("ray", "localhost")
        assert main(["baseline", "--n", "2", "--executor", "ray", "--ray_address", f"127.0.0.1:{port}"]) == 2
        err = capsys.readouterr().err
        assert "no Ray head answers" in err and len(err.strip().splitlines()) == 1
