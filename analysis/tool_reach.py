"""What a tool-using player can reach on the held-out boards, and where a model's shots went.

The ceiling: on each board, what the ghost_ball tool shows (geometry only). Boards with an own ball whose
report has an open shot; boards where one is found by calling own balls in the order the prompt lists them,
within the evaluator's calls; and, simulated, boards where some shot the tool shows (any own ball's shots, the
potting-point aim, each of the Oracle's speeds) is a legal contact or a clean pot: a player that always chose
best among what the tool shows, no more. On boards with no open own shot, the same for the one-cushion kicks
the reports show (the first own ball's, and any own ball's). And the listed procedure (`build_sft.py
--tool_demo_order listed`): own balls called by number until a report is open, its first open shot written at
8 m/s (else the first kick shown), and the best of that ball's open shots at the Oracle's speeds. With --speeds,
that first open shot at each speed from 3 to 12 m/s.

With --eval_dir, an `eval --tools` run's shots (tool_calls.jsonl), each answer matched to the shot of its
conversation whose aim it wrote, replayed as the evaluator plays it: answers to an open shot, to a shot that
was not open while calls were left, to one at the cap, to a kick, an aim no report showed, no action; how many
open answers wrote the report's first open shot, how many answers were at 8 m/s, and whether the first call's
ball had an open shot (against the lowest-numbered own ball's).

    python analysis/tool_reach.py --n 200
    python analysis/tool_reach.py --n 200 --eval_dir W/eval_sft --eval_dir W/eval_dpo
    python analysis/tool_reach.py --n 600 --seed 1 --no_simulate --speeds   # which speed, on train boards
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

KINDS = ("open", "kick", "closed, calls left", "closed, at cap", "aim not shown", "no action")


def ceiling(scenarios, max_calls: int, simulate: bool = True) -> Counter:
    from poolbench_data.core.records import Shot
    from poolbench_data.core.table import POCKET_IDS
    from poolbench_data.llm.tools import ball_report, tool_answer
    from poolbench_data.demos.tools import listed_own, played
    from poolbench_data.protocol.prompts import format_action

    c = Counter()
    for s in scenarios:
        reports = [ball_report(s, b) for b in listed_own(s)]
        c["boards"] += 1
        c["an open own shot"] += any(r["open"] for r in reports)
        c[f"open in the first {max_calls} own balls listed"] += any(r["open"] for r in reports[:max_calls])
        if not simulate:
            continue
        first_open = _first_open(reports, max_calls)
        if first_open is not None:
            ball, opens = first_open["target_ball"], [x for x in first_open["shots"] if x["open"]]
            x = opens[0]
            m = played(s, format_action(Shot(phi=x["potting_point_aim_angle_deg"], V0=8.0, target_ball=ball,
                                             target_pocket=x["pocket"]), s))[1]
            best_clean = _best(s, [(ball, x["pocket"], x["potting_point_aim_angle_deg"]) for x in opens])[1]
        else:
            kick = next(((r["target_ball"], r["kick"]) for r in reports[:max_calls] if r.get("kick")), None)
            m = kick and played(s, format_action(Shot(phi=kick[1]["aim_angle_deg"], V0=8.0, target_ball=kick[0],
                                                      target_pocket=kick[1]["pocket"]), s))[1]
            best_clean = bool(m and m.clean_pot)
        c["listed order, first open shot (else kick) at 8 m/s: legal contact"] += bool(m and m.legal_contact)
        c["listed order, first open shot (else kick) at 8 m/s: clean pot"] += bool(m and m.clean_pot)
        c["listed order, best shot of the first open ball: clean pot"] += best_clean
        best = _best(s, [(r["target_ball"], shot["pocket"], shot["potting_point_aim_angle_deg"])
                         for r in reports for shot in r["shots"]])
        c["legal contact, best shot of a ball's report"] += best[0]
        c["clean pot, best shot of a ball's report"] += best[1]
        if not best[0]:  # one pocket's answers too: both aims of every pocket, those past the cut limit included
            more = [(b.id, pid, a[f]) for b in s.own() for pid in POCKET_IDS
                    for a in [tool_answer(s, b.id, pid)] for f in ("aim_angle_deg", "potting_point_aim_angle_deg")]
            best = _best(s, more)
        c["legal contact, best aim any answer shows"] += best[0]
        if not any(r["open"] for r in reports):  # the kicks of the reports with nothing open (tool v3)
            kicks = [(r["target_ball"], r["kick"]["pocket"], r["kick"]["aim_angle_deg"]) for r in reports
                     if r.get("kick")]
            first, any_kick = _best(s, kicks[:1]), _best(s, kicks)
            c["no open own shot: first own ball's kick legal"] += first[0]
            c["no open own shot: first own ball's kick clean"] += first[1]
            c["no open own shot: some own ball's kick legal"] += any_kick[0]
            c["no open own shot: some own ball's kick clean"] += any_kick[1]
    return c


def _first_open(reports, max_calls: int) -> dict | None:
    """The listed procedure (demos.tools.listed_demo's calls): own balls by number until a report is open;
    that report, or None where none of the first `max_calls` is."""
    return next((r for r in reports[:max_calls] if r["open"]), None)


SPEED_GRID = (3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0, 12.0)


def speeds(scenarios, max_calls: int) -> Counter:
    """The listed procedure's first open shot, on the boards where it finds one, written at each speed of
    SPEED_GRID: clean pots at each; across the Oracle's three speeds, boards clean at all, at none, at some; the
    misses at 8 m/s that potted the ball and scratched; the boards where the shot at 5 m/s plays better on average
    over the jitter grid than at 8 (`pairs.noise.robust_score`, by MIN_MARGIN), and the reverse: what the
    `tool-speed` pairs' labels say about slowing down."""
    from poolbench_data.core.records import Shot
    from poolbench_data.llm.tools import ball_report
    from poolbench_data.players.baselines import ORACLE_SPEEDS
    from poolbench_data.pairs.noise import MIN_MARGIN, robust_score
    from poolbench_data.demos.tools import listed_own, played
    from poolbench_data.protocol.prompts import format_action

    c = Counter(dict.fromkeys(["boards where the listed procedure finds an open shot",
                               *(f"first open shot at {v:g} m/s: clean pot" for v in SPEED_GRID),
                               "first open shot at 8 m/s: potted and scratched", "clean at all of 8, 10, 12 m/s",
                               "clean at none", "clean at some", "robust level: 5 m/s above 8 m/s",
                               "robust level: 8 m/s above 5 m/s"], 0))  # printed in this order
    for s in scenarios:
        first_open = _first_open([ball_report(s, b) for b in listed_own(s)[:max_calls]], max_calls)
        if first_open is None:
            continue
        x = next(x for x in first_open["shots"] if x["open"])
        c["boards where the listed procedure finds an open shot"] += 1
        def at(v: float) -> Shot:
            return Shot(phi=x["potting_point_aim_angle_deg"], V0=v, target_ball=first_open["target_ball"],
                        target_pocket=x["pocket"])

        clean = {}
        for v in SPEED_GRID:
            m = played(s, format_action(at(v), s))[1]
            clean[v] = m.clean_pot
            c[f"first open shot at {v:g} m/s: clean pot"] += m.clean_pot
            c["first open shot at 8 m/s: potted and scratched"] += v == 8.0 and m.own_potted and "scratch" in (
                m.foul_reasons)
        hits = sum(clean[v] for v in ORACLE_SPEEDS)
        c["clean at all of 8, 10, 12 m/s" if hits == 3 else "clean at none" if hits == 0 else "clean at some"] += 1
        steady = {v: robust_score(s, {"action": at(v).to_row()}) for v in (5.0, 8.0)}
        if None in steady.values():  # a shot of a grid stopped early: no robust level, as in the pairs
            c["robust level: a grid stopped early"] += 1
            continue
        c["robust level: 5 m/s above 8 m/s"] += steady[5.0] - steady[8.0] >= MIN_MARGIN
        c["robust level: 8 m/s above 5 m/s"] += steady[8.0] - steady[5.0] >= MIN_MARGIN
    return c


def _best(s, shots) -> tuple[bool, bool]:
    """(some shot is a legal contact, some is a clean pot) over (ball, pocket, aim) at each of the Oracle's speeds."""
    from poolbench_data.core.records import Shot
    from poolbench_data.players.baselines import ORACLE_SPEEDS
    from poolbench_data.demos.tools import played
    from poolbench_data.protocol.prompts import format_action

    legal = False
    for ball, pocket, aim in shots:
        for speed in ORACLE_SPEEDS:
            m = played(s, format_action(Shot(phi=aim, V0=speed, target_ball=ball, target_pocket=pocket), s))[1]
            if m.clean_pot:
                return True, True
            legal = legal or m.legal_contact
    return legal, False


def shown_aims(calls) -> list[tuple[float, str, int, dict]]:
    """(aim, what it is: open / closed / kick, calls_left, the answer that showed it) of every shot the
    conversation's tool answers showed."""
    out = []
    for call in calls:
        r = call["result"]
        if "error" in r:
            continue
        for s in r.get("shots", [r]):  # a ball's report, or one pocket's answer
            for aim in ("potting_point_aim_angle_deg", "aim_angle_deg"):
                if aim in s:
                    out.append((s[aim], "open" if s["open"] else "closed", r["calls_left"], r))
        if r.get("kick"):
            out.append((r["kick"]["aim_angle_deg"], "kick", r["calls_left"], r))
    return out


def match(thread: dict, shot) -> tuple[str, dict | None]:
    """The kind of answer (KINDS) and the tool answer whose shot it wrote (the latest, where several did)."""
    from poolbench_data.players.diagnostics import angular_error

    if shot is None:
        return "no action", None
    for aim, what, calls_left, answer in reversed(shown_aims(thread["calls"])):
        if abs(angular_error(shot.phi, aim)) < 0.006:
            kind = what if what != "closed" else "closed, calls left" if calls_left else "closed, at cap"
            return kind, answer
    return "aim not shown", None


def choices(eval_dir: Path, boards: dict) -> dict[str, Counter]:
    """Per kind of answer: shots, legal contacts, clean pots; for answers to an open shot, also the boards where
    some open shot of the same answer, at one of the Oracle's speeds, is a clean pot (the choice among them); for
    kicks, those where an own ball the thread had not called has an open shot."""
    from poolbench_data.llm.tools import ball_report
    from poolbench_data.players.diagnostics import angular_error
    from poolbench_data.demos.tools import listed_own, played

    out = {k: Counter() for k in (*KINDS, "every shot")}
    every = out["every shot"]
    for line in (eval_dir / "tool_calls.jsonl").read_text().splitlines():
        if not line.strip():
            continue
        t = json.loads(line)
        s = boards[t["scenario_id"]]
        shot, m = played(s, t["final_response"])
        kind, answer = match(t, shot)
        c = out[kind]
        c["shots"] += 1
        c["legal contact"] += m.legal_contact
        c["clean pot"] += m.clean_pot
        every["answers at 8 m/s"] += shot is not None and shot.V0 == 8.0
        if t["calls"]:  # the first call's choice of ball, against the lowest-numbered own ball
            own_open = [b.id for b in s.own() if ball_report(s, b.id)["open"]]
            every["boards with an open own ball"] += bool(own_open)
            every["first call open"] += str(t["calls"][0]["arguments"].get("target_ball")) in own_open
            every["lowest-numbered own ball open"] += bool(own_open) and listed_own(s)[0] in own_open
        if kind == "open":
            shown = [(answer["target_ball"], x["pocket"], x["potting_point_aim_angle_deg"])
                     for x in answer.get("shots", [answer]) if x["open"]]
            c["best open shot shown"] += _best(s, shown)[1]
            c["the first open shot shown"] += abs(angular_error(shot.phi, shown[0][2])) < 0.006
        elif kind == "kick":  # kicked where calling another own ball would have shown an open shot
            called = {str(x["arguments"].get("target_ball")) for x in t["calls"]}
            c["open shot left uncalled"] += any(ball_report(s, b.id)["open"] for b in s.own() if b.id not in called)
    return out


@dataclass(frozen=True)
class ScriptArguments:
    """What a tool-using player can reach on the held-out boards, and where a model's shots went."""

    n: int = field(default=200, metadata={"help": "the first N held-out boards (seed 0)"})
    eval_dir: tuple[str, ...] = field(default=(), metadata={"help": "an `eval --tools` output folder"})
    no_simulate: bool = field(default=False, metadata={"help": "geometry only: skip the simulated ceiling"})
    speeds: bool = field(default=False, metadata={"help": "also the listed procedure's first open shot at each speed "
                                                           "from 3 to 12 m/s (SPEED_GRID)"})
    seed: int = field(default=0, metadata={"help": "the boards' base seed: 0, the held-out boards (needed with "
                                                    "--eval_dir); 1, the pilot's train boards"})


def study(a: ScriptArguments) -> int:
    from poolbench_data.core.errors import UserError, check_at_least, check_seed

    check_at_least("--n", a.n, 1)
    check_seed("--seed", a.seed)
    if a.eval_dir and a.seed != 0:
        raise UserError("--eval_dir reads shots on the held-out boards; leave --seed at 0 with it")
    for d in a.eval_dir:
        if not (Path(d) / "tool_calls.jsonl").is_file():
            raise UserError(f"--eval_dir {d} has no tool_calls.jsonl (an `eval --tools` output folder)")
    from poolbench_data.boards.generate import generate
    from poolbench_data.llm.tools import MAX_CALLS

    scenarios = generate(a.n, base_seed=a.seed)
    print(f"data: the first {a.n} " + ("held-out boards (seed 0)" if a.seed == 0 else f"boards of seed {a.seed}")
          + ", generated")
    for k, v in ceiling(scenarios, MAX_CALLS, simulate=not a.no_simulate).items():
        print(f"{k:44}{v:>6}")
    for k, v in (speeds(scenarios, MAX_CALLS) if a.speeds else {}).items():
        print(f"{k:56}{v:>6}")
    boards = {s.id: s for s in scenarios}
    for d in a.eval_dir:
        print(f"\n{d}\n{'answer':22}{'shots':>8}{'legal contact':>15}{'clean pot':>11}{'best open shown':>17}")
        counts = choices(Path(d), boards)
        for k in KINDS:
            c = counts[k]
            best = c["best open shot shown"] if k == "open" else "-"
            print(f"{k:22}{c['shots']:>8}{c['legal contact']:>15}{c['clean pot']:>11}{best:>17}")
        print(f"kicks where an own ball not called had an open shot: {counts['kick']['open shot left uncalled']}")
        o, every = counts["open"], counts["every shot"]
        print(f"open answers writing the report's first open shot: {o['the first open shot shown']} of "
              f"{o['shots']}; answers at 8 m/s: {every['answers at 8 m/s']}")
        print(f"first call's ball open: {every['first call open']}; the lowest-numbered own ball open: "
              f"{every['lowest-numbered own ball open']} (boards with an open own ball: "
              f"{every['boards with an open own ball']})")
    return 0


def main(argv=None) -> int:
    from poolbench_data.config import parse, run_main

    return run_main(lambda: study(parse(ScriptArguments, argv, __doc__)))


if __name__ == "__main__":
    sys.exit(main())
