"""`poolbench baseline`: the Oracle, Heuristic and Random baselines, the paper's table (`evaluation.baselines`)."""

from __future__ import annotations

from poolbench_data.evaluation.baselines import BaselineConfig as CONFIG


def run(config: CONFIG) -> int:
    from poolbench_data.evaluation.baselines import baselines

    baselines(config)
    return 0
