"""SIGTERM as an exit: `finally` blocks and context managers run (staging folders are removed, vLLM's engine
processes are shut down) instead of the process vanishing and leaving them behind.

The handler's SystemExit can be lost: raised while the interpreter runs a finalizer it is printed and dropped,
and a library's cleanup may replace it (numba, stopped mid-compile, raises RuntimeError instead). So the request
is also remembered: long loops call `stop_if_requested()` between items, and an error that ends the block after
a stop was asked for leaves as the stop's exit status."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from contextlib import contextmanager

_requested: list[int] = []  # the signal that asked this process to stop, while a terminate_as_exit block runs


def stop_if_requested() -> None:
    """Raise the exit a SIGTERM asked for, if one did and it has not ended the process yet."""
    if _requested:
        raise SystemExit(128 + _requested[0])


@contextmanager
def terminate_as_exit():
    """Within the block, SIGTERM (a scheduler's stop, `kill`) raises SystemExit(143). Only the main thread may set
    handlers; elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        _requested.append(signum)
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    except Exception as e:
        if _requested:
            raise SystemExit(128 + _requested[0]) from e
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
        _requested.clear()


def stop_group(proc: subprocess.Popen, grace_s: float) -> None:
    """Stop a child started with `start_new_session=True` and everything it started: SIGTERM to its process
    group, SIGKILL to whatever of the group is left after `grace_s`."""

    def alive() -> bool:
        proc.poll()  # reap the leader: a zombie still counts as a member of its group
        try:
            os.killpg(proc.pid, 0)
            return True
        except ProcessLookupError:
            return False

    if alive():
        os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    if alive():
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
