"""Add the `pairs` config (physics-labelled DPO pairs) to a dataset folder.

Needs LLM traces on the training split first:
    .venv/bin/poolbench eval --seed 1 --n 200 --samples 4 --temperature 0.8 --split train --dataset_dir poolbench
    .venv/bin/python builders/build_pairs.py --dataset_dir poolbench
Pairs come only from the train split: evaluation boards never enter training.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from poolbench_data.hub.push import PushArguments


@dataclass
class ScriptArguments(PushArguments):
    """Build the PoolBench pairs config from the traces of the train split."""

    dataset_dir: str = field(default="poolbench", metadata={"help": "Dataset folder with scenarios and traces."})
    split: str = field(default="train", metadata={"help": "Split to build pairs from (never the test split)."})
    sources: str = field(default="oracle-vs-llm,on-policy", metadata={"help": "Comma-separated pair sources."})


def build(args: ScriptArguments) -> None:
    from pathlib import Path

    from poolbench_data.cli.args import UserError
    from poolbench_data.hub.folder import read_rows, require_dataset
    from poolbench_data.hub.update import write_config
    from poolbench_data.prefs.pairs import SOURCES, build_pairs
    from poolbench_data.report.provenance import provenance

    sources = [s for s in args.sources.split(",") if s.strip()]
    unknown = [s for s in sources if s not in SOURCES]
    if not sources or unknown:
        raise UserError(f"--sources {args.sources!r}: " + (f"unknown source(s) {unknown}" if unknown else "no source")
                        + f"; give one or more of {','.join(SOURCES)}")
    if args.split == "test":
        raise UserError("--split test: pairs from the test split would train on the evaluation boards; "
                        "use --split train")
    folder = require_dataset(Path(args.dataset_dir))
    scenarios = read_rows(folder, "scenarios", args.split)
    traces = read_rows(folder, "traces", args.split)
    if not any(t["player_kind"] == "llm" for t in traces):
        raise UserError(f"no LLM traces in {folder} split {args.split!r}; run `poolbench eval --split "
                        f"{args.split} --dataset_dir {folder}` with the split's --seed and --n first")
    pairs = build_pairs(scenarios, traces, sources)
    if not pairs:
        # An empty config would replace the last one and train on nothing.
        raise UserError(f"no pairs from {len(scenarios)} scenarios with sources {sources} (every board's answers "
                        f"scored the same); {folder} is unchanged. Sample more answers a board (--samples) at a "
                        "higher --temperature, or add the oracle-vs-llm source")
    counts = write_config(folder, "pairs", {args.split: pairs}, "pairs",
                          provenance(split=args.split, sources=sources))
    by = {s: sum(p["source"] == s for p in pairs) for s in sources}
    print(f"pairs/{args.split}: {counts[args.split]} pairs {by} from {len(scenarios)} scenarios")
    args.maybe_push(folder)


def main(argv=None) -> int:
    from poolbench_data.cli.args import parse, run_main

    return run_main(lambda: build(parse(ScriptArguments, argv)))


if __name__ == "__main__":
    sys.exit(main())
