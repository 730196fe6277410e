"""`poolbench baseline`: the Oracle, Heuristic and Random baselines, the paper's table (`evaluation.baselines`);
with --game, a game's baselines played alone (`evaluation.game_baselines`)."""

from __future__ import annotations

from poolbench_data.evaluation.baselines import BaselineConfig as CONFIG


def run(config: CONFIG) -> int:
    if config.game != "shot":
        from poolbench_data.evaluation.game_baselines import game_baselines

        game_baselines(config)
        return 0
    from poolbench_data.evaluation.baselines import baselines

    baselines(config)
    return 0
