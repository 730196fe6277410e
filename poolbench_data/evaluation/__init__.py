"""Evaluation as a library: a frozen config in, a result out (as lm-evaluation-harness's `simple_evaluate`).

    from poolbench_data.evaluation import EvalConfig, evaluate
    result = evaluate(EvalConfig(n=10, out="results/ten"))
    print(result.report)
    result.summary[result.name]["overall"]["clean_pot"]

`poolbench eval` and `poolbench score` are thin wrappers over `evaluate`.
"""

from poolbench_data.evaluation.config import EvalConfig
from poolbench_data.evaluation.run import EvalResult, evaluate

__all__ = ["EvalConfig", "EvalResult", "evaluate"]
