"""SIGTERM as an exit: `finally` blocks and context managers run (staging folders are removed, vLLM's engine
processes are shut down) instead of the process vanishing and leaving them behind."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager


@contextmanager
def terminate_as_exit():
    """Within the block, SIGTERM (a scheduler's stop, `kill`) raises SystemExit(143). Only the main thread may set
    handlers; elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
