"""`poolbench serve-env`: PoolBench's games as an OpenEnv environment server (`rl.serving.serve_env`)."""

from __future__ import annotations

from poolbench_data.rl.serving import ServeEnvConfig as CONFIG


def run(config: CONFIG) -> int:
    from poolbench_data.rl.serving import serve_env

    return serve_env(config)
