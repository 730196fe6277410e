"""Dataset build benchmark: python benchmarks/bench_dataset.py --sizes 200,1000 --workers 2

For each size, builds the scenarios + traces configs (all four baselines) in
a fresh process and reports wall time, scenarios/s and peak memory (the
builder process and, separately, the largest worker), plus the builder's
RSS at each quarter of the run: a flat timeline shows that rows stream to
shards instead of accumulating.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

CHILD = """
import json, resource, sys, threading, time
from poolbench_data.hub.build import build_benchmark
n, workers, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
samples, done = [], threading.Event()
def sample():  # current (not peak) RSS, so growth over time is visible
    while not done.wait(5.0):
        samples.append(int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize() / 2**20)
threading.Thread(target=sample, daemon=True).start()
t0 = time.perf_counter()
counts = build_benchmark(out, eval_n=1, train_n=n, workers=workers, progress=False)
dt = time.perf_counter() - t0
done.set()
cut = [len(samples) * q // 4 for q in range(5)]
quarters = [max(samples[a:max(b, a + 1)], default=0) for a, b in zip(cut, cut[1:])]
print(json.dumps({"seconds": dt, "counts": counts, "rss_quarters_mb": quarters,
                  "rss_main_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "rss_worker_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


@dataclass(frozen=True)
class ScriptArguments:
    """Dataset builds of each size in a fresh process: time, throughput, peak memory."""

    sizes: str = field(default="200,1000", metadata={"help": "comma-separated train-split sizes, a build each"})
    workers: int = field(default=2, metadata={"help": "worker processes of each build"})


def bench(args: ScriptArguments) -> int:
    from poolbench_data.core.errors import UserError

    try:
        sizes = [int(x) for x in args.sizes.split(",")]
    except ValueError:
        raise UserError(f"--sizes {args.sizes!r}: give comma-separated board counts, e.g. 200,1000") from None
    rows = []
    for n in sizes:
        with tempfile.TemporaryDirectory() as d:
            proc = subprocess.run([sys.executable, "-c", CHILD, str(n), str(args.workers), f"{d}/poolbench"],
                                  capture_output=True, text=True)
        if proc.returncode:
            sys.exit(f"build of {n} scenarios failed:\n{proc.stderr[-3000:]}")
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        rows.append((n, args.workers, r["seconds"], n / r["seconds"], r["rss_main_mb"], r["rss_worker_mb"],
                     r["counts"]["train"]["traces"], "/".join(f"{q:.0f}" for q in r["rss_quarters_mb"])))
    print(f"{'scenarios':>9} {'workers':>7} {'seconds':>8} {'scen/s':>7} {'peak RSS main MB':>16} "
          f"{'peak RSS worker MB':>18} {'trace rows':>10}  builder max RSS MB in each quarter of the run")
    for n, w, s, rate, m, c, t, q in rows:
        print(f"{n:>9} {w:>7} {s:>8.1f} {rate:>7.2f} {m:>16.0f} {c:>18.0f} {t:>10}  {q}")
    return 0


def main(argv=None) -> int:
    from poolbench_data.config import parse, run_main

    return run_main(lambda: bench(parse(ScriptArguments, argv, __doc__)))


if __name__ == "__main__":
    sys.exit(main())
