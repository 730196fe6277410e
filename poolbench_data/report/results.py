"""The results JSON in lm-evaluation-harness's shape (`--output_path`), the
per-shot sample log (`--log_samples`), and pass@k over repeated samples.

Keys follow lm-eval: `results[task]["<metric>,<filter>"]`, `higher_is_better`,
`n-samples`, `config`, `versions`, `git_hash`, `total_evaluation_time_seconds`.
Each metric also carries its Wilson interval (`<metric>_ci,none`) and count
(`<metric>_n,none`); one task per category (`poolbench_<category>`) beside the
whole `poolbench`. Pure: records in, dicts out.
"""

from __future__ import annotations

import hashlib
import math
import subprocess
from collections.abc import Sequence
from pathlib import Path

from poolbench_data.core.records import CATEGORIES
from poolbench_data.report.stats import wilson

TASK = "poolbench"
FILTER = "none"  # lm-eval's filter name for unfiltered answers
# metric -> higher is better; parseable: the response held an action that was fired.
HIGHER_IS_BETTER = {"legal_contact": True, "own_potted": True, "foul": False, "opp_or_8_potted": False,
                    "clean_pot": True, "parseable": True}


def _value(rec, metric: str) -> bool:
    if metric == "parseable":
        return rec.shot is not None
    return bool(getattr(rec.metrics, metric))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): the chance that k of n samples,
    c of them correct, hold at least one correct."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def metric_block(records: Sequence, samples: int) -> dict:
    """Per metric: the mean over shots, its Wilson interval and n; with
    repeated samples also pass@k per board (k = samples), averaged."""
    out: dict = {}
    n = len(records)
    by_board: dict[str, list] = {}
    for r in records:
        by_board.setdefault(r.scenario_id, []).append(r)
    for metric in HIGHER_IS_BETTER:
        k = sum(_value(r, metric) for r in records)
        lo, hi = wilson(k, n)
        out[f"{metric},{FILTER}"] = k / n if n else None
        out[f"{metric}_ci,{FILTER}"] = [lo, hi]
        out[f"{metric}_n,{FILTER}"] = n
        if samples > 1 and HIGHER_IS_BETTER[metric]:
            scores = [pass_at_k(len(rs), sum(_value(r, metric) for r in rs), samples) for rs in by_board.values()]
            out[f"{metric}_pass@{samples},{FILTER}"] = sum(scores) / len(scores) if scores else None
    return out


def results_json(records: Sequence, *, player: str, baselines: dict[str, Sequence], config: dict, versions: dict,
                 boards: int, boards_total: int, total_s: float) -> dict:
    """The whole results document for one model and the baselines on the same boards."""
    samples = int(config.get("sampling", {}).get("samples", 1))
    results = {TASK: {"alias": TASK, **metric_block(records, samples)}}
    for cat in CATEGORIES:
        mine = [r for r in records if r.category == cat]
        if mine:
            results[f"{TASK}_{cat}"] = {"alias": f" - {cat}", **metric_block(mine, samples)}
    return {
        "results": results,
        "groups": {TASK: {"alias": TASK}},
        "group_subtasks": {TASK: [t for t in results if t != TASK]},
        "higher_is_better": {t: dict(HIGHER_IS_BETTER) for t in results},
        "n-samples": {TASK: {"original": boards_total, "effective": boards}},
        "n-shot": {TASK: config.get("sampling", {}).get("few_shot", 0)},
        "baselines": {name: {TASK: metric_block(recs, 1)} for name, recs in baselines.items()},
        "model_name": player,
        "config": config,
        "versions": versions,
        "git_hash": git_hash(),
        "total_evaluation_time_seconds": str(round(total_s, 2)),
    }


def prompt_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def git_hash() -> str | None:
    """The repository's revision when run from a checkout (lm-eval records it too)."""
    root = Path(__file__).resolve().parents[2]
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def sample_row(trace_row: dict, index: int) -> dict:
    """One --log_samples line: lm-eval's doc_id/target/resps/filtered_resps
    around our trace row (raw response, parsed action, parse status, events, metrics)."""
    return {"doc_id": index, "doc": {"scenario_id": trace_row["scenario_id"], "category": trace_row["category"]},
            "target": {"ball": trace_row["oracle_target_ball"], "pocket": trace_row["oracle_target_pocket"]},
            "resps": [[trace_row["raw_response"]]], "filtered_resps": [trace_row["action"]], **trace_row}
