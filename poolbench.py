"""PoolBench for verifiers (extra `verifiers`): `vf-eval poolbench ...` imports the module named by the taskset
id and takes the Taskset, Harness and Env subclasses it exports; `load_environment(**kwargs)` builds the same
environment in Python. The environment lives in poolbench_data.cli.verifiers_env."""

from poolbench_data.cli.verifiers_env import PoolBenchEnv, PoolBenchHarness, PoolBenchTaskset, load_environment

__all__ = ["PoolBenchTaskset", "PoolBenchHarness", "PoolBenchEnv", "load_environment"]
