"""Dataset build benchmark: python benchmarks/bench_dataset.py --sizes 200,1000 --workers 2

For each size, builds the scenarios + traces configs (all four baselines) in
a fresh process and reports wall time, scenarios/s and peak memory (the
builder process and, separately, the largest worker). Flat peak memory
across sizes shows that rows stream to shards instead of accumulating.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile

CHILD = """
import json, resource, sys, time
from poolbench_data.hub.build import build_benchmark
n, workers, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
t0 = time.perf_counter()
counts = build_benchmark(out, eval_n=1, train_n=n, workers=workers, progress=False)
dt = time.perf_counter() - t0
print(json.dumps({"seconds": dt, "counts": counts,
                  "rss_main_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "rss_worker_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="200,1000")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    rows = []
    for n in (int(x) for x in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as d:
            proc = subprocess.run([sys.executable, "-c", CHILD, str(n), str(args.workers), f"{d}/poolbench"],
                                  capture_output=True, text=True)
        if proc.returncode:
            sys.exit(f"build of {n} scenarios failed:\n{proc.stderr[-3000:]}")
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        rows.append((n, args.workers, r["seconds"], n / r["seconds"], r["rss_main_mb"], r["rss_worker_mb"],
                     r["counts"]["train"]["traces"]))
    print(f"{'scenarios':>9} {'workers':>7} {'seconds':>8} {'scen/s':>7} {'peak RSS main MB':>16} "
          f"{'peak RSS worker MB':>18} {'trace rows':>10}")
    for n, w, s, rate, m, c, t in rows:
        print(f"{n:>9} {w:>7} {s:>8.1f} {rate:>7.2f} {m:>16.0f} {c:>18.0f} {t:>10}")


if __name__ == "__main__":
    main()
