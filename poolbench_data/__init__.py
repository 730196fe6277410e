"""PoolBench data: seeded pool scenarios, pooltool physics, scoring, datasets.

Heavy dependencies (vllm, torch, trl) are imported lazily inside the modules
that need them, so the core (scenarios, physics, scoring, datasets) runs
without them.
"""

__version__ = "0.1.0"


def _keep_numba_cache() -> None:
    """pooltool's numba code compiles for ~40 s and caches next to its
    sources. Where site-packages is read-only the cache would be lost with
    every process, so point numba at a user cache instead."""
    import importlib.util
    import os

    if "NUMBA_CACHE_DIR" in os.environ:
        return
    spec = importlib.util.find_spec("pooltool")
    if spec and spec.origin and not os.access(os.path.dirname(spec.origin), os.W_OK):
        os.environ["NUMBA_CACHE_DIR"] = os.path.join(os.path.expanduser("~"), ".cache", "poolbench", "numba")


_keep_numba_cache()
