"""Build the PoolBench dataset folder (configs `scenarios`, `traces` and `episodes`).

    python builders/build_dataset.py                      # ./poolbench, 50 eval + 200 train boards, episodes
    python builders/build_dataset.py --push_to_hub --repo_id you/poolbench

Sharded, for any scheduler (each shard anywhere, then one merge):

    python builders/build_dataset.py --train_n 100000 --shard 0/4 --output_dir parts/0   # ... up to 3/4
    python builders/merge_shards.py --shards_dir parts --output_dir poolbench

On a Ray cluster (boards as Ray tasks; `pip install 'poolbench-data[ray]'`):

    python builders/build_dataset.py --train_n 100000 --executor ray --ray_address auto

Then, from the folder's parent: datasets.load_dataset("poolbench", "scenarios").
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from poolbench_data.boards.splits import EVAL_SEED
from poolbench_data.hub.push import PushArguments
from poolbench_data.players import DEFAULT_BASELINES


@dataclass(frozen=True)
class ScriptArguments(PushArguments):
    """Build the PoolBench scenarios, traces and episodes configs."""

    output_dir: str = field(default="poolbench", metadata={"help": "Dataset folder to write (Hub repo layout)."})
    eval_n: int = field(default=50, metadata={"help": "Evaluation (test split) scenarios: the paper's 50."})
    eval_seed: int = field(default=EVAL_SEED, metadata={"help": "Base seed of the evaluation scenarios."})
    train_n: int = field(default=200, metadata={"help": "Training (train split) scenarios; 0 for none."})
    train_seed: int = field(default=1, metadata={"help": "Base seed of the training scenarios (not eval_seed)."})
    players: str = field(default=",".join(DEFAULT_BASELINES),
                         metadata={"help": "Comma-separated baselines to trace (must include oracle)."})
    workers: int = field(default=0, metadata={"help": "Worker processes (0: one per core)."})
    overwrite: bool = field(default=False, metadata={"help": "Replace an existing output folder."})
    executor: str = field(default="local", metadata={"help": "Where boards run: local (process pool) or ray."})
    ray_address: str = field(default="", metadata={"help": "With --executor ray: the cluster to join ('' = start "
                                                            "a local Ray instance with --workers CPUs)."})
    shard: str = field(default="", metadata={"help": "I/K: build only the I-th of K slices of each split into a "
                                                      "shard folder (merge with builders/merge_shards.py)."})
    episodes_games: str = field(default="runout,nineball-seeded",
                                metadata={"help": "Comma-separated games whose baselines' episodes make the episodes "
                                                  "config ('' for none)."})
    episodes_players: str = field(default="runout:oracle,nineball-seeded:mock",
                                  metadata={"help": "Comma-separated players of those games: a name plays every listed "
                                                    "game that has it, game:name only that game."})
    episodes_n: int = field(default=5, metadata={"help": "Episodes of each game and player a split, from its base "
                                                          "seed (at most one a board of the split); 0 for none."})
    episodes_attempts: int = field(default=15, metadata={"help": "Attempts an episode at most (DeepPHY's 15)."})


def parse_shard(text: str) -> tuple[int, int] | None:
    from poolbench_data.core.errors import UserError
    from poolbench_data.hub.build import check_shard

    if not text:
        return None
    try:
        i, k = (int(x) for x in text.split("/"))
    except ValueError:
        raise UserError(f"--shard {text!r}: write I/K, e.g. --shard 0/4 for the first of four shards") from None
    return check_shard((i, k))


def build(args: ScriptArguments) -> None:
    from poolbench_data.core.errors import UserError
    from poolbench_data.hub.build import build_benchmark
    from poolbench_data.hub.episodes import plan_episodes
    from poolbench_data.players import check_players
    from poolbench_data.players.pool import default_workers

    check_players(args.players.split(","), "--players")
    episodes = plan_episodes(args.episodes_games, args.episodes_players, args.episodes_n, args.episodes_attempts)
    shard = parse_shard(args.shard)
    if shard and args.push_to_hub:
        raise UserError("--push_to_hub with --shard: a shard is not a dataset; merge the shards "
                        "(builders/merge_shards.py --push_to_hub)")
    counts = build_benchmark(args.output_dir, eval_n=args.eval_n, eval_seed=args.eval_seed, train_n=args.train_n,
                             train_seed=args.train_seed, players=args.players.split(","),
                             workers=args.workers or default_workers(), overwrite=args.overwrite, shard=shard,
                             executor=args.executor, ray_address=args.ray_address or None, episodes=episodes)
    sims = counts.pop("simulations")
    print(f"wrote {args.output_dir}{f' (shard {args.shard})' if shard else ''}: {counts}; "
          f"simulations run {sims['run']}, saved {sims['saved']}; played shots whose simulation stopped early "
          f"(scored from where the balls were; sim_status in the traces): {sims['stopped']}")
    args.maybe_push(args.output_dir)


def main(argv=None) -> int:
    from poolbench_data.config import parse, run_main

    return run_main(lambda: build(parse(ScriptArguments, argv)))


if __name__ == "__main__":
    sys.exit(main())
