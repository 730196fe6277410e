"""`poolbench compare`: before/after from two llm_traces.jsonl files, McNemar (`report.compare.compare_runs`)."""

from __future__ import annotations

from poolbench_data.report.compare import CompareConfig as CONFIG


def run(config: CONFIG) -> int:
    from poolbench_data.report.compare import compare_runs

    compare_runs(config)
    return 0
