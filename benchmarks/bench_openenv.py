"""The OpenEnv server's overhead a step: python benchmarks/bench_openenv.py [--n 100 --seed 0 --json FILE]

Starts `poolbench serve-env` on a loopback port the system picks and plays --n run-outs (boards 0 .. n-1 of base
seed --seed) over OpenEnv's WebSocket client (rl.openenv_client.PoolEnvClient), each answer the greedy Oracle's
on the current table, written as a model answers (demos.runout.answer). The Oracle decides on a local copy of
the episode (GameSession, stepped with the same answers) outside the timed part. A step's wall time is the
client's round trip (PoolEnvClient.step: the JSON message, the socket, the server's session and its step); the
step's own time is what the server reports spending in GameSession.step (reading the answer, the simulation,
the next observation). Their ratio, per step, is the server's overhead (1.0: none); the table gives its median
and the ratio of the sums, the step times, and the load average, since the machine's other work shows in both.
The transport's own cost: the round trip of --n_empty steps that play nothing (unparseable answers in one
nine-ball episode of 100 attempts: wasted attempts, no simulation).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ScriptArguments:
    """The OpenEnv server's wall time a step against the step's own time, on loopback."""

    n: int = field(default=100, metadata={"help": "run-outs to play (boards 0 .. n-1 of --seed)"})
    seed: int = field(default=0, metadata={"help": "base seed of the boards (0: the evaluation boards)"})
    n_empty: int = field(default=100, metadata={"help": "steps that play nothing, for the transport's own cost "
                                                        "(at most 100: one episode's cap)"})
    json: str = field(default="", metadata={"help": "file for the results (JSON; '' to skip)"})


def start_server() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "poolbench_data.cli", "serve-env", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = proc.stdout.readline()  # the server prints its address once it listens, or its error and exits
    m = re.search(r"at (http://127\.0\.0\.1:\d+) ", line)
    if not m:
        proc.kill()
        proc.wait()
        sys.exit(f"the server did not start: {line}{proc.stdout.read()[-3000:]}")
    return proc, m.group(1)


def play(url: str, n: int, seed: int) -> list[dict]:
    """Every step of the n run-outs: its wall time, the server's step time, and the local copy's."""
    from poolbench_data.demos.runout import answer
    from poolbench_data.games.players import make_player
    from poolbench_data.rl.game_env import GameSession
    from poolbench_data.rl.openenv_client import PoolEnvClient
    from poolbench_data.rl.server import PoolAction

    oracle, steps = make_player("runout", "oracle"), []
    with PoolEnvClient(base_url=url).sync() as env:
        for k in range(n):
            mirror = GameSession("runout")
            mirror.reset(k, seed)
            env.reset(game="runout", episode=k, seed=seed)
            while not mirror.done:
                text = answer(mirror.state, oracle.decide(mirror.state).action)
                t0 = time.perf_counter()
                result = env.step(PoolAction(answer=text))
                wall = time.perf_counter() - t0
                t0 = time.perf_counter()
                turn = mirror.step(text)
                local = time.perf_counter() - t0
                if result.reward != turn.reward or result.done != turn.done:
                    sys.exit(f"board {k}: the server's verdict differs from GameSession's")
                steps.append({"episode": k, "wall_s": wall, "step_s": result.metadata["step_s"], "local_s": local})
    return steps


def play_nothing(url: str, n: int) -> list[dict]:
    """n wasted attempts (no simulation) in one nine-ball episode: the transport and the session alone."""
    from poolbench_data.rl.openenv_client import PoolEnvClient
    from poolbench_data.rl.server import PoolAction

    steps = []
    with PoolEnvClient(base_url=url).sync() as env:
        env.reset(game="nineball", attempts=100)
        for _ in range(n):
            t0 = time.perf_counter()
            result = env.step(PoolAction(answer="no action here"))
            steps.append({"wall_s": time.perf_counter() - t0, "step_s": result.metadata["step_s"]})
    return steps


def bench(args: ScriptArguments) -> int:
    from poolbench_data.core.errors import check_at_least, check_output_file, check_seed, check_whole
    from poolbench_data.report.bench import load_row, print_metrics, write_result
    from poolbench_data.report.stats import quantile

    check_at_least("--n", args.n, 1)
    check_seed("--seed", args.seed)
    check_whole("--n_empty", args.n_empty, 1, 100)
    out = check_output_file(args.json, "--json") if args.json else None
    load = os.getloadavg()
    proc, url = start_server()
    try:
        empty = play_nothing(url, args.n_empty)
        steps = play(url, args.n, args.seed)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    end_load = os.getloadavg()
    ratios = [s["wall_s"] / s["step_s"] for s in steps]
    wall, step_s = sum(s["wall_s"] for s in steps), sum(s["step_s"] for s in steps)
    overhead_ms = [1e3 * (s["wall_s"] - s["step_s"]) for s in steps]
    summary = {"steps": len(steps), "episodes": args.n, "median_ratio": quantile(ratios, 0.5),
               "p90_ratio": quantile(ratios, 0.9), "sum_ratio": wall / step_s,
               "median_step_ms": 1e3 * quantile([s["step_s"] for s in steps], 0.5),
               "median_wall_ms": 1e3 * quantile([s["wall_s"] for s in steps], 0.5),
               "median_overhead_ms": quantile(overhead_ms, 0.5),
               "median_local_step_ms": 1e3 * quantile([s["local_s"] for s in steps], 0.5),
               "empty_steps": len(empty),
               "median_empty_round_trip_ms": 1e3 * quantile([s["wall_s"] for s in empty], 0.5),
               "median_empty_step_ms": 1e3 * quantile([s["step_s"] for s in empty], 0.5)}
    rows = [("run-out steps (episodes)", f"{summary['steps']} ({args.n})"),
            ("wall / step time, median (target <= 1.2)", f"{summary['median_ratio']:.3f}"),
            ("wall / step time, p90", f"{summary['p90_ratio']:.3f}"),
            ("sum of wall / sum of step time", f"{summary['sum_ratio']:.3f}"),
            ("step time on the server, median ms", f"{summary['median_step_ms']:.1f}"),
            ("round trip, median ms", f"{summary['median_wall_ms']:.1f}"),
            ("overhead (round trip - step time), median ms", f"{summary['median_overhead_ms']:.2f}"),
            ("the same step in the client's process, median ms", f"{summary['median_local_step_ms']:.1f}"),
            (f"round trip of a step that plays nothing ({len(empty)} steps), median ms",
             f"{summary['median_empty_round_trip_ms']:.2f} (server step {summary['median_empty_step_ms']:.2f})"),
            load_row(load, end_load)]
    print_metrics(rows)
    if out is not None:
        command = (f"python benchmarks/bench_openenv.py --n {args.n} --seed {args.seed} --n_empty {args.n_empty} "
                   f"--json {args.json}")
        write_result(out, command, "bench_openenv", load, end_load, summary=summary, steps=steps)
    return 0


def main(argv=None) -> int:
    from poolbench_data.config import parse, run_main

    return run_main(lambda: bench(parse(ScriptArguments, argv, __doc__)))


if __name__ == "__main__":
    sys.exit(main())
