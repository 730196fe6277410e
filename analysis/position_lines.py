"""What the cue ball's departure lines in a ghost_ball report are worth to a player that does not simulate.

A report-reading player runs out from each start of the evaluation seed: each turn it reads the reports of its
balls in the order the prompt lists them and plays the first open shot of the first open report (the tool SFT
model's rule), with the report's potting-point aim, at one speed. Only the spin differs between the players:
the protocol's default (b = 0.25, the spin a model that leaves `b` out plays), stun, follow or draw every shot,
or, reading the report's `cue_after_deg` (llm.tools, `lines`), the spin whose line leaves the cue ball best
placed for the next shot: the line from the ghost ball that passes nearest a ghost ball of another own ball's
open pot (the 8 once it is the last), skipping a line that runs into a pocket before its first cushion. Balls a
visit, run-outs and fouls, with exact paired sign tests of the line reader against each fixed spin.

    python analysis/position_lines.py --n 200
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field

from poolbench_data.core.records import Shot
from poolbench_data.games.records import GameState, Move

SPINS = {"default": None, "stun": 0.0, "follow": 0.4, "draw": -0.4}  # b of each fixed-spin player (None: left out)
LINE_B = {name: SPINS[name] for name in ("stun", "follow", "draw")}  # the spin each of a report's lines is played with
SPEED = 5.0  # m/s: the tool SFT model's speed


def first_open(view) -> tuple[str, dict] | None:
    """(ball, its report's first open shot) of the first listed own ball with one; with lines."""
    from poolbench_data.demos.tools import listed_own
    from poolbench_data.llm.tools import ball_report

    for ball in listed_own(view):
        report = ball_report(view, ball, lines=True)
        shot = next((x for x in report["shots"] if x["open"]), None)
        if shot is not None:
            return ball, shot
    return None


def _ray_gap(x: float, y: float, heading: float, px: float, py: float) -> float:
    """How near the ray from (x, y) along `heading` passes to (px, py); inf for a point behind it."""
    dx, dy = math.cos(math.radians(heading)), math.sin(math.radians(heading))
    ahead = (px - x) * dx + (py - y) * dy
    return abs((px - x) * dy - (py - y) * dx) if ahead > 0 else math.inf


def line_spin(view, ball: str, shot: dict) -> str:
    """The spin whose line from the ghost ball passes nearest a next ghost ball (module docstring)."""
    from poolbench_data.core.candidates import candidates
    from poolbench_data.core.cue_paths import path_pocket, shot_points

    gx, gy = shot_points(view, ball, shot["pocket"])[3]
    rest = [b.id for b in view.own() if b.id != ball]
    targets = [c.ghost for c in candidates(view) if c.ball in rest and not c.pocket_blockers]
    if not rest:  # the 8 comes next: its ghost balls, from the table as it is
        targets = [c.ghost for c in candidates(view, group="eight") if not c.pocket_blockers]
    best = ("stun", math.inf)
    for name, heading in shot["cue_after_deg"].items():
        if heading is None:
            continue
        dx, dy = math.cos(math.radians(heading)), math.sin(math.radians(heading))
        if path_pocket(gx, gy, dx, dy, 0) == 0:
            continue  # the line runs into a pocket: a scratch
        gap = min((_ray_gap(gx, gy, heading, *t) for t in targets), default=math.inf)
        if gap < best[1]:
            best = (name, gap)
    return best[0]


@dataclass(frozen=True)
class ReportReader:
    """The report-reading player with one spin rule: a name of SPINS, or `lines`."""

    spin: str
    searches = False

    def decide(self, state: GameState) -> Move:
        from poolbench_data.games.step import RULES
        from poolbench_data.players.baselines import random_player

        rules = RULES[state.game]
        view = rules.view(state)
        found = first_open(view)
        if found is None:  # nothing open: the fallback every baseline has, a fresh random draw
            d = random_player(view, seed=state.seed * 100 + state.attempts)
            return Move(rules.real_shot(state, d.shot), how="nothing open")
        ball, shot = found
        if self.spin == "lines":
            name = line_spin(view, ball, shot)
            b, how = LINE_B[name], f"line {name}"
        else:
            b, how = SPINS[self.spin], self.spin
        out = Shot(shot["potting_point_aim_angle_deg"], SPEED, 0.0, 0.25 if b is None else b, target_ball=ball,
                   target_pocket=shot["pocket"])
        return Move(rules.real_shot(state, out), how=how)


def _visit(task: tuple[str, int]) -> dict:
    from poolbench_data.games.play import play
    from poolbench_data.games.step import start_game

    spin, k = task
    episode = play(start_game("runout", k, 0), ReportReader(spin), spin)
    return {"player": spin, "episode": k, "balls": episode.balls, "success": episode.success,
            "fouls": sum(bool(s.last.foul_reasons) for s in episode.states[1:]),
            "hows": list(episode.hows)}


@dataclass(frozen=True)
class ScriptArguments:
    """Report-reading players on run-outs, one spin rule each."""

    n: int = field(default=200, metadata={"help": "run-out starts of the evaluation seed (0)"})
    workers: int = field(default=1, metadata={"help": "processes that play the visits"})
    json: str = field(default="", metadata={"help": "also write the table's numbers, the command and the machine "
                                                    "here"})


def study(a: ScriptArguments, argv) -> None:
    from collections import Counter

    from poolbench_data.core.errors import check_at_least
    from poolbench_data.players.pool import imap
    from poolbench_data.report.stats import sign_test_exact

    check_at_least("--n", a.n, 1)
    check_at_least("--workers", a.workers, 1)
    players = [*SPINS, "lines"]
    rows = list(imap(_visit, [(s, k) for s in players for k in range(a.n)], a.workers))
    by = {s: {r["episode"]: r for r in rows if r["player"] == s} for s in players}
    out = {"n": a.n, "speed": SPEED, "players": {}, "lines_vs": {}}
    print(f"report-reading players on {a.n} run-outs of seed 0 (first open shot of the first open listed ball, "
          f"{SPEED:g} m/s)")
    print(f"{'spin':<10} {'balls/visit':>11} {'run-outs':>8} {'fouls':>6}")
    for s in players:
        v = by[s].values()
        balls = sum(r["balls"] for r in v) / a.n
        out["players"][s] = {"balls_per_visit": balls, "runouts": sum(r["success"] for r in v),
                             "fouls": sum(r["fouls"] for r in v)}
        if s == "lines":
            out["players"][s]["lines_chosen"] = dict(Counter(h for r in v for h in r["hows"]))
        print(f"{s:<10} {balls:>11.2f} {out['players'][s]['runouts']:>8} {out['players'][s]['fouls']:>6}")
    print("lines against each fixed spin: visits with more / fewer balls, exact sign p")
    for s in SPINS:
        more = sum(by["lines"][k]["balls"] > by[s][k]["balls"] for k in range(a.n))
        fewer = sum(by["lines"][k]["balls"] < by[s][k]["balls"] for k in range(a.n))
        p_value = sign_test_exact(more, fewer)
        out["lines_vs"][s] = {"more": more, "fewer": fewer, "p": p_value}
        print(f"  vs {s:<8} {more} / {fewer}, p = {p_value:.3g}")
    if a.json:
        from poolbench_data.report.pilot import machine

        out["command"] = "python analysis/position_lines.py " + " ".join(argv if argv is not None else sys.argv[1:])
        out["machine"] = machine()
        with open(a.json, "w") as f:
            json.dump(out, f, indent=2, sort_keys=True)
            f.write("\n")


def main(argv=None) -> int:
    from poolbench_data.config import parse, run_main

    return run_main(lambda: study(parse(ScriptArguments, argv, __doc__), argv))


if __name__ == "__main__":
    sys.exit(main())
