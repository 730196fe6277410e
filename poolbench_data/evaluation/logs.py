"""Quiet by default: engine logs (vLLM, torch, the engine's worker
processes) go to a file; the terminal gets progress bars and the report."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def engine_logs(path: Path, verbose: bool = False):
    """Send everything written to the process's stdout and stderr (file
    descriptors 1 and 2, which spawned workers inherit) to `path`; yield a
    stream on the real terminal for progress bars."""
    if verbose:
        yield sys.stderr
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    terminal = os.fdopen(os.dup(saved[2]), "w", buffering=1)
    py_out, py_err = sys.stdout, sys.stderr
    with open(path, "ab") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield terminal
        finally:
            for stream in (py_out, py_err):
                stream.flush()
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)
            terminal.close()
