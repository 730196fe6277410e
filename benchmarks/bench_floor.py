"""The simulation floor, off and on in one run:
python benchmarks/bench_floor.py [--n 60 --n_parallel 200 --n_long 1000]

Builds the same boards (test split, every default baseline, labelled) with
the floor off (every shot simulated, without core.simcache) and on, and
prints simulations per board, boards/s, and the build's wall time over the
time its remaining simulations take divided by the workers (1.0 = nothing
but simulation). Simulation time is the CPU time of the simulating threads
inside pooltool, summed over the workers of the same build (BoardSims.seconds),
so a core lost to the builder's own work counts as overhead, not as
simulation. The 2-worker ratio is taken on --n_parallel boards: each worker
process pays its start-up (importing pooltool, loading numba's cache) on
its first board and one worker idles while the other plays the last, ~3 s a
build that a short build cannot amortize; --n_long boards (0: skip) show the
ratio of a longer build, where they weigh less.
"""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path


def build(n: int, seed: int, workers: int, floor: bool) -> tuple[float, dict]:
    from poolbench_data.hub.build import build_benchmark

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        counts = build_benchmark(Path(tmp) / "ds", eval_n=n, eval_seed=seed, train_n=0, workers=workers,
                                 progress=False, floor=floor)
        return time.perf_counter() - t0, counts["simulations"]


@dataclass(frozen=True)
class ScriptArguments:
    """The simulation floor off and on, in one run."""

    n: int = field(default=60, metadata={"help": "boards of the 1-worker builds, floor off and on"})
    seed: int = field(default=4242, metadata={"help": "the boards' base seed"})
    n_parallel: int = field(default=200, metadata={"help": "boards of the 1- and 2-worker builds, floor on"})
    n_long: int = field(default=1000, metadata={"help": "boards of the longer 2-worker build (0: skip it)"})


def bench(args: ScriptArguments) -> int:

    build(3, args.seed + 1, 1, True)  # warm numba and caches
    w0, s0 = build(args.n, args.seed, 1, False)
    w1, s1 = build(args.n, args.seed, 1, True)
    big1, b1 = build(args.n_parallel, args.seed, 1, True)
    big2, b2 = build(args.n_parallel, args.seed, 2, True)
    long2, l2 = build(args.n_long, args.seed, 2, True) if args.n_long else (0.0, {})
    rows = [
        ("simulations per board: floor off", f"{s0['run'] / args.n:.1f}"),
        ("simulations per board: floor on", f"{s1['run'] / args.n:.1f}"),
        ("simulations saved per board (reused + skipped)", f"{s1['saved'] / args.n:.1f}"),
        ("simulations: off / on", f"{s0['run'] / s1['run']:.2f}x"),
        ("boards/s, 1 worker: floor off", f"{args.n / w0:.2f}"),
        ("boards/s, 1 worker: floor on", f"{args.n / w1:.2f}"),
        ("boards/s, 1 worker: on / off", f"{w0 / w1:.2f}x"),
        ("build time / simulation time, 1 worker", f"{w1 / s1['seconds']:.3f}"),
        (f"{args.n_parallel} boards, floor on: boards/s, 1 worker", f"{args.n_parallel / big1:.2f}"),
        (f"{args.n_parallel} boards, floor on: boards/s, 2 workers", f"{args.n_parallel / big2:.2f}"),
        (f"{args.n_parallel} boards: build time / simulation time, 1 worker", f"{big1 / b1['seconds']:.3f}"),
        (f"{args.n_parallel} boards: build time / (simulation time / 2), 2 workers",
         f"{big2 / (b2['seconds'] / 2):.3f}"),
        (f"{args.n_parallel} boards: the same, simulation time from the 1-worker build",
         f"{big2 / (b1['seconds'] / 2):.3f}"),
        (f"{args.n_parallel} boards: CPU ms per simulation, 1 -> 2 workers",
         f"{1000 * b1['seconds'] / b1['run']:.1f} -> {1000 * b2['seconds'] / b2['run']:.1f}"),
    ]
    if args.n_long:
        rows += [
            (f"{args.n_long} boards, floor on: boards/s, 2 workers", f"{args.n_long / long2:.2f}"),
            (f"{args.n_long} boards: build time / (simulation time / 2), 2 workers",
             f"{long2 / (l2['seconds'] / 2):.3f}"),
        ]
    w = max(len(k) for k, _ in rows)
    print(f"{args.n} boards, seed {args.seed}\n{'metric'.ljust(w)}  value\n{'-' * w}  -----")
    for k, v in rows:
        print(f"{k.ljust(w)}  {v}")
    return 0


def main(argv=None) -> int:
    from poolbench_data.config import parse, run_main

    return run_main(lambda: bench(parse(ScriptArguments, argv, __doc__)))


if __name__ == "__main__":
    sys.exit(main())
