"""`poolbench rounding`: the angle-rounding ablation on the Oracle, the paper's H1 (`evaluation.rounding`)."""

from __future__ import annotations

from poolbench_data.evaluation.rounding import RoundingConfig as CONFIG


def run(config: CONFIG) -> int:
    from poolbench_data.evaluation.rounding import rounding

    rounding(config)
    return 0
