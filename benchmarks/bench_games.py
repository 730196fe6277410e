"""Games at scale: python benchmarks/bench_games.py [--n_mock 1000 --n_oracle 100 --n_runout 200 --json FILE]

Plays, each run in a fresh process with --workers worker processes (the library's ordered pool,
players.pool.imap, which streams the episodes back as `poolbench baseline --game` receives them): MOCK on
--n_mock `nineball` episodes, the nine-ball Oracle (27 actions searched a turn) on --n_oracle, the position
Oracle on --n_runout run-outs from the evaluation boards (seed 0). For each run: wall time against the sum of
its simulation time divided by the workers (1.0 = nothing but simulation). Simulation time is the CPU time of
the simulating thread inside core.physics.run_system (pooltool's event loop and reading its result), summed
over the workers, so a worker's start (importing pooltool, loading numba's cache), a player's own work outside
the simulator, sending episodes back and a worker idle at the end all count as overhead. The run also counts
the simulations and, of them, the repeats: a table and shot (the balls, the cue's settings, the table) that the
same worker had simulated before. A searching player repeats none (its candidates and the shot it plays are
simulated once); MOCK, which does not search, simulates a break it drew in an earlier episode again.

Memory: peak RSS of the run's main process and of its largest worker, for MOCK on --n_mock episodes and on
--n_mock_small: equal peaks mean episodes stream (flat in their number). And the position Oracle's
simulations per decision (median, p90, max), as `poolbench baseline --game runout` prints them.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
_SIM = [0.0, 0, 0]  # this process's simulation CPU seconds, simulations and repeats, counted in run_system
_SEEN: set = set()  # (balls, cue, table) of every simulation this process ran


def _timed_run_system() -> None:
    """Count run_system's thread CPU time in this process (both names it is called by)."""
    from poolbench_data.core import physics
    from poolbench_data.games import nineball

    if getattr(physics.run_system, "timed", False):
        return
    raw = physics.run_system

    def run_system(system, *args, **kwargs):
        c = system.cue
        key = (tuple((b, float(x.state.rvw[0][0]), float(x.state.rvw[0][1])) for b, x in system.balls.items()),
               (c.V0, c.phi, c.theta, c.a, c.b), float(system.table.l))
        _SIM[2] += key in _SEEN
        _SEEN.add(key)
        t0 = time.thread_time()
        try:
            return raw(system, *args, **kwargs)
        finally:
            _SIM[0] += time.thread_time() - t0
            _SIM[1] += 1

    run_system.timed = True
    physics.run_system = nineball.run_system = run_system


def timed_episode(task):
    """games.play.play_episode(*task), with the simulation time, simulations and repeats it took in this worker."""
    from poolbench_data.games.play import play_episode

    _timed_run_system()
    before = list(_SIM)
    episode = play_episode(*task)
    return episode, *(now - then for now, then in zip(_SIM, before))


def child(spec: str) -> None:
    """One run in this (fresh) process: prints its measurements as one JSON line."""
    from poolbench_data.players.pool import imap

    s = json.loads(spec)
    tasks = [(s["game"], s["player"], k, s["seed"], s["attempts"]) for k in range(s["n"])]
    sim_s = run = repeats = episodes = success = balls = 0
    decisions: list[int] = []
    t0 = time.perf_counter()
    for episode, seconds, count, again in imap(timed_episode, iter(tasks), s["workers"]):
        sim_s += seconds
        run += count
        repeats += again
        episodes += 1
        success += episode.success
        balls += episode.balls
        decisions += episode.sims
    wall = time.perf_counter() - t0
    print(json.dumps({**s, "wall_s": wall, "sim_s": sim_s, "ratio": wall / (sim_s / s["workers"]),
                      "simulations_run": run, "repeats": repeats, "episodes": episodes,
                      "success": success, "balls": balls, "decisions": decisions,
                      "rss_main_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "rss_worker_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))


def run(game: str, player: str, n: int, workers: int, seed: int = 0, attempts: int = 15) -> dict:
    spec = json.dumps({"game": game, "player": player, "n": n, "workers": workers, "seed": seed,
                       "attempts": attempts})
    # The workers unpickle timed_episode by its module's name: the run's process and its spawned workers find
    # this file as the module `bench_games` through PYTHONPATH (the package itself is found as installed).
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH")) if p)}
    code = "import sys, bench_games; bench_games.child(sys.argv[1])"
    proc = subprocess.run([sys.executable, "-c", code, spec], capture_output=True, text=True, env=env)
    if proc.returncode:
        sys.exit(f"{player} on {n} {game} episodes failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


@dataclass(frozen=True)
class ScriptArguments:
    """Games at scale: wall time against simulation time, memory, the position Oracle's search."""

    n_mock: int = field(default=1000, metadata={"help": "MOCK's nineball episodes"})
    n_mock_small: int = field(default=250, metadata={"help": "MOCK's episodes of the second memory run (0: skip)"})
    n_oracle: int = field(default=100, metadata={"help": "the nine-ball Oracle's nineball episodes"})
    n_runout: int = field(default=200, metadata={"help": "the position Oracle's run-outs (evaluation boards)"})
    workers: int = field(default=2, metadata={"help": "worker processes of every run"})
    json: str = field(default="", metadata={"help": "file for the results (JSON; '' to skip)"})


def bench(args: ScriptArguments) -> int:
    from poolbench_data.core.errors import check_at_least, check_output_file
    from poolbench_data.report.bench import load_row, print_metrics, write_result
    from poolbench_data.report.stats import quantile

    for flag in ("n_mock", "n_oracle", "n_runout", "workers"):
        check_at_least(f"--{flag}", getattr(args, flag), 1)
    check_at_least("--n_mock_small", args.n_mock_small, 0)
    out = check_output_file(args.json, "--json") if args.json else None
    load = os.getloadavg()
    runs = {"mock": run("nineball", "mock", args.n_mock, args.workers),
            "oracle": run("nineball", "oracle", args.n_oracle, args.workers),
            "position_oracle": run("runout", "position-oracle", args.n_runout, args.workers)}
    if args.n_mock_small:
        runs["mock_small"] = run("nineball", "mock", args.n_mock_small, args.workers)
    d = runs["position_oracle"].pop("decisions")
    search = {"median": quantile(d, 0.5), "p90": quantile(d, 0.9), "max": max(d), "decisions": len(d)}
    for r in runs.values():
        r.pop("decisions", None)
    rows = [(f"{r['player']}, {r['n']} {r['game']} episodes: wall s / simulation CPU s / ratio ({r['workers']} "
             f"workers)", f"{r['wall_s']:.1f} / {r['sim_s']:.1f} / {r['ratio']:.3f}") for r in runs.values()]
    rows += [(f"{r['player']}, {r['n']} {r['game']} episodes: simulations / repeats of one its worker ran",
              f"{r['simulations_run']} / {r['repeats']}") for r in runs.values()]
    rows += [(f"{r['player']}, {r['n']} {r['game']} episodes: peak RSS main / largest worker, MB",
              f"{r['rss_main_mb']:.0f} / {r['rss_worker_mb']:.0f}") for r in runs.values()
             if r["player"] == "mock"]
    rows.append(("position-oracle simulations per decision: median / p90 / max (decisions)",
                 f"{search['median']:.0f} / {search['p90']:.0f} / {search['max']} ({search['decisions']})"))
    end_load = os.getloadavg()
    rows.append(load_row(load, end_load))
    print_metrics(rows)
    if out is not None:
        command = (f"python benchmarks/bench_games.py --n_mock {args.n_mock} --n_mock_small {args.n_mock_small} "
                   f"--n_oracle {args.n_oracle} --n_runout {args.n_runout} --workers {args.workers} --json {args.json}")
        write_result(out, command, "bench_games", load, end_load, runs=runs, position_oracle_search=search)
    return 0


def main(argv=None) -> int:
    from poolbench_data.config import parse, run_main

    return run_main(lambda: bench(parse(ScriptArguments, argv, __doc__)))


if __name__ == "__main__":
    sys.exit(main())
