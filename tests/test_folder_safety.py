"""Nothing lost: one writer per dataset folder, a swap a kill cannot break,
every output location and value checked before work, a push of only the
dataset's own files and a dry run that never reaches the network."""

import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from poolbench_data.cli import main as poolbench
from poolbench_data.hub.folder import read_rows, require_dataset
from poolbench_data.hub.push import local_files, plan_operations, push
from poolbench_data.hub.update import replace_rows, write_config

ROOT = Path(__file__).parents[1]
KILLED = 17  # exit status of a run the fault injector ended


def builder(name: str):
    spec = importlib.util.spec_from_file_location(f"_{name}", ROOT / "builders" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def pair_row(i: int) -> dict:
    def msg(role, text):
        return {"role": role, "content": text}

    side = {"score": 1.0, "parse_status": "ok", "legal_contact": True, "own_potted": True, "foul": False,
            "opp_or_8_potted": False, "clean_pot": True}
    return {"prompt": [msg("system", "rules"), msg("user", f"board {i}")], "chosen": [msg("assistant", "a")],
            "rejected": [msg("assistant", "b")], "scenario_id": f"pb1-{i:06d}", "category": "open",
            "source": "on-policy", "chosen_model": "m", "rejected_model": "m", "chosen_outcome": side,
            "rejected_outcome": {**side, "score": 0.0, "clean_pot": False}, "chosen_score": 1.0,
            "rejected_score": 0.0, "margin": 1.0, "prompt_version": "v"}


@pytest.fixture
def small(tmp_path):
    """A real dataset folder written by our own writer, without simulating (a `pairs` config only)."""
    out = tmp_path / "poolbench"
    out.mkdir()
    write_config(out, "pairs", {"train": [pair_row(0), pair_row(1)]}, "pairs", {"built_by": "test"})
    return out


def snapshot(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def leftovers(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.glob(f".{out.name}.*"))


def refusal(capsys, rc, *words) -> str:
    """Exit 2 and exactly one `error:` line holding every word, no traceback."""
    assert rc == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in errors[0], errors[0]
    return errors[0]


# 1. One writer per folder -------------------------------------------------------------------------------------

@pytest.mark.slow
def test_two_concurrent_builds_end_with_one_dataset_and_one_refusal(tmp_path):
    from poolbench_data.hub.folder import layout

    out = tmp_path / "poolbench"
    cmd = [sys.executable, str(ROOT / "builders" / "build_dataset.py"), "--output_dir", str(out), "--eval_n", "2",
           "--train_n", "0", "--players", "oracle,random", "--workers", "1"]
    procs = [subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = [(p.wait(timeout=400), *p.communicate()) for p in procs]
    assert sorted(rc for rc, _, _ in results) == [0, 2], results
    err = next(e for rc, _, e in results if rc == 2)
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: ") and "Traceback" not in err
    # The loser meets the winner's lock (or, had it started late, the finished folder).
    assert "another build is writing" in last or "already exists" in last, last
    assert layout(out) == {"scenarios": {"test": ["data/scenarios/test-00000.parquet"]},
                           "traces": {"test": ["data/traces/test-00000.parquet"]},
                           "episodes": {"test": ["data/episodes/test-00000.parquet"]}}
    assert len(read_rows(out, "scenarios", "test")) == 2 and len(read_rows(out, "traces", "test")) == 4
    assert leftovers(out) == []


def test_a_held_lock_refuses_builds_and_evals_at_once(tmp_path, capsys):
    from filelock import FileLock

    out = tmp_path / "poolbench"
    with FileLock(tmp_path / ".poolbench.lock"):
        rc = builder("build_dataset").main(["--output_dir", str(out), "--eval_n", "1", "--train_n", "0",
                                            "--players", "oracle", "--workers", "1"])
        refusal(capsys, rc, f"another build is writing {out}", "--output_dir")
        out.mkdir()
        rc = poolbench(["eval", "--dataset_dir", str(out), "--out", str(tmp_path / "eval")])
        refusal(capsys, rc, f"another build is writing {out}", "--dataset_dir")
    assert list(out.iterdir()) == [] and not (tmp_path / "eval").exists()


# 2 and 4. A file where a folder belongs, unwritable places, out-of-range values ---------------------------------

def test_a_file_at_output_dir_is_refused_before_work(tmp_path, capsys):
    out = tmp_path / "poolbench"
    out.write_text("precious")
    rc = builder("build_dataset").main(["--output_dir", str(out), "--overwrite", "--eval_n", "1", "--train_n", "0",
                                        "--players", "oracle", "--workers", "1"])
    refusal(capsys, rc, f"--output_dir {out} is a file", "choose another --output_dir")
    assert out.read_text() == "precious" and leftovers(out) == []


def test_a_file_at_dataset_dir_is_refused_by_pairs_and_eval(tmp_path, capsys):
    out = tmp_path / "poolbench"
    out.write_text("precious")
    refusal(capsys, builder("build_pairs").main(["--dataset_dir", str(out)]), f"--dataset_dir {out} is a file")
    refusal(capsys, poolbench(["eval", "--dataset_dir", str(out), "--out", str(tmp_path / "eval")]),
            f"--dataset_dir {out} is a file")
    assert out.read_text() == "precious" and leftovers(out) == [] and not (tmp_path / "eval").exists()


def test_a_file_at_the_dot_old_path_is_named_never_deleted(tmp_path, capsys):
    """A file at .NAME.old (older versions move a file at --output_dir there on --overwrite) is named, kept."""
    hidden = tmp_path / ".poolbench.old"
    hidden.write_text("precious")
    rc = builder("build_dataset").main(["--output_dir", str(tmp_path / "poolbench"), "--eval_n", "1",
                                        "--train_n", "0", "--players", "oracle", "--workers", "1"])
    refusal(capsys, rc, str(hidden), "mv ")
    assert hidden.read_text() == "precious" and not (tmp_path / "poolbench").exists()


def _unwritable_dir(tmp_path: Path) -> Path:
    d = tmp_path / "read-only"
    d.mkdir()
    d.chmod(0o500)
    for candidate in (d, Path("/sys")):  # root writes anywhere chmod allows; /sys refuses even root
        try:
            (candidate / ".probe").touch()
            (candidate / ".probe").unlink()
        except OSError:
            return candidate
    pytest.skip("no unwritable folder on this machine")


def test_output_dir_under_a_file_or_an_unwritable_folder_is_refused(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    args = ["--eval_n", "1", "--train_n", "0", "--players", "oracle", "--workers", "1"]
    build = builder("build_dataset").main
    refusal(capsys, build(["--output_dir", str(tmp_path / "afile" / "poolbench"), *args]),
            "--output_dir", f"{tmp_path / 'afile'} is a file")
    ro = _unwritable_dir(tmp_path)
    try:
        refusal(capsys, build(["--output_dir", str(ro / "poolbench"), *args]), "--output_dir", "cannot write in")
        assert not (ro / "poolbench").exists()
    finally:
        (tmp_path / "read-only").chmod(0o700)


@pytest.mark.parametrize("flag, value", [("--eval_seed", 2**70), ("--train_seed", 2**63), ("--eval_seed", -1)])
def test_seed_outside_int64_is_refused_naming_the_flag(tmp_path, capsys, flag, value):
    out = tmp_path / "poolbench"
    rc = builder("build_dataset").main(["--output_dir", str(out), "--eval_n", "1", "--train_n", "1",
                                        "--players", "oracle", "--workers", "1", flag, str(value)])
    refusal(capsys, rc, f"{flag} {value}", "[0, 2**63-1]")
    assert not out.exists()


def test_largest_int64_seed_passes_the_check():
    from poolbench_data.hub.build import check_split_seeds

    check_split_seeds(2**63 - 1, 0)


def test_damaged_shard_is_refused_before_generation(small, tmp_path, capsys):
    shard = small / "data" / "pairs" / "train-00000.parquet"
    shard.write_bytes(shard.read_bytes()[:-100])  # a truncated copy, e.g. a full disk
    rc = poolbench(["eval", "--dataset_dir", str(small), "--out", str(tmp_path / "eval")])
    refusal(capsys, rc, "--dataset_dir", "data/pairs/train-00000.parquet is damaged")
    refusal(capsys, builder("build_pairs").main(["--dataset_dir", str(small)]), "is damaged")
    assert not (tmp_path / "eval").exists()


# 3. The swap: killed at every step, the last good folder survives and the next run recovers ----------------------

DRIVER = r"""
import json, os, shutil, sys
from pathlib import Path
from poolbench_data.hub import update
from poolbench_data.hub.features import features
import datasets.utils.metadata, pyarrow.parquet  # imported once here, not again in every forked run
features("pairs")

cases, row, KILLED = Path(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
state = {"armed": False, "ops": 0, "kill": -1}
real = {name: getattr(os, name) for name in ("rename", "unlink", "rmdir")}

def faulty(name):
    def op(*a, **k):
        if state["armed"]:
            if state["ops"] == state["kill"]:
                os._exit(KILLED)
            state["ops"] += 1
        return real[name](*a, **k)
    return op

for name in real:
    setattr(os, name, faulty(name))
real_write_card = update.write_card

def write_card_then_arm(root):
    # The card is the last thing replace_rows writes: every file operation after it is the swap.
    real_write_card(root)
    state["armed"] = True

update.write_card = write_card_then_arm

def run(case, kill):
    pid = os.fork()
    if pid == 0:
        state["kill"] = kill
        update.replace_rows(case / "poolbench", "pairs", "train", [row], drop=lambda r: False)
        (case / "ops").write_text(str(state["ops"]))
        os._exit(0)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

shutil.copytree(cases / "base", cases / "full")
statuses = {"full": run(cases / "full", -1)}
for k in range(int((cases / "full" / "ops").read_text())):
    shutil.copytree(cases / "base", cases / str(k))
    statuses[k] = run(cases / str(k), k)
print(json.dumps(statuses))
"""


def test_a_kill_at_every_step_of_the_swap_loses_nothing(small, tmp_path, capsys):
    from datasets import load_dataset

    cases = tmp_path / "cases"
    (cases / "base").mkdir(parents=True)
    small.rename(cases / "base" / "poolbench")
    proc = subprocess.run([sys.executable, "-c", DRIVER, str(cases), json.dumps(pair_row(2)), str(KILLED)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    statuses = json.loads(proc.stdout.splitlines()[-1])
    before, after = snapshot(cases / "base" / "poolbench"), snapshot(cases / "full" / "poolbench")
    assert statuses.pop("full") == 0 and before != after
    kills = sorted(int(k) for k in statuses)
    assert all(statuses[str(k)] == KILLED for k in kills)
    for k in kills:
        out = cases / str(k) / "poolbench"
        if out.exists():
            assert snapshot(out) in (before, after), k
        else:  # between the two renames: both complete folders are beside it
            assert snapshot(out.parent / ".poolbench.old") == before, k
            assert after in [snapshot(p) for p in out.parent.glob(".poolbench.*") if p.is_dir()], k
        require_dataset(out)  # the next run (eval, build_pairs) finishes the swap first
        # Killed before the commit point (the first rename) the run is undone, after it finished.
        assert snapshot(out) == (before if k == 0 else after), k
        assert leftovers(out) == [], k
    assert "finishing the swap a killed run left" in capsys.readouterr().err
    # Three renames, the old folder's four files (card, eval.yaml, provenance, shard) and three folders, the lock
    # file: every one is a kill point.
    assert len(kills) == 11
    recovered = load_dataset(str(cases / "2" / "poolbench"), "pairs", split="train")
    assert [r["scenario_id"] for r in recovered] == ["pb1-000000", "pb1-000001", "pb1-000002"]


def test_an_interrupted_two_rename_swap_is_restored_and_its_staging_kept(small, tmp_path, capsys):
    """The two-rename swap of older versions (NAME -> .NAME.old, then .NAME.staging -> NAME), killed in
    between, leaves no folder: it is restored, and the staging folder is kept, never deleted."""
    import shutil

    before = snapshot(small)
    shutil.copytree(small, tmp_path / ".poolbench.staging")
    replace_rows(tmp_path / ".poolbench.staging", "pairs", "train", [pair_row(2)], drop=lambda r: False)
    newer = snapshot(tmp_path / ".poolbench.staging")
    small.rename(tmp_path / ".poolbench.old")
    assert require_dataset(small) == small
    note = capsys.readouterr().err
    assert snapshot(small) == before and snapshot(tmp_path / ".poolbench.staging") == newer
    assert f"mv {small} {small}.prev && mv {tmp_path / '.poolbench.staging'} {small}" in note
    assert leftovers(small) == [".poolbench.staging"]


def test_a_build_killed_while_staging_leaves_the_folder_and_is_cleaned_next_run(small, tmp_path):
    """A dead run's own staging folder is never complete: the next run removes it, nothing else."""
    before = snapshot(small)
    stale = tmp_path / ".poolbench.staging-999999-deadbeef"
    stale.mkdir()
    (stale / "README.md").write_text("half")
    (tmp_path / ".poolbench.lock").write_text("")  # left by a killed holder; flock died with it
    replace_rows(small, "pairs", "train", [pair_row(2)], drop=lambda r: False)
    assert len(read_rows(small, "pairs", "train")) == 3 and snapshot(small) != before
    assert leftovers(small) == []


# 5. Push: only the dataset's files; a dry run makes no network call -------------------------------------------

def _with_strays(folder: Path) -> None:
    (folder / "my_token.txt").write_text("hf_secret")
    (folder / "notes").mkdir()
    (folder / "notes" / "todo.md").write_text("x")
    (folder / ".git").mkdir()
    (folder / ".git" / "config").write_text("x")
    (folder / "data" / "pairs" / "train-00000.parquet.bak").write_bytes(b"x")
    (folder / "data" / "boards").mkdir()
    (folder / "data" / "boards" / "train-00000.parquet").write_bytes(b"x")


def test_push_plans_only_the_datasets_own_files_and_lists_the_rest(small, capsys):
    _with_strays(small)
    own = ["README.md", "data/pairs/train-00000.parquet", "eval.yaml", "provenance.json"]
    assert local_files(small) == own
    remote = [".gitattributes", "LICENSE", "README.md", "data/pairs/train-00001.parquet"]
    ops = plan_operations(small, remote)
    assert [(type(op).__name__, op.path_in_repo) for op in ops] == [
        *(("CommitOperationAdd", f) for f in own), ("CommitOperationDelete", "data/pairs/train-00001.parquet")]
    lines = push(small, "someone/poolbench", dry_run=True, remote_files=remote)
    printed = capsys.readouterr().out
    assert not any("my_token" in line for line in lines)
    assert ("not pushed (5, not dataset files): .git/, data/boards/train-00000.parquet, "
            "data/pairs/train-00000.parquet.bak, my_token.txt, notes/todo.md") in printed


def test_dry_run_makes_no_network_call(small):
    """The Hub's address points at a loopback listener that records every connection."""
    connections = []
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, socket.timeout):
                continue
            connections.append(conn.recv(200))
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    env = {**os.environ, "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": f"http://127.0.0.1:{server.getsockname()[1]}",
           "HF_TOKEN": "hf_not_a_real_token"}
    code = f"from poolbench_data.hub.push import push; push({str(small)!r}, 'someone/poolbench', dry_run=True)"
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    finally:
        stop.set()
        thread.join()
        server.close()
    assert proc.returncode == 0, proc.stderr
    assert connections == [] and time.perf_counter() - t0 < 30
    assert "no network call: assuming an empty repo" in proc.stdout and "add    README.md" in proc.stdout


@pytest.mark.slow
def test_a_terminated_build_removes_its_staging_folder_at_once(tmp_path):
    """SIGTERM (a scheduler stopping the job) mid-build: exit at once, nothing half-written left beside the
    output, and no output folder."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "poolbench"
    log = tmp_path / "stderr.txt"
    with open(log, "w") as err:
        proc = subprocess.Popen([sys.executable, str(Path(__file__).parents[1] / "builders" / "build_dataset.py"),
                                 "--output_dir", str(out), "--train_n", "2000", "--eval_n", "10", "--workers", "1"],
                                stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 120
        while not list(tmp_path.glob(".poolbench.staging-*")):  # staging has begun
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.2)
        time.sleep(2.0)
        proc.send_signal(signal.SIGTERM)
        # Seconds on an idle machine (9.7 s for the whole test). A SIGTERM landing in numba's compiler (a ctypes
        # callback, where the handler's exit is printed and dropped) ends the build at the next board instead: a
        # minute with a cold numba cache on a busy machine; without the re-check it would go on building.
        try:
            rc = proc.wait(timeout=240)
        except subprocess.TimeoutExpired:
            rc = "still running after 240 s"
        assert rc == 128 + signal.SIGTERM, log.read_text()[-3000:]
    finally:
        proc.kill()
    assert not out.exists() and list(tmp_path.glob(".poolbench.staging-*")) == []


def test_a_dataset_reached_through_a_symlink_is_updated_where_it_lives(small, tmp_path):
    # The swap renamed the link aside and then could not remove it ("Cannot call rmtree on a symbolic link").
    link = tmp_path / "elsewhere" / "poolbench"
    link.parent.mkdir()
    link.symlink_to(small)
    write_config(link, "pairs", {"train": [pair_row(5)]}, "pairs", {"built_by": "test"})
    assert link.is_symlink() and link.resolve() == small.resolve()
    assert [r["scenario_id"] for r in read_rows(small, "pairs", "train")] == ["pb1-000005"]
    assert leftovers(link) == [] and leftovers(small) == []


def test_a_stop_whose_exit_was_lost_is_raised_again_at_the_next_item():
    # A SystemExit raised by the handler inside a finalizer is printed and dropped; the build went on for minutes.
    import signal

    from poolbench_data.core.shutdown import stop_if_requested, terminate_as_exit

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as stopped:
        with terminate_as_exit():
            stop_if_requested()  # nothing asked yet
            try:
                os.kill(os.getpid(), signal.SIGTERM)
            except SystemExit:
                pass  # lost, as in a finalizer
            stop_if_requested()
            raise AssertionError("the loop went on after a stop")
    assert stopped.value.code == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before
    stop_if_requested()  # the request ends with its block


def test_a_stop_during_an_import_waits_for_the_import_to_finish(tmp_path, monkeypatch):
    # Raised inside panda3d's module initialisation (pooltool's first import), the exit crashed the build (SIGSEGV).
    import signal
    import sys
    import time

    from poolbench_data.core.shutdown import stop_if_requested, terminate_as_exit

    finished = tmp_path / "finished"
    (tmp_path / "slow_to_import.py").write_text(
        f"import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\nopen({str(finished)!r}, 'a').write('x')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SystemExit) as stopped:
        with terminate_as_exit():
            import slow_to_import  # noqa: F401
            stop_if_requested()
            raise AssertionError("the loop went on after a stop")
    assert stopped.value.code == 128 + signal.SIGTERM
    assert finished.read_text() == "x"  # the stop did not cut the module's initialisation short
    sys.modules.pop("slow_to_import", None)
    with pytest.raises(SystemExit) as stopped:  # a stop deferred past the block's last check ends the block
        with terminate_as_exit():
            import importlib
            importlib.import_module("slow_to_import")
    assert stopped.value.code == 128 + signal.SIGTERM and finished.read_text() == "xx"
    sys.modules.pop("slow_to_import", None)
    with pytest.raises(SystemExit) as stopped:  # no check after the import: the signal comes again
        with terminate_as_exit():
            importlib.import_module("slow_to_import")
            time.sleep(5.0)
            raise AssertionError("the stop was never raised")
    assert stopped.value.code == 128 + signal.SIGTERM and finished.read_text() == "xxx"
    sys.modules.pop("slow_to_import", None)


def test_an_error_that_replaces_the_stop_leaves_with_the_stop_status():
    # numba, stopped mid-compile, raised RuntimeError from its cleanup: the build exited 1, not 143.
    import signal

    from poolbench_data.core.shutdown import terminate_as_exit

    with pytest.raises(SystemExit) as stopped:
        with terminate_as_exit():
            try:
                os.kill(os.getpid(), signal.SIGTERM)
            except SystemExit:
                raise RuntimeError("no compiled object yet")
    assert stopped.value.code == 128 + signal.SIGTERM
    assert isinstance(stopped.value.__cause__, RuntimeError)
    with pytest.raises(ValueError):  # without a stop, an error is itself
        with terminate_as_exit():
            raise ValueError("x")
