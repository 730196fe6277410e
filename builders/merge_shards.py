"""Merge the shard folders of a sharded build into one dataset folder, the
bytes a one-piece build writes (see builders/build_dataset.py --shard).

    python builders/merge_shards.py --shards_dir parts --output_dir poolbench [--push_to_hub --repo_id you/poolbench]
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from poolbench_data.hub.push import PushArguments


@dataclass(frozen=True)
class ScriptArguments(PushArguments):
    """Merge K shard folders into one PoolBench dataset folder."""

    shards_dir: str = field(default="parts", metadata={"help": "Folder whose subfolders are the K shard folders."})
    output_dir: str = field(default="poolbench", metadata={"help": "Dataset folder to write (Hub repo layout)."})
    overwrite: bool = field(default=False, metadata={"help": "Replace an existing output folder."})


def merge(args: ScriptArguments) -> None:
    from poolbench_data.hub.build import SHARD_FILE
    from poolbench_data.hub.shards import merge_shards

    root = Path(args.shards_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"--shards_dir {root} is not a folder; pass the folder holding the shard folders")
    shard_dirs = sorted(p.parent for p in root.glob(f"*/{SHARD_FILE}"))
    counts = merge_shards(shard_dirs, Path(args.output_dir), overwrite=args.overwrite)
    print(f"merged {len(shard_dirs)} shards into {args.output_dir}: {counts}")
    args.maybe_push(args.output_dir)


def main(argv=None) -> int:
    from poolbench_data.config import parse, run_main

    return run_main(lambda: merge(parse(ScriptArguments, argv)))


if __name__ == "__main__":
    sys.exit(main())
