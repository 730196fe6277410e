"""Ordered parallel maps that stream: bounded memory at any N.

Two executors, chosen by name (EXECUTORS): `local`, a process pool on this
machine, and `ray`, tasks on a Ray cluster (past one machine). pooltool is
pure Python plus numba; processes scale, threads do not. Each local worker
holds ~350 MB, so there are never more workers than cores, and a worker ends
when its parent does (a killed builder must not leave them behind). A local
worker never imports the caller's main module, so a plain script (no
`if __name__ == "__main__":` guard, or read from stdin) can call the library.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import sys
import threading
import time
import types
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor

PARENT_POLL_S = 0.2


def cores() -> int:
    """The cores this process may run on (its affinity mask, as taskset and
    container CPU sets restrict it), not the machine's."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


# The worker count that 0 stands for where set: a process that already has one core of a machine shared with
# others (one of a test runner's workers, a job among several) plays its boards itself instead of spawning
# processes that would only compete with the others for the same cores.
WORKERS_ENV = "POOLBENCH_WORKERS"


def resolve_workers(requested: int) -> int:
    """--workers as every command reads it: 0 = one per core (or POOLBENCH_WORKERS where set); more than the
    cores only adds memory, so it is capped there."""
    if isinstance(requested, bool) or not isinstance(requested, int) or requested < 0:
        raise ValueError(f"--workers must be >= 0 (0: one per core), got {requested!r}")
    return min(requested or _default_from_env() or cores(), cores())


def _default_from_env() -> int:
    value = os.environ.get(WORKERS_ENV, "")
    if not value:
        return 0
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{WORKERS_ENV}={value!r}: give a whole number of worker processes (1 or more), or unset "
                         "it for one per core")
    return int(value)


def default_workers() -> int:
    return resolve_workers(0)


def _exit_with_parent(parent: int) -> None:
    # A worker blocks on a queue whose write end it holds itself, so it never
    # sees its parent die. Polling getppid() survives SIGKILL of the parent
    # (PR_SET_PDEATHSIG would fire when the *thread* that spawned us ends).
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


def _init_worker(parent: int):
    threading.Thread(target=_exit_with_parent, args=(parent,), name="exit-with-parent", daemon=True).start()


# The workers are the parallelism: a worker's numpy would otherwise start a
# BLAS thread per core, and 2 workers would run 4 busy threads on 2 cores (more
# CPU for the same boards). Set only while a worker is spawned (the child reads
# them at start; by its initializer numpy is loaded), and never over a value the
# user set.
_ONE_THREAD = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@contextlib.contextmanager
def _one_thread_each():
    added = [k for k in _ONE_THREAD if k not in os.environ]
    os.environ.update({k: "1" for k in added})
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


# Held while the main module is hidden: one thread at a time swaps it out, and puts back what it found.
_HIDING = threading.RLock()


@contextlib.contextmanager
def main_module_hidden():
    """sys.modules["__main__"] as a module with no file and no spec inside the block, one thread at a time.
    multiprocessing's spawn (and forkserver) hands a child the main module's path or name, and the child runs it
    again as `__mp_main__`: a script without an `if __name__ == "__main__":` guard then starts its own work in
    every worker (which refuses to start processes while importing: RuntimeError, BrokenProcessPool), and a
    script read from stdin names a file `<stdin>` that does not exist. What a worker runs is the library's own
    functions and records, so it needs nothing from the caller's main module. The vLLM engine starts its
    processes under it too (llm.vllm_backend)."""
    with _HIDING:
        main = sys.modules["__main__"]
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            yield
        finally:
            sys.modules["__main__"] = main


class _WorkerProcess(mp.context.SpawnProcess):
    """A spawned pool worker: one BLAS thread, and the caller's main module not imported (one worker spawned at
    a time: the environment is changed inside main_module_hidden's lock)."""

    @staticmethod
    def _Popen(process_obj):
        with main_module_hidden(), _one_thread_each():
            return mp.context.SpawnProcess._Popen(process_obj)


class _WorkerContext(mp.context.SpawnContext):
    """spawn, whose processes are _WorkerProcess: a forked child would inherit tqdm's monitor thread and locks."""

    Process = _WorkerProcess


def imap_bounded(fn, items: Iterable, workers: int, in_flight: int = 16) -> Iterator:
    """Ordered parallel map that keeps at most workers * in_flight tasks
    queued, so a 100,000-scenario run streams in bounded memory. The window
    is wide because results come out in order: a board whose search runs
    long holds the head, and the other workers keep going meanwhile (4 a
    worker left them idle behind it; a result is ~10 KB). `fn` and the items
    are pickled by reference to their modules: never the caller's main module
    (_WorkerProcess)."""
    from collections import deque

    items = iter(items)
    with ProcessPoolExecutor(workers, mp_context=_WorkerContext(), initializer=_init_worker,
                             initargs=(os.getpid(),)) as ex:
        queue: deque = deque()
        for item in items:
            queue.append(ex.submit(fn, item))
            if len(queue) >= workers * in_flight:
                yield queue.popleft().result()
        while queue:
            yield queue.popleft().result()


def imap_ray(fn, items: Iterable, workers: int, in_flight: int = 4, address: str | None = None) -> Iterator:
    """Ordered map over Ray tasks, at most (cluster CPUs or workers) * in_flight
    pending. Without `address`, a local Ray instance with `workers` CPUs is
    started and stopped here; a running instance (ray.init by the caller) is
    used as it is."""
    from collections import deque

    ray = _import_ray()
    started = not ray.is_initialized()
    watcher = None
    if started:
        import logging

        ray.init(address=address or None, num_cpus=None if address else workers, include_dashboard=False,
                 log_to_driver=False, logging_level=logging.ERROR)
        if not address:  # a local instance is ours: it must not outlive us, even SIGKILLed (players.reaper)
            watcher = _watch_local_ray(ray)
    try:
        slots = int(ray.cluster_resources().get("CPU", workers)) if address else workers
        task = ray.remote(num_cpus=1)(fn)
        queue: deque = deque()
        for item in items:
            queue.append(task.remote(item))
            if len(queue) >= max(1, slots) * in_flight:
                yield ray.get(queue.popleft())
        while queue:
            yield ray.get(queue.popleft())
    finally:
        if started:
            ray.shutdown()
        if watcher is not None:
            watcher.stdin.close()  # the watch ends: it reaps anything shutdown left, and exits
            watcher.wait(timeout=30)


def _watch_local_ray(ray):
    import psutil

    from poolbench_data.players.reaper import watch

    session = ray._private.worker._global_node.get_session_dir_path()
    return watch([p.pid for p in psutil.Process().children(recursive=True)], session)


def _import_ray():
    try:
        import ray
    except ImportError:
        raise ValueError("--executor ray needs Ray: pip install 'poolbench-data[ray]' (or choose --executor local)") \
            from None
    return ray


EXECUTORS = ("local", "ray")


def check_executor(executor: str, address: str | None = None) -> str:
    """--executor and --ray_address, checked before any work."""
    if executor not in EXECUTORS:
        raise ValueError(f"--executor {executor!r} is not one of {', '.join(EXECUTORS)}")
    if address and executor != "ray":
        raise ValueError(f"--ray_address {address!r} needs --executor ray")
    if executor == "ray":
        _import_ray()
        if address == "auto":
            found = resolve_auto()
            if found != "local":  # RAY_ADDRESS=local: a local instance, started when the work starts
                probe_ray_address(found, shown=f"auto (found {found})")
        elif address:
            probe_ray_address(address)
    return executor


def resolve_auto(address: str = "auto") -> str:
    """The head `--ray_address auto` means, found as Ray finds it (RAY_ADDRESS, else the cluster `ray start`
    recorded on this machine, else any running head here), without connecting; none is one error naming our
    flag (Ray's own names its `--address` flag, and comes only once ray.init runs, after work started)."""
    from ray._private.services import get_ray_address_from_environment

    try:
        return get_ray_address_from_environment(address, None)
    except ConnectionError:
        raise ValueError("--ray_address auto: no running Ray cluster found on this machine (RAY_ADDRESS is unset "
                         "and no `ray start --head` is running); start one with `ray start --head`, pass its "
                         "address, or leave --ray_address out for a local instance") from None


RAY_CONNECT_S = 5.0  # Ray itself retries an absent head for minutes


def probe_ray_address(address: str, timeout: float = RAY_CONNECT_S, shown: str | None = None) -> None:
    """A TCP connection to the head's host:port (GCS or ray:// client), within `timeout`; else one clear error
    (naming --ray_address as `shown`, by default the address)."""
    shown = shown or address
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(address if "://" in address else f"//{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host = port = None
    if not host or not port:
        raise ValueError(f"--ray_address {shown!r} is not host:port (or ray://host:port, or auto)")
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or type(exc).__name__)
        raise ValueError(f"--ray_address {shown}: no Ray head answers at {host}:{port} ({reason} within "
                         f"{timeout:.0f} s); start one with `ray start --head` and pass the address it prints, "
                         "or use --executor local") from None


def imap(fn, items: Iterable, workers: int, executor: str = "local", address: str | None = None) -> Iterator:
    """Ordered map on the chosen executor; one local worker runs in this process."""
    if executor == "ray":
        return imap_ray(fn, items, workers, address=address)
    if workers <= 1:
        return map(fn, items)
    return imap_bounded(fn, items, workers)
