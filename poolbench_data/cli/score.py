"""`poolbench score`: stored responses re-scored offline (`evaluation.rescore`)."""

from __future__ import annotations

from poolbench_data.evaluation.rescore import ScoreConfig as CONFIG


def run(config: CONFIG) -> int:
    from poolbench_data.cli.eval import exit_code
    from poolbench_data.evaluation.rescore import rescore

    return exit_code(rescore(config))
