"""The train boards on which a model's sampled answers score differently: where GRPO can learn.

GRPO's advantage is relative within a board's rollouts, so a board whose rollouts all score the same gives no
gradient at the cost of a full step, and over all train boards most one-board steps are such
(docs/results.md#what-the-preference-data-carries). A `poolbench eval --tools --samples K` run on train boards
says beforehand which boards spread: those whose samples' physics levels (`pairs.text.physics_score`, the levels
GRPO's reward gives) are not all equal.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from pathlib import Path

from poolbench_data.players.traces import load_traces
from poolbench_data.pairs.text import NO_ANSWER, physics_score

logger = logging.getLogger("poolbench.grpo")


def boards_with_spread(traces: Iterable[Mapping], train_ids: Iterable[str]) -> dict[str, list[float]]:
    """{board id: its samples' levels} for the boards whose levels differ, in `train_ids` order. A trace of a
    board outside `train_ids`, a failed request or a board sampled once is an error: the selection would be
    computed from something other than the sampled policy on these boards."""
    levels: dict[str, list[float]] = {}
    for i, row in enumerate(traces, 1):
        if row.get("parse_status") in NO_ANSWER:
            raise ValueError(f"trace {i} (board {row.get('scenario_id')!r}): the request failed, so the board's "
                             "spread is unknown; rerun the eval")
        levels.setdefault(row["scenario_id"], []).append(physics_score(row))
    ids = list(train_ids)
    foreign = sorted(set(levels) - set(ids))
    if foreign:
        raise ValueError(f"{len(foreign)} sampled boards are not train boards of this dataset (e.g. "
                         f"{foreign[0]!r}); sample with the dataset's train seed and --n")
    once = sorted(b for b, v in levels.items() if len(v) < 2)
    if once:
        raise ValueError(f"{len(once)} boards were sampled once (e.g. {once[0]!r}); a spread needs --samples 2 "
                         "or more")
    return {b: levels[b] for b in ids if b in levels and len(set(levels[b])) > 1}


def only_spread(train_dataset, folder: str):
    """The rows of `train_dataset` (a `datasets.Dataset` with `id`) whose samples in `folder` (its
    llm_traces.jsonl) scored differently, with a log line of the selection (GRPO's `--spread_from`)."""
    fix = "give the --out folder of `poolbench eval --tools --samples K` on the train boards"
    try:
        traces = load_traces(Path(folder) / "llm_traces.jsonl", fix)
        spread = boards_with_spread(traces, train_dataset["id"])
    except (OSError, ValueError) as exc:
        raise ValueError(f"spread_from {folder}: {exc}") from None
    if not spread:
        raise ValueError(f"spread_from {folder}: no board's samples scored differently, so GRPO has nothing to "
                         "compare. Fix: sample more answers a board (--samples) or at a higher --temperature")
    logger.info("spread_from %s: %d of %d sampled boards scored differently", folder, len(spread),
                len({t["scenario_id"] for t in traces}))
    return train_dataset.filter(lambda row: row["id"] in spread)
