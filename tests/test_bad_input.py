"""Bad input is refused on the way in, with one line naming the field and the
fix; huge runs stream; worker processes die with their parent."""

import dataclasses
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from poolbench_data.cli import main
from poolbench_data.core.physics import simulate
from poolbench_data.core.records import SIM_STATUSES, BallPos, InvalidScenario, Scenario, Shot

ROOT = Path(__file__).resolve().parents[1]
OK = {"id": "x", "category": "open", "seed": 0, "cue_ball": {"x": 0.5, "y": 0.3},
      "balls": [{"id": "1", "x": 0.7, "y": 1.0}, {"id": "8", "x": 0.3, "y": 1.5}]}


def _row(**change):
    return {**json.loads(json.dumps(OK)), **change}


def _one_line_error(capsys, *words):
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err, err
    for w in words:
        assert w in err, err
    return err


# --- 1. scenarios: one validated way in ---------------------------------------

def test_ball_ids_as_int_and_str_are_the_same_ball():
    row = _row(balls=[{"id": "2", "x": 0.7, "y": 1.0}, {"id": 2, "x": 0.2, "y": 1.0}, {"id": "8", "x": 0.3, "y": 1.5}])
    with pytest.raises(InvalidScenario, match="ball '2' appears twice"):
        Scenario.from_row(row)
    one = Scenario.from_row(_row(balls=[{"id": 2, "x": 0.7, "y": 1.0}, {"id": 8, "x": 0.3, "y": 1.5}]))
    assert [b.id for b in one.balls] == ["cue", "2", "8"]


@pytest.mark.parametrize("balls, words", [
    ([{"id": "9", "x": 0.7, "y": 1.0}, {"id": "8", "x": 0.3, "y": 1.5}], "at least one solid (1-7)"),
    ([{"id": "1", "x": 0.7, "y": 1.0}, {"id": "9", "x": 0.3, "y": 1.5}], "add ball '8'"),
])
def test_rows_need_a_solid_and_the_eight(balls, words):
    with pytest.raises(InvalidScenario, match=re_escape(words)):
        Scenario.from_row(_row(balls=balls))
    with pytest.raises(InvalidScenario, match=re_escape(words)):
        Scenario.from_json(json.dumps(_row(balls=balls)))


def re_escape(text):
    import re

    return re.escape(text)


def test_baselines_refuse_a_board_without_solids_naming_the_fix(board):
    from poolbench_data.players.play import play_scenario

    no_solids = board({"cue": (0.5, 0.3), "9": (0.5, 1.0), "8": (0.3, 1.5)})
    with pytest.raises(InvalidScenario, match=re_escape("at least one solid (1-7)")):
        play_scenario(no_solids, ["oracle"])


GOOD = Scenario.create("g", "open", 0, {"cue": (0.5, 0.3), "1": (0.7, 1.0), "8": (0.3, 1.5)})


@pytest.mark.parametrize("balls, words", [
    ((BallPos("cue", 0.5, 0.3), BallPos("1", 0.51, 0.31), BallPos("8", 0.3, 1.5)), "overlap"),
    ((BallPos("cue", 0.5, 0.3), BallPos("1", 5.0, 1.0), BallPos("8", 0.3, 1.5)), "off the cloth"),
    ((BallPos("cue", 0.5, 0.3), BallPos("1", math.nan, 1.0), BallPos("8", 0.3, 1.5)), "not finite"),
    ((BallPos("cue", 0.5, 0.3), BallPos("1", 0.7, 1.0), BallPos("1", 0.3, 1.5)), "twice"),
    ((BallPos("1", 0.7, 1.0), BallPos("cue", 0.5, 0.3), BallPos("8", 0.3, 1.5)), "canonical order"),
    ((BallPos("1", 0.7, 1.0), BallPos("8", 0.3, 1.5)), "missing cue ball"),
    (["not a ball"], "balls"),
])
def test_the_constructor_validates_like_create(balls, words):
    with pytest.raises(InvalidScenario, match=words):
        Scenario("bad", "open", 0, tuple(balls) if isinstance(balls, tuple) else balls)
    with pytest.raises(InvalidScenario, match=words):
        dataclasses.replace(GOOD, balls=balls)


@pytest.mark.parametrize("change, words", [
    ({"category": "trick"}, "unknown category"),
    ({"seed": -1}, "seed"),
    ({"seed": 2**63}, "seed"),
    ({"seed": "1"}, "seed"),
    ({"id": 5}, "id"),
])
def test_the_constructor_checks_id_category_and_seed(change, words):
    with pytest.raises(InvalidScenario, match=words):
        dataclasses.replace(GOOD, **change)


def _deep(depth):
    x = []
    for _ in range(depth):
        x = [x]
    return x


@pytest.mark.parametrize("change, field", [
    ({"balls": 5}, "'balls'"),
    ({"balls": "1,8"}, "'balls'"),
    ({"balls": ["1", "8"]}, "balls[0]"),
    ({"balls": [{"id": "1", "y": 1.0}]}, "'x'"),
    ({"balls": [{"x": 0.7, "y": 1.0}]}, "'id'"),
    ({"balls": [{"id": ["1"], "x": 0.7, "y": 1.0}]}, "'id'"),
    ({"balls": [{"id": "1", "x": [0.7], "y": 1.0}]}, "x=[0.7]"),
    ({"cue_ball": [1, 2]}, "'cue_ball'"),
    ({"cue_ball": {"x": 0.5}}, "'y'"),
    ({"seed": "abc"}, "'seed'"),
    ({"seed": 1.5}, "'seed'"),
    ({"balls": _deep(10_000)}, "balls[0]"),
    ({"balls": [{"id": "1", "x": _deep(10_000), "y": 1.0}]}, "'1'"),
])
def test_wrong_shape_rows_name_the_field(change, field):
    with pytest.raises(InvalidScenario) as e:
        Scenario.from_row(_row(**change))
    assert field in str(e.value) and len(str(e.value)) < 400


@pytest.mark.parametrize("text, words", [
    ("[" * 10_000 + "]" * 10_000, "nested too deeply"),
    ('{"id": "x", "balls": ' + "[" * 10_000 + "]" * 10_000 + "}", "nested too deeply"),
    ("[1, 2]", "must be an object"),
    ('{"id": "x", "category": "open", "seed": 1' + "0" * 5000 + ', "cue_ball": {"x": 0.5, "y": 0.3}, "balls": []}',
     "does not parse"),
])
def test_hostile_json_is_one_clear_error(text, words):
    with pytest.raises(InvalidScenario, match=words):
        Scenario.from_json(text)


def test_simulate_does_not_raise_for_a_huge_speed():
    r = simulate(GOOD, Shot(0, 10**400))
    assert r.status == "error" and "V0" in r.message


_ANY = st.one_of(st.integers(), st.sampled_from([10**400, -10**400, 2**63, 2**1024]),
                 st.floats(allow_nan=True, allow_infinity=True), st.none(), st.text(max_size=5), st.booleans())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(phi=_ANY, V0=_ANY, a=_ANY, b=_ANY, theta=_ANY, target=_ANY)
def test_simulate_never_raises_for_any_shot(phi, V0, a, b, theta, target):
    r = simulate(GOOD, Shot(phi, V0, a, b, theta, target, target))
    assert r.status in SIM_STATUSES
    fields = (phi, V0, a, b, theta)
    if any(isinstance(v, (bool, str)) or v is None for v in fields):
        assert r.status == "error" and r.message.startswith("invalid shot"), r.message


# --- 2. streaming: the first board of a huge run comes at once ----------------

def _listed_category_sequence(n):
    """The apportionment built as one whole list: the reference the streamed sequence must equal."""
    from poolbench_data.boards.generate import PAPER_COUNTS
    from poolbench_data.core.records import CATEGORIES

    counts = dict.fromkeys(CATEGORIES, 0)
    seq = []
    for _ in range(n):
        c = max(CATEGORIES, key=lambda c: (PAPER_COUNTS[c] / (2 * counts[c] + 1), -CATEGORIES.index(c)))
        counts[c] += 1
        seq.append(c)
    return seq


def test_streamed_categories_equal_the_list_element_for_element():
    from itertools import islice

    from poolbench_data.boards.generate import category_sequence, iter_categories

    listed = _listed_category_sequence(5000)
    assert list(islice(iter_categories(), 5000)) == listed
    assert category_sequence(5000) == listed
    for start in list(range(0, 400)) + [999, 1000, 1001, 2345, 4321, 4950]:
        assert list(islice(iter_categories(start), 50)) == listed[start:start + 50], start


def test_a_late_start_skips_without_walking_the_sequence():
    from itertools import islice

    from poolbench_data.boards.generate import iter_categories

    ref = iter_categories()
    for _ in range(200_000):
        next(ref)
    assert list(islice(iter_categories(200_000), 100)) == list(islice(ref, 100))
    t0 = time.perf_counter()
    assert next(iter_categories(10**15)) in dict.fromkeys(_listed_category_sequence(7))
    assert time.perf_counter() - t0 < 1.0


def _python(code, timeout=60):
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_huge_n_and_late_start_yield_the_first_board_at_once():
    code = ("from poolbench_data.boards.generate import iter_scenarios\n"
            "print(next(iter_scenarios(10**9, 0)).id, next(iter_scenarios(2, 0, start=10**12)).id)")
    try:
        done = _python(code)
    except subprocess.TimeoutExpired:
        pytest.fail("no board within 60 s")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["pb0-000000", "pb0-1000000000000"]


def test_scenarios_huge_n_into_head_streams_and_exits_cleanly(tmp_path):
    err = tmp_path / "err"
    with open(err, "w") as e:
        proc = subprocess.Popen([sys.executable, "-m", "poolbench_data.cli", "scenarios", "--n", "1000000000"],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=e, text=True)
    watchdog = threading.Timer(60, proc.kill)  # imports alone take ~7 s; the list took 105 min
    watchdog.start()
    try:
        lines = [proc.stdout.readline(), proc.stdout.readline()]  # what `head -2` reads
        proc.stdout.close()  # and then head exits
        rc = proc.wait(timeout=30)
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert [json.loads(line)["id"] for line in lines] == ["pb0-000000", "pb0-000001"]
    assert rc == 0 and "Traceback" not in err.read_text(), err.read_text()


# --- 3. workers ----------------------------------------------------------------

def test_workers_zero_means_one_per_core_and_more_is_capped(monkeypatch):
    from poolbench_data.players.pool import WORKERS_ENV, cores, default_workers, resolve_workers

    monkeypatch.delenv(WORKERS_ENV, raising=False)
    assert cores() == len(os.sched_getaffinity(0))
    assert resolve_workers(0) == cores() == default_workers()
    assert resolve_workers(500) == cores()
    assert resolve_workers(1) == 1
    with pytest.raises(ValueError, match="--workers must be >= 0"):
        resolve_workers(-1)
    # POOLBENCH_WORKERS is what 0 stands for (still capped at the cores); a count given is kept
    monkeypatch.setenv(WORKERS_ENV, "1")
    assert resolve_workers(0) == default_workers() == 1 and resolve_workers(cores()) == cores()
    monkeypatch.setenv(WORKERS_ENV, "500")
    assert resolve_workers(0) == cores()
    for bad in ("0", "two", "-1", " 2"):
        monkeypatch.setenv(WORKERS_ENV, bad)
        with pytest.raises(ValueError, match=f"{WORKERS_ENV}={bad!r}: give a whole number"):
            resolve_workers(0)
        assert resolve_workers(1) == 1  # a count given never reads it


def test_a_bad_workers_environment_is_one_line_and_exit_2(monkeypatch, tmp_path, capsys):
    from poolbench_data.players.pool import WORKERS_ENV

    monkeypatch.setenv(WORKERS_ENV, "many")
    out = tmp_path / "r.json"
    assert main(["baseline", "--n", "1", "--players", "random", "--no_label", "--out", str(out), "--quiet"]) == 2
    _one_line_error(capsys, WORKERS_ENV, "'many'")
    assert not out.exists()


def test_negative_workers_is_a_user_error_in_every_command(tmp_path, capsys):
    assert main(["baseline", "--n", "1", "--players", "random", "--no_label", "--workers", "-1", "--out", "",
                 "--quiet"]) == 2
    _one_line_error(capsys, "--workers")
    sys.path.insert(0, str(ROOT / "builders"))
    try:
        import build_dataset
    finally:
        sys.path.remove(str(ROOT / "builders"))
    out = tmp_path / "ds"
    assert build_dataset.main(["--output_dir", str(out), "--eval_n", "1", "--train_n", "0", "--players", "oracle",
                               "--workers", "-2"]) == 2
    _one_line_error(capsys, "--workers")
    assert not out.exists()


@pytest.mark.slow  # spawns the worker processes: ~20 s
def test_baseline_caps_workers_at_the_cores(tmp_path, capsys):
    from poolbench_data.players.pool import cores

    out = tmp_path / "r.json"  # a count given: POOLBENCH_WORKERS does not apply
    assert main(["baseline", "--n", "1", "--players", "random", "--no_label", "--workers", "500", "--out", str(out),
                 "--quiet"]) == 0
    assert f"with {cores()} worker(s)" in capsys.readouterr().out
    assert json.loads(out.read_text())["provenance"]["settings"]["workers"] == cores()


def _children(pid):
    found = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
                cmd = Path(f"/proc/{d}/cmdline").read_text().replace("\0", " ")
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found[int(d)] = cmd
    return found


def _alive(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _survivors(pids: dict, within: float) -> list[str]:
    """The command lines of `pids` still alive once all are gone or `within` seconds have passed."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    return [c for p, c in pids.items() if _alive(p)]


def _kill_all(proc, pids) -> None:
    """A test's own leftovers, whatever it asserted: the parent and every process it saw."""
    for p in [proc.pid, *pids]:
        if _alive(p):
            os.kill(p, signal.SIGKILL)
    proc.wait(timeout=10)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_and_resource_tracker_die_with_a_killed_parent():
    proc = subprocess.Popen([sys.executable, "-m", "poolbench_data.cli", "baseline", "--n", "200", "--workers", "2",
                             "--out", "", "--quiet"], cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children: dict = {}
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and sum("spawn_main" in c for c in children.values()) < 2:
            children.update(_children(proc.pid))
            time.sleep(0.1)
        assert sum("spawn_main" in c for c in children.values()) == 2, children
        assert any("resource_tracker" in c for c in children.values()), children
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        assert not _survivors(children, within=10)
    finally:
        _kill_all(proc, children)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_local_ray_instance_dies_with_a_killed_driver():
    # Ray's raylet follows a SIGKILLed driver, but its agents live on for about a minute unless the reaper ends them.
    pytest.importorskip("ray")
    proc = subprocess.Popen([sys.executable, "-m", "poolbench_data.cli", "baseline", "--n", "200", "--workers", "2",
                             "--executor", "ray", "--out", "", "--quiet"], cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen: dict = {}
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not (any("raylet" in c for c in seen.values())
                                                   and any("agent" in c for c in seen.values())
                                                   and any("players.reaper" in c for c in seen.values())):
            seen.update(_descendants(proc.pid))
            time.sleep(0.2)
        assert any("agent" in c for c in seen.values()) and any("players.reaper" in c for c in seen.values()), seen
        time.sleep(2)
        seen.update(_descendants(proc.pid))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        assert not _survivors(seen, within=20)
    finally:
        _kill_all(proc, seen)


def _descendants(pid) -> dict:
    found, todo = {}, [pid]
    while todo:
        for child, cmd in _children(todo.pop()).items():
            if child not in found:
                found[child] = cmd
                todo.append(child)
    return found


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_terminated_eval_shuts_the_vllm_engine_down(tmp_path):
    # SIGTERM (a scheduler's stop) must end vLLM's EngineCore and Worker with the CLI, not leave them running.
    # Its temp folder: short, as a socket's path must be (the engine's socket folder is made there).
    temp = Path(tempfile.mkdtemp(prefix="pb-"))
    # Four boards: the baselines before the engine take seconds, and the engine is still starting at the signal.
    proc = subprocess.Popen([sys.executable, "-m", "poolbench_data.cli", "eval", "--n", "4", "--baselines", "random",
                             "--out", str(tmp_path / "eval"), "--quiet"], cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "TMPDIR": str(temp)})
    seen: dict = {}
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not any("Worker" in c for c in seen.values()):
            seen.update(_descendants(proc.pid))
            time.sleep(0.2)
        assert any("EngineCore" in c for c in seen.values()) and any("Worker" in c for c in seen.values()), seen
        time.sleep(3)
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=60) == 128 + signal.SIGTERM
        assert not _survivors(seen, within=30)
        # and the engine's socket files went with it
        assert not list(temp.glob("poolbench-vllm-*")) and not [p for p in temp.rglob("*") if p.is_socket()]
    finally:
        _kill_all(proc, seen)
        shutil.rmtree(temp, ignore_errors=True)


# --- 4. compare ------------------------------------------------------------------

def _trace(sid, player, contact, sample=0):
    return {"scenario_id": sid, "sample": sample, "player": player, "player_kind": "llm", "category": "open",
            "legal_contact": contact, "own_potted": False, "clean_pot": False, "foul": not contact,
            "parse_status": "ok"}


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_compare_refuses_a_file_with_two_players(tmp_path, capsys):
    before = _write(tmp_path / "b.jsonl", [_trace(f"s{i}", "m", False) for i in range(4)])
    mixed = _write(tmp_path / "a.jsonl", [r for i in range(4) for r in (_trace(f"s{i}", "good", True),
                                                                         _trace(f"s{i}", "bad", False))])
    assert main(["compare", before, mixed]) == 2
    _one_line_error(capsys, "a.jsonl", "'bad'", "'good'", "--player")


def test_compare_player_picks_rows_in_both_files(tmp_path, capsys):
    before = _write(tmp_path / "b.jsonl", [r for i in range(4) for r in (_trace(f"s{i}", "good", False),
                                                                          _trace(f"s{i}", "bad", True))])
    after = _write(tmp_path / "a.jsonl", [r for i in range(4) for r in (_trace(f"s{i}", "bad", False),
                                                                         _trace(f"s{i}", "good", True))])
    assert main(["compare", before, after, "--player", "good"]) == 0
    out = capsys.readouterr().out
    assert "same 4 shots" in out and "Contact" in out and "0.0 [" in out and "100.0 [" in out
    assert main(["compare", before, after, "--player", "nobody"]) == 2
    _one_line_error(capsys, "b.jsonl", "'nobody'", "'bad'", "'good'")


def test_compare_refuses_two_rows_for_one_shot(tmp_path, capsys):
    rows = [_trace("s0", "m", True), _trace("s0", "m", False)]
    a = _write(tmp_path / "a.jsonl", rows)
    assert main(["compare", a, a]) == 2
    _one_line_error(capsys, "a.jsonl", "'s0'")


@pytest.mark.parametrize("content, words", [
    ("", "is empty"),
    ("\n\n", "is empty"),
    ("garbage\n", "line 1 is not JSON"),
    ('{"a": 1}\n[1]\n', "line 2"),
    ('{"scenario_id": "s0"}\n', "'sample'"),
    (None, "does not exist"),
])
def test_compare_bad_files_are_one_line_naming_the_file(tmp_path, capsys, content, words):
    good = _write(tmp_path / "good.jsonl", [_trace("s0", "m", True)])
    bad = tmp_path / "bad.jsonl"
    if content is not None:
        bad.write_text(content)
    assert main(["compare", str(bad), good]) == 2
    _one_line_error(capsys, str(bad), words, "llm_traces.jsonl")
    assert main(["compare", good, str(bad)]) == 2
    _one_line_error(capsys, str(bad), words)


def test_compare_refuses_different_boards(tmp_path, capsys):
    a = _write(tmp_path / "a.jsonl", [_trace("s0", "m", True)])
    b = _write(tmp_path / "b.jsonl", [_trace("s1", "m", True)])
    assert main(["compare", a, b]) == 2
    _one_line_error(capsys, "same --seed")


# --- 5. baseline: bad --out, --seed, --n before any simulation -------------------

FAST = ["baseline", "--n", "1", "--players", "random", "--no_label", "--quiet"]


def _out_cases(tmp_path):
    regular = tmp_path / "file"
    regular.write_text("keep")
    return [str(tmp_path), str(regular / "x.json"), "/proc/x.json"]


@pytest.mark.parametrize("case", range(3))
def test_unwritable_out_is_refused_before_the_run(tmp_path, capsys, case):
    out = _out_cases(tmp_path)[case]
    assert main([*FAST, "--out", out]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # no table: nothing was simulated
    err = captured.err.strip()
    assert err.startswith("error: --out") and out in err and "\n" not in err, err
    assert (tmp_path / "file").read_text() == "keep"


def test_out_parent_folders_are_created_and_an_existing_file_is_kept_until_the_end(tmp_path, capsys):
    out = tmp_path / "new" / "deeper" / "r.json"
    assert main([*FAST, "--out", str(out)]) == 0
    assert json.loads(out.read_text())["summary"]
    capsys.readouterr()


@pytest.mark.parametrize("argv, flag", [
    (["baseline", "--seed", "-1"], "--seed"),
    (["baseline", "--seed", str(2**63)], "--seed"),
    (["baseline", "--n", "-5"], "--n"),
    (["baseline", "--n", "0"], "--n"),
    (["scenarios", "--n", "0"], "--n"),
    (["scenarios", "--seed", str(2**64)], "--seed"),
])
def test_bad_numbers_are_one_line_naming_the_flag(capsys, argv, flag):
    assert main([*argv, *(["--players", "random", "--no_label", "--out", "", "--quiet"]
                          if argv[0] == "baseline" else [])]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    _one_line_error_text(captured.err, flag)


def _one_line_error_text(err, *words):
    err = err.strip()
    assert err.startswith("error: ") and "\n" not in err, err
    for w in words:
        assert w in err, err


def test_workers_run_one_blas_thread_and_the_parent_keeps_its_environment(monkeypatch):
    # Two workers on two cores must not each start a BLAS thread per core; the
    # setting reaches the workers only (a vLLM engine started later keeps its threads).
    from poolbench_data.players.pool import imap_bounded

    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "3")  # the user's own value is left alone
    seen = list(imap_bounded(os.getenv, ["OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"] * 3, 2))
    assert seen == ["1", "3"] * 3
    assert "OPENBLAS_NUM_THREADS" not in os.environ and os.environ["MKL_NUM_THREADS"] == "3"
