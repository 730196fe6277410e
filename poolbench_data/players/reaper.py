"""A local Ray instance dies with the process that started it, even a SIGKILLed one.

`ray.shutdown()` stops the instance when the driver ends normally. A SIGKILLed
driver runs no code: Ray's raylet follows it, but its agents (dashboard and
runtime-env agents) only notice the raylet is gone after their health-check
timeout, about a minute. So, right after `ray.init`, a small watcher process
holds the read end of a pipe whose only write end is the driver's: the
kernel closes it when the driver dies, however it dies, and the watcher then
kills what the driver started (each process checked by its start time, so a
reused pid is never touched), their children first, and every process whose
command line names the instance's session folder (the agents, reparented once
the raylet is gone), and exits.

    python -m poolbench_data.players.reaper SESSION_DIR PID:START ...   # started by watch(), not by hand
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys


def _started(pid: int) -> float | None:
    import psutil

    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def watch(pids: list[int], session_dir: str = "") -> subprocess.Popen:
    """Start the watcher for `pids` (e.g. the processes of a Ray instance this process just started) and the
    processes naming `session_dir`; it kills them when this process dies. Closing the returned process's stdin
    ends the watch the same way."""
    marks = [f"{pid}:{t!r}" for pid in pids if (t := _started(pid)) is not None]
    # Its own session: a Ctrl-C to the driver's process group must not end the watcher before it has worked.
    return subprocess.Popen([sys.executable, "-m", "poolbench_data.players.reaper", session_dir, *marks],
                            stdin=subprocess.PIPE, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def reap(session_dir: str, marks: list[str]) -> None:
    """Kill each still-running process of `marks` (PID:START) and its descendants, descendants first, and every
    process whose command line holds `session_dir` (none when it is empty)."""
    import psutil

    procs = []
    if session_dir:
        for p in psutil.process_iter(["cmdline"]):
            if p.pid != os.getpid() and any(session_dir in arg for arg in p.info["cmdline"] or ()):
                procs.append(p)
    for mark in marks:
        pid, start = mark.split(":", 1)
        try:
            p = psutil.Process(int(pid))
            if p.create_time() == float(start):  # the same process, not a reused pid
                procs += [*p.children(recursive=True), p]
        except psutil.Error:
            continue
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=5)


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while os.read(sys.stdin.fileno(), 4096):  # until EOF: the driver closed the pipe, or died
        pass
    reap(argv[0], argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
