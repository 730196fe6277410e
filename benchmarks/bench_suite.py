"""The whole test suite's wall time on fresh clones, commit after commit in one run:

    python benchmarks/bench_suite.py --commits 2bccf1c,HEAD --json docs/results/test_suite_times.json

Each commit is cloned from this repository into a folder of its own and `bash scripts/test.sh` runs there as CI
runs it (.ci/run): the venv from the commit's lock (uv's cache as it is), the import contracts, the whole suite.
The runs follow one another, never overlap, so each has the machine alone. Prints a table (commit, tests, wall
time, its ratio to the first commit's) and writes it as JSON with the machine, each run's pytest summary line and
its slowest tests. Run it on an idle machine: another process on the CPUs moves every figure.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUMMARY = re.compile(r"^=*\s*(?P<counts>\d+ (?:passed|failed|error).*) in (?P<seconds>[\d.]+)s")
DURATION = re.compile(r"^\s*(?P<seconds>[\d.]+)s (?P<phase>call|setup|teardown)\s+(?P<test>tests/\S+)")


@dataclass(frozen=True)
class ScriptArguments:
    """The whole test suite's wall time on fresh clones of each commit."""

    commits: str = field(default="", metadata={"help": "commits to time, comma-separated, in order (e.g. "
                                                       "2bccf1c,HEAD); the first is the ratios' base"})
    json: str = field(default="", metadata={"help": "file for the results (JSON)"})
    repeats: int = field(default=1, metadata={"help": "runs of each commit, interleaved (A B A B ...); the table "
                                                      "gives each commit's median"})
    keep: bool = field(default=False, metadata={"help": "keep each clone and its log (printed) instead of deleting "
                                                        "the clone"})


def check(args: ScriptArguments) -> list[tuple[str, str]]:
    """(name as given, full hash) of each commit, and the output file's folder, checked before any clone."""
    from poolbench_data.core.errors import UserError, check_output_file

    if args.repeats < 1:
        raise UserError(f"--repeats {args.repeats}: give 1 or more runs of each commit")
    names = [c.strip() for c in args.commits.split(",") if c.strip()]
    if not names:
        raise UserError("--commits is empty; give the commits to time, e.g. --commits 2bccf1c,HEAD")
    commits = []
    for name in names:
        done = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}"], cwd=ROOT,
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise UserError(f"--commits {name!r} is not a commit of this repository; give a hash, tag or branch")
        commits.append((name, done.stdout.strip()))
    if not args.json:
        raise UserError("--json is empty; give a file for the results, e.g. --json docs/results/test_suite_times.json")
    check_output_file(args.json, "--json")
    return commits


def machine() -> dict:
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = next((line.split(":", 1)[1].strip() for line in lscpu.splitlines() if line.startswith("Model name")), "")
    flags = next((line.split(":", 1)[1].split() for line in lscpu.splitlines() if line.startswith("Flags")), [])
    return {"cpu": model or platform.processor(), "cores": os.cpu_count(), "bf16": "avx512_bf16" in flags
            or "amx_bf16" in flags, "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
                                                      / 2**30, 1), "python": platform.python_version()}


def time_commit(name: str, sha: str, keep: bool) -> dict:
    """Clone `sha` into a folder of its own and run `bash scripts/test.sh` there; its times and counts."""
    folder = Path(tempfile.mkdtemp(prefix="suite-"))
    clone = folder / "repo"
    subprocess.run(["git", "clone", "-q", "--no-local", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "checkout", "-q", sha], cwd=clone, check=True)
    log = folder / "test.log"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    load = os.getloadavg()[0]
    started = time.monotonic()
    with log.open("w") as out:
        rc = subprocess.run(["bash", "scripts/test.sh"], cwd=clone, stdout=out, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, env=env).returncode
    wall = time.monotonic() - started
    lines = log.read_text(errors="replace").splitlines()
    summary = next((m for m in map(SUMMARY.match, reversed(lines)) if m), None)
    slowest = [{"test": m["test"], "phase": m["phase"], "s": float(m["seconds"])}
               for m in map(DURATION.match, lines) if m][:10]
    counts = {kind: int(n) for n, kind in re.findall(r"(\d+) (passed|failed|skipped|errors?)",
                                                     summary["counts"] if summary else "")}
    row = {"commit": name, "sha": sha, "exit_code": rc, "wall_s": round(wall, 1),
           "pytest_s": float(summary["seconds"]) if summary else None, "tests": counts,
           "summary": summary.group(0).strip("= ") if summary else (lines[-1] if lines else ""),
           "load_at_start": round(load, 2), "slowest": slowest}
    if keep:
        row["log"] = str(log)
    else:
        shutil.rmtree(folder, ignore_errors=True)
    return row


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {int(round(seconds % 60)):02d} s"


def bench(args: ScriptArguments) -> int:
    commits = check(args)
    runs = []
    for _ in range(args.repeats):
        for name, sha in commits:
            print(f"{name} ({sha[:9]}): bash scripts/test.sh on a fresh clone ...", flush=True)
            runs.append(time_commit(name, sha, args.keep))
            print(f"  {runs[-1]['summary']}; wall {minutes(runs[-1]['wall_s'])}", flush=True)
    median = {name: statistics.median(r["wall_s"] for r in runs if r["commit"] == name) for name, _ in commits}
    base = median[commits[0][0]]
    print(f"\n{'commit':<12} {'tests (last run)':<34} {'wall (median)':>14} {'/ first':>8}")
    for name, _ in commits:
        last = [r for r in runs if r["commit"] == name][-1]
        tests = ", ".join(f"{n} {k}" for k, n in last["tests"].items()) or f"exit {last['exit_code']}"
        print(f"{name[:12]:<12} {tests:<34} {minutes(median[name]):>14} {median[name] / base:>8.2f}")
    command = f"python benchmarks/bench_suite.py --commits {args.commits} --repeats {args.repeats} --json {args.json}"
    Path(args.json).write_text(json.dumps({"command": command, "machine": machine(), "median_wall_s": median,
                                           "runs": runs}, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0 if all(r["exit_code"] == 0 for r in runs) else 1


def main(argv=None) -> int:
    from poolbench_data.config import parse, run_main

    return run_main(lambda: bench(parse(ScriptArguments, argv, __doc__)))


if __name__ == "__main__":
    sys.exit(main())
