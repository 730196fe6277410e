"""Add the `pairs` config (physics-labelled DPO pairs) to a dataset folder.

Needs LLM traces on the training split first:
    .venv/bin/poolbench eval --samples 4 --temperature 0.8 --split train --dataset_dir poolbench
    .venv/bin/python builders/build_pairs.py --dataset_dir poolbench
Pairs come only from the train split: evaluation boards never enter training.

Tool-track pairs (the `pairs_tools` config), from a tool-using model's own samples:
    .venv/bin/poolbench eval --model M --tools --seed 1 --n 400 --samples 4 --temperature 0.8 --out runs/samples
    .venv/bin/python builders/build_pairs.py --dataset_dir poolbench --tool_eval_dir runs/samples

Run-out position pairs (the `pairs_position` config), from the position Oracle's run-outs on the split's boards
(no model samples needed):
    .venv/bin/python builders/build_pairs.py --dataset_dir poolbench --position --position_n 50
With --position_tools (`pairs_position_tools`) each turn is written as a ghost_ball player writes it, and a pair
sets two answers at the ball its call named against each other, after the call and its report.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace

from poolbench_data.hub.push import PushArguments


@dataclass(frozen=True)
class ScriptArguments(PushArguments):
    """Build the PoolBench pairs config from the traces of the train split."""

    dataset_dir: str = field(default="poolbench", metadata={"help": "Dataset folder with scenarios and traces."})
    split: str = field(default="train", metadata={"help": "Split to build pairs from (never the test split)."})
    sources: str = field(default="oracle-vs-llm,on-policy", metadata={"help": "Comma-separated pair sources."})
    tool_eval_dir: str = field(default="", metadata={"help": "Report folder (--out) of `poolbench eval --tools "
                               "--samples K` on this split's boards: build the `pairs_tools` config from its "
                               "tool_calls.jsonl and llm_traces.jsonl instead of `pairs` (--sources is not used)."})
    # All four by default: on-policy pairs alone (and with at-cap) lower clean pots; the recovery and answer pairs
    # say when to call. The tool track's headline recipe (training/recipes/loop-tools-headline.yaml) names its own
    # sources (docs/results.md#the-preference-pairs).
    tool_sources: str = field(default="tool-on-policy,tool-at-cap,tool-recovery,tool-answer", metadata={
        "help": "With --tool_eval_dir: comma-separated tool pair sources (tool-on-policy: every two samples of a "
                "board that score differently, both sides the model's own; tool-at-cap: where the model called again "
                "with no calls left, the action on a called shot against that call; tool-recovery: a call for the "
                "board's open shot against an answer after a tool answer that was not open; tool-answer, its mirror: "
                "the model's potting answer after an open tool answer against a further call; tool-cap-answer (not a "
                "default: DPO with it pots fewer): at the cap after a blocked report, the action against a further "
                "call, the conversation continued with blocked calls to the cap where calls were left; tool-speed "
                "(not a default; the headline recipe adds it): the model's final answer against the same answer at"
                " another cue speed, the one that plays better on average over small aim and speed errors chosen "
                "(pairs.speed; 9 simulations a speed); tool-cap-speed (not a default: "
                "docs/results.md#preference-stages-from-the-same-tool-sft): the same for the answers at the call cap "
                "after a closed report, most of them kicks; tool-call-again (not a default; the headline recipe adds "
                "it): after a report with no open shot and calls left, the model's own further call in a thread "
                "that then potted, against the action the at-cap demonstrations write there. With both of those two, "
                "each keeps as many pairs as the other; whatever the sources, the call-against-answer pairs are "
                "trimmed to prefer either kind at most 3 times in 4: docs/results.md#the-preference-pairs)."})
    tool_min_level_gap: int = field(default=0, metadata={
        "help": "With --tool_eval_dir: keep only tool-on-policy pairs whose sides' physics levels (foul, legal "
                "contact, legal pot) differ by at least this much (1: never two fouls or two pots ranked by the "
                "fine score's aim and target bonuses; 0: every pair whose fine scores differ)."})
    tool_robust: bool = field(default=False, metadata={
        "help": "With --tool_eval_dir: keep only tool-on-policy pairs whose chosen side also plays better on "
                "average, by a quarter of a level, over its action replayed with the aim +-0.1 degrees and the "
                "speed +-0.5 m/s (9 simulations a sample; pairs.noise): one simulated outcome is a noisy label."})
    tool_speeds: str = field(default="4,5,6,7,8,10,12", metadata={
        "help": "With --tool_sources tool-speed or tool-cap-speed: comma-separated cue speeds (m/s, within 2-12) "
                "the model's answer is set against, one drawn per answer among those that play robustly "
                "differently (speed decides where the cue ball runs after the pot: "
                "docs/results.md#what-the-tool-lets-a-player-reach)."})
    tool_same_kind: bool = field(default=False, metadata={
        "help": "With --tool_eval_dir: leave out tool-on-policy pairs that set a call against an answer (the "
                "call's side is scored by one sampled continuation); the recovery and answer-now sources still "
                "teach when to call (pairs.turn_kinds)."})
    position: bool = field(default=False, metadata={
        "help": "Build `pairs_position` instead of `pairs`: at each turn of the position Oracle's run-out from each "
                "of the split's first --position_n boards, two of its options that both pot an own ball cleanly, "
                "the one whose table the --position_continuation player runs out further chosen (--sources is not "
                "used)."})
    # The three fields below are read only with --position (metadata "requires"): given without it, the build
    # refuses them.
    position_n: int = field(default=50, metadata={
        "requires": "position", "help": "With --position: the split's boards (its first N, in board order) whose "
                                        "run-outs give pairs."})
    position_continuation: str = field(default="position-oracle", metadata={
        "requires": "position", "help": "With --position: the player that plays the visit on from the table each "
                                        "answer leaves, whose balls rank the answers: position-oracle, or oracle (the "
                                        "greedy Oracle: cheaper, and a noisier judge of position)."})
    position_options: int = field(default=4, metadata={
        "requires": "position", "help": "With --position: the most options compared at a turn (at least 2), spread "
                                        "over the position Oracle's ranking from its best to its worst; each costs "
                                        "a continuation."})
    position_tools: bool = field(default=False, metadata={
        "requires": "position", "help": "With --position: build `pairs_position_tools`: each turn written as a "
                                        "ghost_ball player writes it (the call for the shot's ball, its report, "
                                        "then the answer with the report's aim), the pair two answers at that ball "
                                        "after the call, as `poolbench eval --game runout --tools` plays."})
    tool_lines: bool = field(default=False, metadata={
        "requires": "position_tools", "help": "With --position_tools: the tool's reports show the cue ball's "
                                              "headings after contact for stun, follow and draw (cue_after_deg)."})
    workers: int = field(default=0, metadata={
        "help": "Worker processes that label the tool-speed and tool-cap-speed pairs (0: one per core; 9 "
                "simulations a speed an answer), or that play the run-outs of --position; the pairs are the same at "
                "any number."})


def build(args: ScriptArguments) -> None:
    from pathlib import Path

    from poolbench_data.boards.splits import EVAL_SPLITS
    from poolbench_data.core.errors import UserError, check_at_least, check_speeds
    from poolbench_data.core.fields import check_requires
    from poolbench_data.hub.folder import read_rows, require_dataset
    from poolbench_data.hub.update import write_config
    from poolbench_data.players.pool import resolve_workers
    from poolbench_data.pairs.text import SOURCES, build_pairs
    from poolbench_data.pairs.sources import ALL_TOOL_SOURCES, check_sources
    from poolbench_data.report.provenance import provenance

    # Every flag before any work, whichever config is built.
    check_requires(args)  # a --position_* flag without --position would be silently ignored
    if args.position:
        from poolbench_data.pairs.position import MIN_OPTIONS, check_continuation

        if args.tool_eval_dir:
            raise UserError("--position and --tool_eval_dir build different configs (pairs_position, pairs_tools); "
                            "give one")
        check_at_least("--position_n", args.position_n, 1)
        check_at_least("--position_options", args.position_options, MIN_OPTIONS)
        check_continuation("--position_continuation", args.position_continuation)
    sources = check_sources("--sources", args.sources, SOURCES)
    tool_sources = check_sources("--tool_sources", args.tool_sources, ALL_TOOL_SOURCES)
    if not 0 <= args.tool_min_level_gap <= 3:
        raise UserError(f"--tool_min_level_gap must be 0, 1, 2 or 3 (levels: unparseable 0, foul 1, legal contact "
                        f"2, legal pot 3); got {args.tool_min_level_gap}")
    speeds = list(check_speeds("--tool_speeds", args.tool_speeds))
    args = replace(args, workers=resolve_workers(args.workers))  # a negative count: one line naming --workers
    if args.split in EVAL_SPLITS:
        raise UserError(f"--split {args.split}: pairs from an evaluation split would train on the evaluation "
                        "boards; use --split train")
    folder = require_dataset(Path(args.dataset_dir))
    scenarios = read_rows(folder, "scenarios", args.split)
    if args.position:
        return build_position_pairs(args, folder)
    if args.tool_eval_dir:
        return build_tool_pairs(args, folder, scenarios, tool_sources, speeds)
    traces = read_rows(folder, "traces", args.split)
    if not any(t["player_kind"] == "llm" for t in traces):
        raise UserError(f"no LLM traces in {folder} split {args.split!r}; run `poolbench eval --split "
                        f"{args.split} --dataset_dir {folder} --samples 4 --temperature 0.8` first")
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


def build_position_pairs(args: ScriptArguments, folder) -> None:
    from poolbench_data.boards.splits import eval_id_prefix
    from poolbench_data.checks.pairs import check_pairs
    from poolbench_data.core.errors import UserError
    from poolbench_data.hub.folder import first_scenarios
    from poolbench_data.hub.update import write_config
    from poolbench_data.pairs.position import position_pairs
    from poolbench_data.report.provenance import provenance

    boards = first_scenarios(folder, args.split, args.position_n, "--position_n")
    config = "pairs_position_tools" if args.position_tools else "pairs_position"
    pairs = position_pairs(boards, args.split, continuation=args.position_continuation,
                           options=args.position_options, tools=args.position_tools, lines=args.tool_lines,
                           workers=args.workers, progress=True)
    if not pairs:
        # An empty config would replace the last one and train on nothing.
        raise UserError(f"--position_n {args.position_n}: no pairs from the run-outs of {len(boards)} boards (no "
                        f"turn's options ran out differently); {folder} is unchanged. Give more boards")
    check_pairs(pairs, eval_id_prefix(folder))  # what training/dpo.py checks, before the folder changes
    settings = dict(tool_lines=args.tool_lines) if args.position_tools else {}
    counts = write_config(folder, config, {args.split: pairs}, config,
                          provenance(split=args.split, position_n=args.position_n,
                                     continuation=args.position_continuation, options=args.position_options,
                                     **settings))
    print(f"{config}/{args.split}: {counts[args.split]} pairs from the run-outs of {len(boards)} boards "
          f"(continuation: {args.position_continuation}; at most {args.position_options} options a turn)")
    args.maybe_push(folder)


def build_tool_pairs(args: ScriptArguments, folder, scenarios: list[dict], sources: list[str],
                     speeds: list[float]) -> None:
    from pathlib import Path

    from poolbench_data.core.errors import UserError
    from poolbench_data.hub.update import write_config
    from poolbench_data.players.traces import load_traces
    from poolbench_data.pairs.turn_kinds import balance_kinds, same_kind
    from poolbench_data.pairs.tools import ThreadMismatch, tool_pairs
    from poolbench_data.pairs.further_call import CALL_AGAIN, call_again_pairs
    from poolbench_data.pairs.speed import CAP_SPEED, SPEED, speed_pairs
    from poolbench_data.report.provenance import provenance

    src = Path(args.tool_eval_dir)
    files = {name: src / name for name in ("tool_calls.jsonl", "llm_traces.jsonl")}
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        raise UserError(f"--tool_eval_dir {src}: no {', '.join(missing)}; give the --out folder of `poolbench eval "
                        "--tools --samples K` run on this split's boards")
    fix = "give the --out folder of `poolbench eval --tools` unedited"
    threads, traces = (load_traces(p, fix) for p in files.values())
    ids = {s["id"] for s in scenarios}
    foreign = sorted({t["scenario_id"] for t in threads} - ids)
    if foreign:
        # Pairs from boards outside the split: at best a mismatch, at worst evaluation boards in training.
        raise UserError(f"--tool_eval_dir {src}: {len(foreign)} boards are not in {folder} split {args.split!r} "
                        f"(e.g. {foreign[0]!r}); run the eval with the split's --seed and --n")
    try:
        found = tool_pairs(scenarios, threads, traces, [s for s in sources if s not in (SPEED, CAP_SPEED, CALL_AGAIN)],
                           args.tool_min_level_gap, args.tool_robust)
        again = call_again_pairs(scenarios, threads, traces) if CALL_AGAIN in sources else []
        by_speed = [p for at_cap, source in ((False, SPEED), (True, CAP_SPEED)) if source in sources
                    for p in speed_pairs(scenarios, threads, traces, speeds, at_cap=at_cap, workers=args.workers)]
    except ThreadMismatch as exc:
        raise UserError(f"--tool_eval_dir {src}: {exc}") from None
    kept = (same_kind(found) if args.tool_same_kind else found) + again
    pairs = [{"chosen_robust": None, "rejected_robust": None, **p} for p in balance_kinds(kept) + by_speed]
    if not pairs:
        raise UserError(f"no pairs from {len(threads)} threads in {src} (no board's samples differed in a choice "
                        f"and in score); {folder} is unchanged. Sample more answers a board (--samples) at a "
                        "higher --temperature")
    counts = write_config(folder, "pairs_tools", {args.split: pairs}, "pairs_tools",
                          provenance(split=args.split, sources=sources, tool_eval_dir=str(src.resolve()),
                                     threads=len(threads), min_level_gap=args.tool_min_level_gap,
                                     robust=args.tool_robust, same_kind=args.tool_same_kind,
                                     speeds=speeds if {SPEED, CAP_SPEED} & set(sources) else None))
    turns = {k: sum(p["turn"] == k for p in pairs) for k in sorted({p["turn"] for p in pairs})}
    by = {s: sum(p["source"] == s for p in pairs) for s in sources}
    # A set whose chosen side is always a call (or always an answer) teaches the turn type, not the condition:
    # the recovery source alone makes a model that never answers (docs/results.md#the-preference-pairs).
    kinds = {side: {k: sum(p[f"{side}_decision"].startswith(k) for p in pairs) for k in ("call", "answer")}
             for side in ("chosen", "rejected")}
    trimmed = (f", {n} on-policy calls against answers left out" if (n := len(found) + len(again) - len(kept))
               else "") + (f", {n} trimmed to balance the turn kinds" if (n := len(kept) + len(by_speed) - len(pairs))
                           else "")
    if by_speed:  # which way the physics moved the speed: DPO follows the balance of these
        slower = sum(float(p["chosen_decision"].split()[-1]) < float(p["rejected_decision"].split()[-1])
                     for p in by_speed)
        named = ", ".join(x for x in (SPEED, CAP_SPEED) if x in sources)
        trimmed += f"; {named}: the slower side chosen in {slower} of {len(by_speed)}"
    print(f"pairs_tools/{args.split}: {counts[args.split]} pairs {by} (by turn: {turns}; turn kinds {kinds}{trimmed}) "
          f"from {len(threads)} threads on {len({t['scenario_id'] for t in threads})} boards of {src}")
    args.maybe_push(folder)


def main(argv=None) -> int:
    from poolbench_data.config import parse, run_main

    return run_main(lambda: build(parse(ScriptArguments, argv)))


if __name__ == "__main__":
    sys.exit(main())
