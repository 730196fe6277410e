"""Add the `sft` config (Oracle demonstrations) to a dataset folder.

    .venv/bin/python builders/build_dataset.py --train_n 500 --players oracle
    .venv/bin/python builders/build_sft.py --dataset_dir poolbench

Rows come only from the train split: evaluation boards never enter training.
Then: training/sft.py --config training/recipes/sft-smollm2-135m-cpu.yaml
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from poolbench_data.hub.push import PushArguments


@dataclass
class ScriptArguments(PushArguments):
    """Build the PoolBench sft config from the Oracle's traces on the train split."""

    dataset_dir: str = field(default="poolbench", metadata={"help": "Dataset folder with scenarios and traces."})
    split: str = field(default="train", metadata={"help": "Split to take demonstrations from (never test)."})


def build(args: ScriptArguments) -> None:
    from pathlib import Path

    from poolbench_data.cli.args import UserError
    from poolbench_data.hub.folder import read_rows, require_dataset
    from poolbench_data.hub.update import write_config
    from poolbench_data.prefs.sft import EVAL_SPLITS, sft_rows
    from poolbench_data.report.provenance import provenance

    if args.split in EVAL_SPLITS:
        raise UserError(f"--split {args.split}: demonstrations from the evaluation boards would leak them into "
                        f"training; use --split train")
    folder = require_dataset(Path(args.dataset_dir))
    scenarios = read_rows(folder, "scenarios", args.split)
    if not scenarios:
        raise UserError(f"{folder} has no {args.split!r} scenarios; build it with "
                        f"`builders/build_dataset.py --train_n N`")
    rows = sft_rows(scenarios, read_rows(folder, "traces", args.split), args.split)
    counts = write_config(folder, "sft", {args.split: rows}, "sft", provenance(split=args.split))
    pots = sum(r["demonstration"] == "pot" for r in rows)
    print(f"sft/{args.split}: {counts[args.split]} demonstrations ({pots} legal pots, "
          f"{counts[args.split] - pots} legal contacts) from {len(scenarios)} scenarios")
    args.maybe_push(folder)


def main(argv=None) -> int:
    from poolbench_data.cli.args import parse, run_main

    return run_main(lambda: build(parse(ScriptArguments, argv)))


if __name__ == "__main__":
    sys.exit(main())
