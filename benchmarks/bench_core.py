"""Core benchmark: python benchmarks/bench_core.py [--n 50]

(a) our simulate() against raw pooltool on identical shots (same run),
(b) Oracle simulations per decision,
(c) scenarios per second for the full baseline run, 1 and 2 workers.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field


def overhead(scenarios, shots) -> tuple[float, float]:
    """Seconds for the shots through pooltool's own simulate (its loop, its cushion model) and through ours."""
    import pooltool as pt
    from pooltool.physics.resolve.ball_cushion.stronge_compliant import model

    from poolbench_data.core.physics import build_system, engine, simulate

    engine()  # installs the cushion model without its debug strings; raw pooltool runs its own
    ours_model = model._solve
    model._solve = getattr(ours_model, "__wrapped__", ours_model)
    try:
        t0 = time.perf_counter()
        for s, shot in zip(scenarios, shots):
            pt.simulate(build_system(s, shot), engine=engine(), max_events=1000)
        raw = time.perf_counter() - t0
    finally:
        model._solve = ours_model
    t0 = time.perf_counter()
    for s, shot in zip(scenarios, shots):
        simulate(s, shot)
    ours = time.perf_counter() - t0
    return raw, ours


def cold_start_s() -> float:
    """A new process: import + first simulate. ~1-3 s when numba's cache
    survived; 30-40 s if it recompiles."""
    import subprocess
    import sys

    code = ("import time;t=time.perf_counter();from poolbench_data.boards.generate import generate;"
            "from poolbench_data.core.physics import simulate;from poolbench_data.core.records import Shot;"
            "simulate(generate(1)[0], Shot(90.0, 5.0));print(time.perf_counter()-t)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return float(out.strip().splitlines()[-1])


@dataclass(frozen=True)
class ScriptArguments:
    """The core benchmark: simulate() against raw pooltool, Oracle simulations, baseline throughput."""

    n: int = field(default=50, metadata={"help": "boards (the evaluation set's first N)"})


def bench(args: ScriptArguments) -> int:
    from poolbench_data.players import DEFAULT_BASELINES, heuristic
    from poolbench_data.players.play import run_baselines
    from poolbench_data.boards.generate import generate
    from poolbench_data.report.stats import quantile

    scenarios = generate(args.n)
    shots = [heuristic(s, "centre").shot for s in scenarios]
    overhead(scenarios[:3], shots[:3])  # warm numba and caches
    raw, ours = overhead(scenarios * 3, shots * 3)
    rows = [("new process: import + first simulate (s)", f"{cold_start_s():.2f}"),
            ("simulate: raw pooltool (ms/shot)", f"{1000 * raw / (3 * args.n):.2f}"),
            ("simulate: poolbench (ms/shot)", f"{1000 * ours / (3 * args.n):.2f}"),
            ("simulate: poolbench / raw", f"{ours / raw:.3f}")]
    for workers in (1, 2):
        t0 = time.perf_counter()
        runs = list(run_baselines(scenarios, DEFAULT_BASELINES, workers=workers, total=args.n, progress=False))
        dt = time.perf_counter() - t0
        rows.append((f"baseline run, {workers} worker(s) (scenarios/s)", f"{args.n / dt:.2f}"))
    sims = [r.sims for run in runs for r in run.records if r.player == "oracle"]
    rows += [("oracle sims/decision: median", f"{quantile(sims, 0.5):.0f}"),
             ("oracle sims/decision: p90", f"{quantile(sims, 0.9):.0f}"),
             ("oracle sims/decision: max (grid allows 120)", f"{max(sims)}")]
    w = max(len(k) for k, _ in rows)
    print(f"{'metric'.ljust(w)}  value\n{'-' * w}  -----")
    for k, v in rows:
        print(f"{k.ljust(w)}  {v}")
    return 0


def main(argv=None) -> int:
    from poolbench_data.config import parse, run_main

    return run_main(lambda: bench(parse(ScriptArguments, argv, __doc__)))


if __name__ == "__main__":
    sys.exit(main())
