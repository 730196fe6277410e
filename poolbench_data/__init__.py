"""PoolBench data: seeded pool scenarios, pooltool physics, scoring, datasets.

Heavy dependencies (vllm, torch, trl) are imported lazily inside the modules
that need them, so the core (scenarios, physics, scoring, datasets) runs
without them.
"""

__version__ = "0.1.0"
