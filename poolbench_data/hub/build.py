"""Build the benchmark dataset (configs `scenarios` and `traces`, and `episodes` where an EpisodePlan asks for
them), in one piece or as the I-th of K shards that hub.shards merges into the same bytes."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

from poolbench_data.boards.splits import EVAL_SEED, EVAL_SPLITS
from poolbench_data.core.records import STOPPED_EARLY, Metrics
from poolbench_data.core.vocab import MAX_SEED  # base_seed is an int64 column: checked before simulating
from poolbench_data.hub.card import write_card
from poolbench_data.hub.episodes import EpisodePlan, write_episodes
from poolbench_data.hub.folder import ShardWriter, staged_folder, write_provenance
from poolbench_data.hub.rows import baseline_trace_rows, scenario_row
from poolbench_data.players import DEFAULT_BASELINES, check_players
from poolbench_data.report.provenance import provenance
from poolbench_data.report.tables import format_table, summarize
from poolbench_data.players.play import run_baselines
from poolbench_data.players.pool import check_executor
from poolbench_data.boards.generate import iter_specs

EVAL_SPLIT, TRAIN_SPLIT = EVAL_SPLITS[0], "train"
SHARD_FILE = "shard.json"  # what a shard folder holds beside its rows (hub.shards)


def check_split_seeds(eval_seed: int, train_seed: int) -> None:
    """Training scenarios must never share a base seed with the evaluation set,
    and both seeds must fit the dataset's int64 column."""
    if eval_seed == train_seed:
        raise ValueError(f"train_seed={train_seed} equals eval_seed: training scenarios would leak the "
                         f"evaluation boards; choose a different train_seed")
    for name, seed in (("eval_seed", eval_seed), ("train_seed", train_seed)):
        if not 0 <= seed <= MAX_SEED:
            raise ValueError(f"--{name} {seed} is outside [0, 2**63-1] (the dataset stores it as int64); "
                             f"choose a seed in that range")


def check_shard(shard: tuple[int, int]) -> tuple[int, int]:
    i, k = shard
    if not 0 <= i < k:
        raise ValueError(f"--shard {i}/{k}: write I/K with 0 <= I < K, e.g. --shard 0/4 for the first of four")
    return i, k


def shard_range(n: int, shard: tuple[int, int]) -> tuple[int, int]:
    """Scenario indices [lo, hi) of shard I of K: index ranges, so scenario k
    is the same board however the build is cut."""
    i, k = shard
    return n * i // k, n * (i + 1) // k


def results_table(trace_rows: Sequence[dict], players: Sequence[str]) -> str:
    """The test split's baseline table, from trace rows (so a merge of shards
    writes the one-piece build's table)."""
    records = [SimpleNamespace(player=r["player"], category=r["category"], metrics=Metrics.from_row(r),
                               sims=r["decision_sims"]) for r in trace_rows]
    return format_table(summarize(records, players))


def build_benchmark(out: Path, *, eval_n: int = 50, eval_seed: int = EVAL_SEED, train_n: int = 0, train_seed: int = 1,
                    players: Sequence[str] = DEFAULT_BASELINES,
                    workers: int = 1, overwrite: bool = False, progress: bool = True, shard_rows=None,
                    floor: bool = True, shard: tuple[int, int] | None = None, executor: str = "local",
                    ray_address: str | None = None, episodes: EpisodePlan | None = None) -> dict:
    """The dataset folder at `out`; with `shard=(I, K)`, a shard folder holding
    scenarios [n*I//K, n*(I+1)//K) of each split, for hub.shards.merge_shards.
    `episodes`: the baselines' episodes of each split too (its first
    episodes.count(n) starts, sharded the same way)."""
    check_split_seeds(eval_seed, train_seed)
    players = check_players(players)
    if "oracle" not in players:
        raise ValueError("players must include 'oracle': scenario rows store its reference shot")
    if eval_n < 1 or train_n < 0:
        raise ValueError(f"eval_n={eval_n} must be >= 1 and train_n={train_n} >= 0")
    if shard is not None:
        check_shard(shard)
    check_executor(executor, ray_address)
    counts, test_rows, sims, ranges = {}, [], {"run": 0, "saved": 0, "seconds": 0.0, "stopped": 0}, {}
    with staged_folder(out, overwrite=overwrite) as root:
        for split, n, seed in ((EVAL_SPLIT, eval_n, eval_seed), (TRAIN_SPLIT, train_n, train_seed)):
            if n == 0:
                continue
            lo, hi = shard_range(n, shard) if shard else (0, n)
            ranges[split] = [lo, hi]
            sw = ShardWriter(root, "scenarios", split, (shard_rows or {}).get("scenarios"))
            tw = ShardWriter(root, "traces", split, (shard_rows or {}).get("traces"))
            runs = run_baselines(iter_specs(hi - lo, seed, lo), players, workers=workers, total=hi - lo,
                                 progress=progress, floor=floor, executor=executor, ray_address=ray_address)
            for i, run in enumerate(runs, start=lo):
                sw.add(scenario_row(run, seed, i))
                rows = baseline_trace_rows(run)
                tw.extend(rows)
                sims["run"] += run.sims_run
                sims["saved"] += run.sims_saved
                sims["seconds"] += run.sim_seconds
                sims["stopped"] += sum(row["sim_status"] in STOPPED_EARLY for row in rows)
                if split == EVAL_SPLIT:
                    test_rows.extend(rows)
            counts[split] = {"scenarios": sw.close(), "traces": tw.close()}
        if episodes is not None:
            plays = [(split, seed, *(shard_range(m, shard) if shard else (0, m)))
                     for split, n, seed in ((EVAL_SPLIT, eval_n, eval_seed), (TRAIN_SPLIT, train_n, train_seed))
                     if (m := episodes.count(n))]
            for split, rows in write_episodes(root, episodes, plays, workers=workers, executor=executor,
                                              ray_address=ray_address, progress=progress,
                                              rows_per_shard=(shard_rows or {}).get("episodes")).items():
                counts[split]["episodes"] = rows
        # No timestamps and no worker count: the same arguments give the same bytes.
        prov = provenance(eval_n=eval_n, eval_seed=eval_seed, train_n=train_n, train_seed=train_seed,
                          players=players, splits={EVAL_SPLIT: eval_seed, TRAIN_SPLIT: train_seed},
                          **({"episodes": episodes.settings()} if episodes else {}))
        if shard:
            (root / SHARD_FILE).write_text(json.dumps({"shard": shard[0], "of": shard[1], "ranges": ranges,
                                                       "benchmark": prov}, indent=2, sort_keys=True) + "\n")
        else:
            write_provenance(root, {"benchmark": prov, "results_table": results_table(test_rows, players)})
            write_card(root)
    # run, avoided by the floor, CPU seconds in them, played shots stopped early; not in the folder
    counts["simulations"] = sims
    return counts
