"""`poolbench eval`: a model and the baselines on the same boards, one report (`evaluation.evaluate`)."""

from __future__ import annotations

import sys

from poolbench_data.evaluation.config import EvalConfig as CONFIG


def run(config: CONFIG) -> int:
    from poolbench_data.evaluation import evaluate

    return exit_code(evaluate(config))


def exit_code(result) -> int:
    """1, with the reason on stderr, when too many of the model's requests failed; else 0."""
    if not result.incomplete:
        return 0
    failed = result.results["request_failures"]
    kept = " and nothing was added to --dataset_dir" if result.config.dataset_dir else ""
    print(f"error: {failed['text']}; the results in {result.out}/ are marked incomplete{kept}. First failure: "
          f"{failed['example']}", file=sys.stderr)
    return 1
