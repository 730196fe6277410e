"""Where a parallel build's time goes besides simulation:
python benchmarks/bench_build_overhead.py [--n 200 --workers 2]

Builds --n boards (test split, seed 4242, the default baselines, labelled)
after a warm-up, with every board timed inside its worker (start, end, CPU
time, simulation CPU time), and prints per worker: its first board (start-up:
importing pooltool, loading numba's cache), its CPU outside simulation a
board after that, when it finished; and the builder's own CPU (rows,
parquet). Then the direct-shot ray cast on the same boards: every one of
the 36,000 sweep rays against only the own balls' cones (what
core.geometry.directly_hittable casts).
"""

from __future__ import annotations

import glob
import os
import resource
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed_task(args):
    """players.play._task, with its times appended to a file of this worker's."""
    from poolbench_data.players import play

    t0, c0 = time.time(), _cpu()
    # In a spawned worker players.play is unpatched: its _task is the original.
    run = getattr(play, "_untimed_task", play._task)(args)
    with open(Path(os.environ["BENCH_TIMELINE"]) / f"{os.getpid()}.txt", "a") as f:
        f.write(f"{t0} {time.time()} {_cpu() - c0} {run.sim_seconds}\n")
    return run


def timeline(n: int, workers: int, seed: int) -> list[tuple[str, str]]:
    from poolbench_data.hub.build import build_benchmark
    from poolbench_data.players import play

    play._untimed_task, play._task = play._task, timed_task
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["BENCH_TIMELINE"] = tmp
        build_benchmark(Path(tmp) / "warm", eval_n=3, eval_seed=seed + 1, train_n=0, workers=1, progress=False)
        for f in glob.glob(f"{tmp}/*.txt"):
            os.remove(f)
        t0, c0 = time.time(), _cpu()
        counts = build_benchmark(Path(tmp) / "ds", eval_n=n, eval_seed=seed, train_n=0, workers=workers,
                                 progress=False)
        wall, builder = time.time() - t0, _cpu() - c0
        per_worker = [[list(map(float, line.split())) for line in open(f)] for f in sorted(glob.glob(f"{tmp}/*.txt"))]
    sim = counts["simulations"]["seconds"]
    rows = [("wall s / simulation CPU s / ratio", f"{wall:.1f} / {sim:.1f} / {wall / (sim / workers):.3f}"),
            ("builder CPU s (rows, parquet, receiving results)", f"{builder:.2f}")]
    for k, tasks in enumerate(per_worker):
        first, rest = tasks[0], tasks[1:]
        outside = sum(r[2] - r[3] for r in rest) / max(1, len(rest))
        rows += [(f"worker {k}: boards", f"{len(tasks)}"),
                 (f"worker {k}: first board wall s (CPU outside simulation)", f"{first[1] - first[0]:.2f} "
                                                                              f"({first[2] - first[3]:.2f})"),
                 (f"worker {k}: CPU ms a board outside simulation, after the first", f"{1000 * outside:.1f}"),
                 (f"worker {k}: idle at the end, s", f"{t0 + wall - tasks[-1][1]:.2f}")]
    return rows


def ray_cast(n: int, seed: int) -> list[tuple[str, str]]:
    import math

    import numpy as np

    from poolbench_data.boards.generate import generate_scenario, iter_specs
    from poolbench_data.core import geometry as geo
    from poolbench_data.core.records import CUE
    from poolbench_data.core.table import geometry

    D = geometry().ball_diameter
    layouts = []
    for spec in iter_specs(n, seed, 0):
        s = generate_scenario(*spec)
        pos = {b.id: (b.x, b.y) for b in s.balls}
        layouts.append((pos.pop(CUE), pos, {b.id for b in s.own()}))

    def every_ray(cx, cy, balls):
        phis = [np.arange(0.0, 360.0, 0.01)]
        for bx, by in balls.values():
            c = math.degrees(math.atan2(by - cy, bx - cx))
            h = math.degrees(math.asin(min(1.0, D / math.hypot(bx - cx, by - cy))))
            phis.append(np.array([c - h + 1e-6, c + h - 1e-6, c]))
        return {b for b in geo.first_hits(cx, cy, np.concatenate(phis), balls) if b}

    t = time.perf_counter()
    by_rays = [every_ray(cx, cy, balls) & own for (cx, cy), balls, own in layouts]
    t_rays = (time.perf_counter() - t) / n
    t = time.perf_counter()
    by_cones = [geo.directly_hittable(cx, cy, balls, targets=own) for (cx, cy), balls, own in layouts]
    t_cones = (time.perf_counter() - t) / n
    assert by_cones == by_rays, "the cone cast must answer as casting every ray does"
    return [("ray cast ms a board: every ray -> own balls' cones", f"{1000 * t_rays:.1f} -> {1000 * t_cones:.1f}")]


@dataclass(frozen=True)
class ScriptArguments:
    """Where a parallel build's time goes besides simulation."""

    n: int = field(default=200, metadata={"help": "boards of the timed build"})
    workers: int = field(default=2, metadata={"help": "worker processes of the timed build"})
    seed: int = field(default=4242, metadata={"help": "the boards' base seed"})


def bench(args: ScriptArguments) -> int:
    rows = timeline(args.n, args.workers, args.seed) + ray_cast(args.n, args.seed)
    w = max(len(k) for k, _ in rows)
    print(f"{args.n} boards, seed {args.seed}, {args.workers} workers\n{'metric'.ljust(w)}  value\n{'-' * w}  -----")
    for k, v in rows:
        print(f"{k.ljust(w)}  {v}")
    return 0


def main(argv=None) -> int:
    from poolbench_data.config import parse, run_main

    return run_main(lambda: bench(parse(ScriptArguments, argv, __doc__)))


if __name__ == "__main__":
    sys.exit(main())
