"""Build the benchmark dataset (configs `scenarios` and `traces`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from poolbench_data.core.vocab import MAX_SEED  # base_seed is an int64 column: checked before simulating
from poolbench_data.hub.card import write_card
from poolbench_data.hub.folder import ShardWriter, staged_folder, write_provenance
from poolbench_data.hub.rows import baseline_trace_rows, scenario_row
from poolbench_data.players import DEFAULT_BASELINES, check_players
from poolbench_data.report.provenance import provenance
from poolbench_data.report.tables import format_table, summarize
from poolbench_data.players.play import run_baselines
from poolbench_data.boards.generate import iter_scenarios

EVAL_SPLIT, TRAIN_SPLIT = "test", "train"


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


def build_benchmark(out: Path, *, eval_n: int = 50, eval_seed: int = 0, train_n: int = 0, train_seed: int = 1,
                    players: Sequence[str] = DEFAULT_BASELINES,
                    workers: int = 1, overwrite: bool = False, progress: bool = True, shard_rows=None) -> dict:
    check_split_seeds(eval_seed, train_seed)
    players = check_players(players)
    if "oracle" not in players:
        raise ValueError("players must include 'oracle': scenario rows store its reference shot")
    if eval_n < 1 or train_n < 0:
        raise ValueError(f"eval_n={eval_n} must be >= 1 and train_n={train_n} >= 0")
    counts, test_records = {}, []
    with staged_folder(out, overwrite=overwrite) as root:
        for split, n, seed in ((EVAL_SPLIT, eval_n, eval_seed), (TRAIN_SPLIT, train_n, train_seed)):
            if n == 0:
                continue
            sw = ShardWriter(root, "scenarios", split, (shard_rows or {}).get("scenarios"))
            tw = ShardWriter(root, "traces", split, (shard_rows or {}).get("traces"))
            runs = run_baselines(iter_scenarios(n, seed), players, workers=workers, total=n, progress=progress)
            for i, run in enumerate(runs):
                sw.add(scenario_row(run, seed, i))
                tw.extend(baseline_trace_rows(run))
                if split == EVAL_SPLIT:
                    test_records.extend(run.records)
            counts[split] = {"scenarios": sw.close(), "traces": tw.close()}
        table = format_table(summarize(test_records, players))
        # No timestamps and no worker count: the same arguments give the same bytes.
        write_provenance(root, {
            "benchmark": provenance(eval_n=eval_n, eval_seed=eval_seed, train_n=train_n, train_seed=train_seed,
                                    players=players, splits={EVAL_SPLIT: eval_seed, TRAIN_SPLIT: train_seed}),
            "results_table": table,
        })
        write_card(root)
    return counts
