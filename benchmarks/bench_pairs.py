"""Labelling the tool-speed pairs on one core and on several: seconds an answer, the speed-up, the same pairs.

    python benchmarks/bench_pairs.py --boards 60 --workers 1,2

Each board's thread is what the tool-SFT model writes on most boards (docs/training.md): a call for the first own
ball the prompt lists, then, where that report shows an open shot, the first open shot's potting-point aim at
5 m/s (boards whose first report is closed are left out: speed pairs come only after an open report). Every worker
count labels the same threads with `pairs.speed.speed_pairs` (63 simulations an answer: its robust score and
6 other speeds'), so the speed-ups come from one run, and each count's pairs must equal the first count's.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

MODEL_SPEED = 5.0  # the speed the tool SFT model writes (docs/training.md)


def thread_of(row: dict) -> tuple[dict, dict] | None:
    """(thread, trace) of the first listed own ball's call and its report's first open shot; None where that
    report shows nothing open or the shot's simulation stopped early."""
    from poolbench_data.core.records import Scenario, Shot
    from poolbench_data.llm.tools import MAX_CALLS, TOOL_VERSION, call_of, turn_result
    from poolbench_data.pairs.tools import _played_row
    from poolbench_data.demos.tools import call_text, clear, listed_own
    from poolbench_data.protocol.prompts import format_action

    s = Scenario.from_row(row)
    ball = listed_own(s)[0]
    result = turn_result(s, call_of(ball), MAX_CALLS - 1)
    if not clear(result):
        return None
    shot = next(x for x in result["shots"] if x["open"])
    final = format_action(Shot(phi=shot["potting_point_aim_angle_deg"], V0=MODEL_SPEED, target_ball=ball,
                               target_pocket=shot["pocket"]), s)
    trace = _played_row(row, s, final, "m")
    if trace is None:
        return None
    thread = {"scenario_id": s.id, "player": trace["player"], "sample": 0, "request_failed": False,
              "calls": [{"arguments": {"target_ball": ball}, "result": result}], "turns": [call_text(ball)],
              "final_response": final, "tool_version": TOOL_VERSION}
    return thread, trace


@dataclass(frozen=True)
class ScriptArguments:
    """Tool-speed pair labelling at several worker counts."""

    boards: int = field(default=60, metadata={"help": "train boards (seed 1) to make threads on"})
    workers: str = field(default="1,2", metadata={"help": "comma-separated worker counts, the first the baseline"})


def bench(args: ScriptArguments) -> int:
    from poolbench_data.core.errors import UserError

    try:
        counts = [int(w) for w in args.workers.split(",")]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:  # before any simulation
        raise UserError(f"--workers {args.workers!r}: give comma-separated counts >= 1, e.g. 1,2")
    if args.boards < 1:
        raise UserError(f"--boards {args.boards}: give at least 1")
    from poolbench_data.boards.generate import generate
    from poolbench_data.players.pool import cores
    from poolbench_data.pairs.speed import speed_pairs
    from poolbench_data.protocol.prompts import PROMPT_VERSION

    rows = [{**s.to_row(), "prompt_version": PROMPT_VERSION} for s in generate(args.boards, base_seed=1)]
    made = [(row, t) for row in rows if (t := thread_of(row)) is not None]
    scenarios, threads, traces = [r for r, _ in made], [t for _, (t, _) in made], [tr for _, (_, tr) in made]
    print(f"\ntool-speed labels: {len(threads)} answers after an open report on {args.boards} train boards, "
          f"{cores()} cores")
    print(f"{'workers':>7} {'seconds':>8} {'s/answer':>9} {'speed-up':>8} {'pairs':>6}  same pairs as the first")
    first = None
    for w in counts:
        started = time.perf_counter()
        pairs = speed_pairs(scenarios, threads, traces, workers=w)
        seconds = time.perf_counter() - started
        if first is None:
            first = (seconds, pairs)
        print(f"{w:>7} {seconds:>8.1f} {seconds / max(1, len(threads)):>9.2f} {first[0] / seconds:>7.2f}x "
              f"{len(pairs):>6}  {pairs == first[1]}")
    return 0


def main(argv=None) -> int:
    from poolbench_data.config import parse, run_main

    return run_main(lambda: bench(parse(ScriptArguments, argv, __doc__)))


if __name__ == "__main__":
    sys.exit(main())
