"""An ordered process pool that streams: bounded memory at any N.

pooltool is pure Python plus numba; processes scale, threads do not.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor


def _init_worker():
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def imap_bounded(fn, items: Iterable, workers: int, in_flight: int = 4) -> Iterator:
    """Ordered parallel map that keeps at most workers * in_flight tasks
    queued, so a 100,000-scenario run streams in bounded memory.
    spawn: a forked child would inherit tqdm's monitor thread and locks."""
    from collections import deque

    with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"), initializer=_init_worker) as ex:
        queue: deque = deque()
        for item in items:
            queue.append(ex.submit(fn, item))
            if len(queue) >= workers * in_flight:
                yield queue.popleft().result()
        while queue:
            yield queue.popleft().result()


def default_workers() -> int:
    return max(1, min(os.cpu_count() or 1, 8))
