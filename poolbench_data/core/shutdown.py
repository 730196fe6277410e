"""SIGTERM as an exit: `finally` blocks and context managers run (staging folders are removed, vLLM's engine
processes are shut down) instead of the process vanishing and leaving them behind.

The handler's SystemExit can be lost: raised while the interpreter runs a finalizer it is printed and dropped,
and a library's cleanup may replace it (numba, stopped mid-compile, raises RuntimeError instead). So the request
is also remembered: long loops call `stop_if_requested()` between items, and an error that ends the block after
a stop was asked for leaves as the stop's exit status. A SIGTERM that lands while a module is being imported is
remembered and sent again 0.2 s later, until it lands outside an import: an exception raised inside an
extension's module initialisation left panda3d (which pooltool imports on the first simulation) half-initialised,
and it asserted and died of SIGSEGV, leaving its staging folder."""

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
        if _importing(frame):  # asked again shortly, while this handler is still the one set
            again = threading.Timer(0.2, lambda: signal.getsignal(signum) is stop and os.kill(os.getpid(), signum))
            again.daemon = True
            again.start()
            return
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
        stop_if_requested()  # a stop deferred past the block's last check
    except Exception as e:
        if _requested:
            raise SystemExit(128 + _requested[0]) from e
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
        _requested.clear()


def _importing(frame) -> bool:
    """Whether the interrupted code runs inside an import (importlib's frames are on its stack)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


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
