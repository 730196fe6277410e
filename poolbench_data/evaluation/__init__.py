"""Evaluation as a library: a frozen config in, a result out (as lm-evaluation-harness's `simple_evaluate`).

    from poolbench_data.evaluation import EvalConfig, evaluate
    result = evaluate(EvalConfig(n=10, out="results/ten"))
    print(result.report)
    result.summary[result.name]["overall"]["clean_pot"]

With `EvalConfig(game="nineball")` (or `nineball-seeded`, `runout`) the model plays a game beside the game's
baselines and `evaluate` returns a GameEvalResult (evaluation.game_eval; docs/games.md).

The same shape for the baselines alone (`baselines(BaselineConfig)`), the angle-rounding ablation
(`rounding(RoundingConfig)`) and stored responses scored again (`rescore(ScoreConfig)`, an `evaluate` with the
replay backend). `poolbench eval`, `baseline`, `rounding` and `score` are thin wrappers over them.
"""

from poolbench_data.evaluation.baselines import BaselineConfig, BaselineResult, baselines
from poolbench_data.evaluation.config import EvalConfig
from poolbench_data.evaluation.game_eval import GameEvalResult
from poolbench_data.evaluation.rescore import ScoreConfig, rescore
from poolbench_data.evaluation.rounding import RoundingConfig, RoundingResult, rounding
from poolbench_data.evaluation.run import EvalResult, evaluate

__all__ = ["BaselineConfig", "BaselineResult", "EvalConfig", "EvalResult", "GameEvalResult", "RoundingConfig",
           "RoundingResult", "ScoreConfig", "baselines", "evaluate", "rescore", "rounding"]
