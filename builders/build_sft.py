"""Add the `sft` config (Oracle demonstrations) or, with --tools, the
`sft_tools` config (ghost_ball tool-use demonstrations), or with --game runout
the `sft_runout` config (the position Oracle's turns in run-outs; with --tools too, `sft_runout_tools`, the turns
as a ghost_ball player writes them) to a dataset
folder.

    .venv/bin/python builders/build_dataset.py --train_n 500 --players oracle
    .venv/bin/python builders/build_sft.py --dataset_dir poolbench
    .venv/bin/python builders/build_sft.py --dataset_dir poolbench --tools
    .venv/bin/python builders/build_sft.py --dataset_dir poolbench --game runout --runout_n 100
    .venv/bin/python builders/build_sft.py --dataset_dir poolbench --game runout --tools --tool_lines

Rows come only from the train split: evaluation boards never enter training.
Then: training/sft.py --config training/recipes/sft-smollm2-135m-cpu.yaml
(or sft-tools-smollm2-135m-cpu.yaml).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from poolbench_data.hub.push import PushArguments


@dataclass(frozen=True)
class ScriptArguments(PushArguments):
    """Build the PoolBench sft config from the Oracle's traces on the train split."""

    dataset_dir: str = field(default="poolbench", metadata={"help": "Dataset folder with scenarios and traces."})
    split: str = field(default="train", metadata={"help": "Split to take demonstrations from (never test)."})
    tools: bool = field(default=False, metadata={"help": "Build `sft_tools` (the model calls ghost_ball, then "
                                                          "answers with its aim) instead of `sft`; with --game "
                                                          "runout, `sft_runout_tools` (each turn a ghost_ball call "
                                                          "for the shot's ball, then the answer with its aim)."})
    tool_lines: bool = field(default=False, metadata={
        "requires": "tools", "help": "With --tools: with --game runout, the tool's reports show the cue ball's "
                                     "headings after contact for stun, follow and draw (cue_after_deg; "
                                     "llm.tools.LINES_NOTE), as `poolbench eval --game runout --tools --tool_lines` "
                                     "answers."})
    game: str = field(default="", metadata={"help": "runout: build `sft_runout` instead of `sft`, the position "
                                                     "Oracle's turns that pot cleanly in a run-out from each of the "
                                                     "split's first --runout_n boards, each prompt the one `poolbench "
                                                     "eval --game runout` sends on that turn."})
    # The two fields below are read only with --game (metadata "requires"): given without it, the build refuses them.
    runout_n: int = field(default=100, metadata={
        "requires": "game", "help": "With --game runout: the split's boards (its first N, in board order) whose "
                                    "run-outs give demonstrations."})
    workers: int = field(default=0, metadata={
        "requires": "game", "help": "With --game runout: worker processes that play the run-outs (0: one per core); "
                                    "the rows are the same at any number."})
    # The fields below are read only with --tools (metadata "requires"): given without it, the build refuses them.
    seed: int = field(default=0, metadata={
        "requires": "tools",
        "help": "With --tools: the seed of the draw that adds a recovered mistaken call to some tool "
                "demonstrations."})
    retry_blocked_share: float = field(default=0.45, metadata={
        "requires": "tools",
        "help": "With --tools: the share of boards (of those with an own ball the tool reports blocked) whose "
                "demonstration first calls for a blocked shot, then calls again (with fewer, the tool-SFT model "
                "answers after a blocked report: docs/results.md#the-demonstrations)."})
    # The defaults are the tool track's headline demonstrations; docs/results.md#the-demonstrations measures each
    # against the other choice (`oracle`, the Oracle's speeds).
    tool_demo_order: str = field(default="listed", metadata={
        "requires": "tools",
        "help": "With --tools: `listed` (own balls called in the prompt's order until a report shows an open "
                "shot, then the best of its open shots in the simulator; demos.tools.listed_demo) or `oracle` (the "
                "Oracle's ball and pocket first, then the geometry candidates, with mistaken calls shown and "
                "recovered)."})
    tool_demo_speeds: str = field(default="5,8,10,12", metadata={
        "requires": "tools",
        "help": "With --tools: comma-separated cue speeds (m/s, within 2-12) a demonstration tries, in order; the "
                "first that plays best is written. 5 first: the first open shot pots cleanly more often at 5 m/s "
                "than at 8 (docs/results.md#the-demonstrations); the Oracle's speeds are 8,10,12."})
    at_cap_no_pot_share: float = field(default=1.0, metadata={
        "requires": "tools",
        "help": "With --tools: the share of boards without a tool-derived pot (and with 3 own balls the tool "
                "reports closed, or fewer but all of them) whose demonstration calls for them, then writes the "
                "action (a kick where one plays best) at the call cap or after the last own ball (the turn the "
                "tool-SFT model writes a fourth call there without them: docs/results.md#the-demonstrations)."})


def build(args: ScriptArguments) -> None:
    from pathlib import Path

    from poolbench_data.core.fields import check_requires
    from poolbench_data.core.errors import UserError, check_seed, check_speeds
    from poolbench_data.hub.folder import read_rows, require_dataset
    from poolbench_data.hub.update import write_config
    from poolbench_data.boards.splits import EVAL_SPLITS
    from poolbench_data.demos.text import sft_rows
    from poolbench_data.report.provenance import provenance

    check_requires(args)  # a tool-only flag without --tools would be silently ignored
    if args.game:
        return build_runout(args)
    if args.tool_lines:  # sft_tools' single-shot reports never show the lines
        raise UserError("--tool_lines is read only with --game runout --tools; add --game runout, or leave "
                        "--tool_lines out")
    check_seed("--seed", args.seed)
    for flag in ("retry_blocked_share", "at_cap_no_pot_share"):
        if not 0 <= getattr(args, flag) <= 1:
            raise UserError(f"--{flag} {getattr(args, flag)}: a share of boards; give a value from 0 to 1")
    from poolbench_data.demos.tools import DEMO_ORDERS

    speeds = check_speeds("--tool_demo_speeds", args.tool_demo_speeds)
    if args.tool_demo_order not in DEMO_ORDERS:
        raise UserError(f"--tool_demo_order {args.tool_demo_order!r}: give one of {', '.join(DEMO_ORDERS)}")
    if args.split in EVAL_SPLITS:
        raise UserError(f"--split {args.split}: demonstrations from the evaluation boards would leak them into "
                        f"training; use --split train")
    folder = require_dataset(Path(args.dataset_dir))
    scenarios = read_rows(folder, "scenarios", args.split)
    if not scenarios:
        raise UserError(f"--split {args.split!r}: {folder} has no scenarios in that split; give a split it holds "
                        f"(a train split: `builders/build_dataset.py --train_n N`)")
    if args.tools:
        from collections import Counter

        from poolbench_data.demos.tools import tool_sft_rows

        rows = tool_sft_rows(scenarios, args.split, seed=args.seed, progress=True,
                             blocked_share=args.retry_blocked_share, no_pot_share=args.at_cap_no_pot_share,
                             order=args.tool_demo_order, speeds=speeds)
        counts = write_config(folder, "sft_tools", {args.split: rows}, "sft_tools",
                              provenance(split=args.split, seed=args.seed,
                                         tool_demo_order=args.tool_demo_order,
                                         tool_demo_speeds=list(speeds),
                                         retry_blocked_share=args.retry_blocked_share,
                                         at_cap_no_pot_share=args.at_cap_no_pot_share))
        kinds = Counter(r["demonstration"] for r in rows)
        pots = sum(r["clean_pot"] for r in rows)
        at = Counter(r["cue_speed"] for r in rows)
        print(f"sft_tools/{args.split}: {counts[args.split]} tool demonstrations, {pots} of them legal pots "
              f"(by kind: {', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))}; demos.tools.ToolDemo; "
              f"by calls: {', '.join(f'{k}: {n}' for k, n in sorted(Counter(r['calls'] for r in rows).items()))}) "
              f"from {len(scenarios)} scenarios ({len(scenarios) - len(rows)} without a row); written at "
              f"{', '.join(f'{k:g} m/s {n}' for k, n in sorted(at.items()))}")
    else:
        rows = sft_rows(scenarios, read_rows(folder, "traces", args.split), args.split)
        counts = write_config(folder, "sft", {args.split: rows}, "sft", provenance(split=args.split))
        pots = sum(r["demonstration"] == "pot" for r in rows)
        print(f"sft/{args.split}: {counts[args.split]} demonstrations ({pots} legal pots, "
              f"{counts[args.split] - pots} legal contacts) from {len(scenarios)} scenarios")
    args.maybe_push(folder)


def build_runout(args: ScriptArguments) -> None:
    from dataclasses import fields
    from pathlib import Path

    from poolbench_data.boards.splits import EVAL_SPLITS, eval_id_prefix
    from poolbench_data.checks.demos import check_sft_rows
    from poolbench_data.core.errors import UserError, check_at_least
    from poolbench_data.demos.runout import GAME, sft_runout_rows
    from poolbench_data.hub.folder import first_scenarios, require_dataset
    from poolbench_data.hub.update import write_config
    from poolbench_data.players.pool import resolve_workers
    from poolbench_data.report.provenance import provenance

    if args.game != GAME:
        raise UserError(f"--game {args.game!r}: give {GAME} (the `sft_runout` config), or leave --game out for `sft`")
    changed = [f"--{f.name}" for f in fields(args) if f.metadata.get("requires") == "tools"
               and f.name != "tool_lines" and getattr(args, f.name) != f.default]
    if changed:
        raise UserError(f"{', '.join(changed)}: read only for `sft_tools` (--tools without --game); a run-out's "
                        "tool demonstrations follow the position Oracle's choices; leave them out")
    config = "sft_runout_tools" if args.tools else "sft_runout"
    check_at_least("--runout_n", args.runout_n, 1)
    workers = resolve_workers(args.workers)  # a negative count: one line naming --workers
    if args.split in EVAL_SPLITS:
        raise UserError(f"--split {args.split}: demonstrations from the evaluation boards would leak them into "
                        f"training; use --split train")
    folder = require_dataset(Path(args.dataset_dir))
    boards = first_scenarios(folder, args.split, args.runout_n, "--runout_n")
    rows = sft_runout_rows(boards, args.split, tools=args.tools, lines=args.tool_lines, workers=workers,
                           progress=True)
    check_sft_rows(rows, eval_id_prefix(folder))  # what training/sft.py checks, before the folder changes
    settings = dict(tool_lines=args.tool_lines) if args.tools else {}
    counts = write_config(folder, config, {args.split: rows}, config,
                          provenance(split=args.split, game=GAME, runout_n=args.runout_n, **settings))
    won = sum(r["won"] for r in rows)
    print(f"{config}/{args.split}: {counts[args.split]} demonstrations (turns that potted cleanly, {won} of them "
          f"winning) from the run-outs of {len(boards)} boards")
    args.maybe_push(folder)


def main(argv=None) -> int:
    from poolbench_data.config import parse, run_main

    return run_main(lambda: build(parse(ScriptArguments, argv)))


if __name__ == "__main__":
    sys.exit(main())
