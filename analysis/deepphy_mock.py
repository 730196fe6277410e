"""DeepPHY's MOCK on its nine-ball task, written against pooltool's own API only, so that the same script runs
under pooltool 0.4.4 (DeepPHY's pin) and 0.6.0 (this project's): the two runs differ by pooltool's version
and nothing else.

    .venv/bin/python analysis/deepphy_mock.py --n 300 --out docs/results/deepphy_mock_pooltool_0.6.0.json
    HOME=/tmp/pt044home /tmp/pt044/bin/python analysis/deepphy_mock.py --n 300 \\
        --out docs/results/deepphy_mock_pooltool_0.4.4.json

The rules are the `nineball` game's (docs/games.md): pooltool's nine-ball rack (`get_rack(NINEBALL,
Table.default())`) drawn from each of --rack_seeds as `games/nineball.rack` draws it, the first attempt the break, every
shot aimed at the lowest-numbered ball (`aim.at_ball`, no cut) with DeepPHY's speed and strike spot, pocketed
balls removed and the rest left where the simulation stopped, a pocketed cue ball put back at (w / 2, l / 4)
(the nearest free point on the long centre line when a ball stands there), success the 9 pocketed on any
attempt, at most 15 attempts, a shot stopped at 1,000 events (--max_events) or one the simulator raises on
(pooltool 0.4.4's quartic solver does, on some shots) ending the episode, its status recorded
(`simulator-event-limit`, `simulator-error`). MOCK draws uniformly among the 27 actions not yet tried in the
episode, from the generator `games/players.Mock` seeds with (player seed 0, the episode's seed, the
attempt). Under 0.6.0 this script gives the same episode, attempt for attempt, as
`poolbench baseline --game nineball --players mock` (`--check FILE` compares with that command's JSON).

It imports no poolbench_data (the package does not import under pooltool 0.4.4, whose simulation loop it
reaches into), so DeepPHY's action tables and the rack and respot rules are restated here from
protocol/strikespot.py and games/nineball.py, and the flags are argparse's. pooltool 0.4.4 needs its own
environment (docs/games.md, "pooltool 0.4.4"); importing it rewrites ~/.config/pooltool with 0.4.4's
settings, so run it with HOME pointing elsewhere. Each version's default physics is built explicitly
(`PhysicsEngine(resolver=default_resolver())`), never read from that folder.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

SPEEDS = {"Low": 2.0, "Medium": 5.0, "High": 8.0}  # protocol/strikespot.py: DeepPHY's SPEED_MAPPING
STRIKESPOTS = {  # protocol/strikespot.py: DeepPHY's STRIKESPOT_MAPPING, (a, b)
    "Top Left Spin": (0.35, 0.35), "Top Spin": (0.0, 0.5), "Top Right Spin": (-0.35, 0.35),
    "Middle Left Spin": (0.35, 0.0), "Middle Spin": (0.0, 0.0), "Middle Right Spin": (-0.35, 0.0),
    "Bottom Left Spin": (0.35, -0.35), "Bottom Spin": (0.0, -0.5), "Bottom Right Spin": (-0.35, -0.35),
}
ACTIONS = tuple((SPEEDS[s], *STRIKESPOTS[p]) for s in SPEEDS for p in STRIKESPOTS)  # speed-major, 27
DEALT = ("2", "3", "4", "5", "6", "7", "8")
ORDER = ("cue", "1", *DEALT, "9")
MAX_EVENTS = 1000  # core/physics.py
# Where get_rack puts the apex ball (the 1), as a fraction of the table's length: the versions differ here too.
FOOT_SPOT = {"0.4.4": 0.77, "0.6.0": 0.75}
CHECKPOINTS = (1, 3, 6, 9, 12, 15)
DEEPPHY_MOCK = {"n": 300, "pct": dict(zip(CHECKPOINTS, (2.33, 10.00, 18.33, 31.33, 40.00, 48.00))),
                "avg_attempts": 7.88}
Z95 = 1.959963984540054


def episode_seed(base_seed: int, k: int) -> int:
    """boards/generate.scenario_seed."""
    return int(np.random.SeedSequence([base_seed, k]).generate_state(1, np.uint64)[0] >> np.uint64(1))


_CACHE: dict = {}


def table():
    import pooltool as pt

    if "table" not in _CACHE:
        _CACHE["table"] = pt.Table.default()
    return _CACHE["table"]


def engine():
    from pooltool.physics.engine import PhysicsEngine
    from pooltool.physics.resolve.resolver import default_resolver

    if "engine" not in _CACHE:
        _CACHE["engine"] = PhysicsEngine(resolver=default_resolver())
    return _CACHE["engine"]


def rack(seed: int, foot_spot: float | None = None) -> dict[str, tuple[float, float]]:
    """games/nineball.rack: get_rack under seeded global generators (restored after), the 2-8 dealt again to
    their seven places by a generator seeded with the rack's seed. `foot_spot`: the rack moved along the table
    so that its apex stands at this fraction of the length instead of where this pooltool puts it (FOOT_SPOT)."""
    import pooltool as pt

    py_state, np_state = random.getstate(), np.random.get_state()
    try:
        random.seed(seed)
        np.random.seed(int(np.random.SeedSequence(seed).generate_state(1)[0]))
        made = pt.get_rack(pt.GameType.NINEBALL, table())
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)
    xy = {bid: (float(b.state.rvw[0][0]), float(b.state.rvw[0][1])) for bid, b in made.items()}
    places = sorted((xy[b] for b in DEALT), key=lambda p: (round(p[1], 9), round(p[0], 9)))
    dealt = np.random.default_rng(seed).permutation(len(DEALT))
    xy.update({DEALT[i]: place for i, place in zip(dealt, places)})
    if foot_spot is not None:
        dy = (foot_spot - FOOT_SPOT[pt.__version__]) * float(table().l)
        xy.update({b: (x, y + dy) for b, (x, y) in xy.items() if b != "cue"})
    return {b: xy[b] for b in ORDER}


def respot(balls: dict[str, tuple[float, float]]) -> tuple[float, float]:
    """games/nineball.respot: (w/2, l/4), else the nearest free point on the long centre line, head rail first."""
    from pooltool.objects.ball.params import BallParams

    t, R = table(), float(BallParams.default().R)
    x, y0 = 0.5 * float(t.w), 0.25 * float(t.l)
    for i in range(int(float(t.l) / (R / 4))):
        for y in (y0 - i * R / 4, y0 + i * R / 4):
            if R <= y <= float(t.l) - R and all(math.hypot(x - bx, y - by) >= 2 * R + 0.001
                                                   for bx, by in balls.values()):
                return x, y
    raise RuntimeError("no free point on the long centre line for the cue ball")


def shoot(balls: dict[str, tuple[float, float]], action, max_events: int = MAX_EVENTS) -> tuple[str, list, dict]:
    """One attempt at the lowest ball: (status, pocketed ids, resting positions of the others); a simulator that
    raises gives ("error: ...", [], the balls as they were), as core.physics records a crash."""
    try:
        return _shoot(balls, action, max_events)
    except Exception as e:
        return f"error: {type(e).__name__}: {e}", [], balls


def _shoot(balls, action, max_events):
    import pooltool as pt

    V0, a, b = action
    target = min((k for k in balls if k != "cue"), key=int)
    phi = float(pt.aim.at_ball(pt.Ball.create("cue", xy=balls["cue"]), pt.Ball.create(target, xy=balls[target])))
    made = {k: pt.Ball.create(k, xy=balls[k]) for k in ORDER if k in balls}
    system = pt.System(cue=pt.Cue(cue_ball_id="cue"), table=table(), balls=made)
    system.cue.set_state(V0=V0, phi=phi % 360.0, theta=0.0, a=a, b=b)
    pt.simulate(system, engine=engine(), inplace=True, max_events=max_events)
    events = [e for e in system.events if e.event_type.value != "none"]
    pocketed = [str(e.ids[0]) for e in events if e.event_type.value == "ball_pocket"]
    rest = {k: (float(v.state.rvw[0][0]), float(v.state.rvw[0][1])) for k, v in system.balls.items()
            if k not in pocketed}
    return ("event-limit" if max_events and len(events) > max_events else "ok"), pocketed, rest


def mock_episode(args) -> dict:
    """MOCK's episode k: {"k", "success", "attempts", "end", "actions"}."""
    k, base_seed, rack_seed, max_attempts, foot_spot, max_events = args
    seed = episode_seed(base_seed, k)
    balls, tried, end, message = dict(rack(rack_seed, foot_spot)), [], "", ""
    for attempt in range(max_attempts):
        untried = [x for x in ACTIONS if x not in tried] or list(ACTIONS)
        action = untried[int(np.random.default_rng([0, seed, attempt]).integers(len(untried)))]
        tried.append(action)
        status, pocketed, rest = shoot(balls, action, max_events)
        if "cue" in pocketed:
            rest = {"cue": respot(rest), **rest}
        balls = rest
        if "9" in pocketed:
            end = "nine-potted"
        elif status != "ok":
            end, message = f"simulator-{status.split(':')[0]}", status
        if end:
            break
    return {"k": k, "success": end == "nine-potted", "attempts": attempt + 1, "end": end or "attempts",
            "message": message, "actions": [ACTIONS.index(x) for x in tried]}


def wilson(k: int, n: int) -> tuple[float, float]:
    """report/stats.wilson."""
    p, z = k / n, Z95
    denom = 1 + z * z / n
    centre, half = (p + z * z / (2 * n)) / denom, z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def summary(episodes: list[dict], max_attempts: int) -> dict:
    n, won = len(episodes), [e["attempts"] for e in episodes if e["success"]]
    by = {}
    for c in CHECKPOINTS:
        if c <= max_attempts:
            k = sum(a <= c for a in won)
            lo, hi = wilson(k, n)
            by[c] = {"k": k, "n": n, "pct": 100 * k / n, "lo": 100 * lo, "hi": 100 * hi}
    ends: dict[str, int] = {}
    for e in episodes:
        ends[e["end"]] = ends.get(e["end"], 0) + 1
    return {"n": n, "by_attempt": by, "avg_attempts": sum(won) / len(won) if won else float("nan"),
            "ends": dict(sorted(ends.items()))}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--n", type=int, default=300, help="episodes a rack (DeepPHY's MOCK row: 300)")
    p.add_argument("--seed", type=int, default=0, help="base seed of the episodes' seeds (MOCK's draws)")
    p.add_argument("--rack_seeds", default="0", help="comma-separated rack seeds, n episodes each "
                                                     "(0: the `nineball` game's one rack)")
    p.add_argument("--attempts", type=int, default=15, help="the most attempts an episode takes (DeepPHY's 15)")
    p.add_argument("--foot_spot", type=float, default=None,
                   help="move the rack so that the 1 stands at this fraction of the table's length (pooltool "
                        "0.4.4 racks at 0.77, 0.6.0 at 0.75; default: this pooltool's own)")
    p.add_argument("--max_events", type=int, default=MAX_EVENTS,
                   help="events after which a shot is stopped and its episode ends (core/physics.py's 1,000; "
                        "0: no limit, pooltool's default, as DeepPHY's runner calls simulate)")
    p.add_argument("--workers", type=int, default=2, help="worker processes")
    p.add_argument("--out", default="", help="JSON results path ('' to skip)")
    p.add_argument("--check", default="", help="a `poolbench baseline --game nineball` JSON to compare episodes with")
    args = p.parse_args(argv)
    if args.n < 1 or args.attempts < 1 or args.workers < 1:
        p.error("--n, --attempts and --workers must be >= 1")
    if args.max_events < 0:
        p.error("--max_events must be >= 0 (0: no limit)")
    try:
        rack_seeds = [int(s) for s in args.rack_seeds.split(",")]
    except ValueError:
        p.error(f"--rack_seeds {args.rack_seeds!r}: give comma-separated integers")
    import pooltool as pt

    version = getattr(pt, "__version__", "?")
    if args.foot_spot is not None and version not in FOOT_SPOT:
        p.error(f"--foot_spot: pooltool {version}'s rack position is not known here ({', '.join(FOOT_SPOT)})")
    t0 = time.perf_counter()
    racks = {}
    with ProcessPoolExecutor(args.workers) as pool:
        for rs in rack_seeds:
            tasks = [(k, args.seed, rs, args.attempts, args.foot_spot, args.max_events) for k in range(args.n)]
            episodes = list(pool.map(mock_episode, tasks, chunksize=4))
            racks[str(rs)] = {"rack": rack(rs, args.foot_spot), "summary": summary(episodes, args.attempts),
                              "episodes": episodes}
            s = racks[str(rs)]["summary"]
            print(f"pooltool {version}, rack seed {rs}: " + " / ".join(
                f"{s['by_attempt'][c]['pct']:.2f}" for c in s["by_attempt"]) + f" %, {s['avg_attempts']:.2f} "
                f"attempts ({args.n} episodes; 15: [{s['by_attempt'][15]['lo']:.1f}, "
                f"{s['by_attempt'][15]['hi']:.1f}] %); ends: {s['ends']}", flush=True)
    elapsed = time.perf_counter() - t0
    print("DeepPHY MOCK (published, 300 games): " + " / ".join(f"{v:.2f}" for v in DEEPPHY_MOCK["pct"].values())
          + f" %, {DEEPPHY_MOCK['avg_attempts']:.2f} attempts")
    if args.check:
        theirs = json.load(open(args.check))["episodes"]
        theirs = {e["episode"]: e for e in theirs if e["player"] == "mock"}
        mine = racks[str(rack_seeds[0])]["episodes"]
        same = [e["k"] for e in mine if e["k"] in theirs and (theirs[e["k"]]["end"], theirs[e["k"]]["attempts"])
                == (e["end"], e["attempts"])]
        compared = sum(e["k"] in theirs for e in mine)
        print(f"--check {args.check}: {len(same)} of {compared} episodes end the same way on the same attempt")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"pooltool": version, "python": platform.python_version(), "numpy": np.__version__,
                       "command": " ".join(sys.argv), "n": args.n, "seed": args.seed, "attempts": args.attempts,
                       "max_events": args.max_events,
                       "foot_spot": args.foot_spot if args.foot_spot is not None else FOOT_SPOT.get(version),
                       "workers": args.workers, "elapsed_s": elapsed, "deepphy_mock": DEEPPHY_MOCK,
                       "racks": racks}, f, sort_keys=True, separators=(",", ":"))
        print(f"results saved to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
