"""How much better a tool player can choose from what the tool shows: the room a preference stage has.

A tool-using model sees, for each own ball it calls, the report's shots: pocket, `open`, cut angle, in that
order. The tool SFT model writes the first open shot of the first open ball, at 5 m/s (docs/training.md). On
each board, every open shot of the first MAX_CALLS own balls listed is played at each speed of SPEED_GRID. Rules
that choose only from what the reports show (the cut, side or corner pocket, which call showed the shot) are
fitted on the train boards and counted on the held-out boards, beside the simulated ceilings: the best of those
shots and speeds on each board, which only the simulator knows. Two more geometric facts a tool could add are
tried as inputs (neither is in the report): where the cue ball's tangent line runs into a pocket (off up
to PATH_CUSHIONS cushions), and the balls' travel (cue ball to ghost ball plus object ball to pocket); and one
fact from closed-form ball physics, not geometry: where the cue ball, struck with the players' top spin, runs
after contact until its first cushion (`cue_path`; both in poolbench_data/core/cue_paths.py). Each
rule's gains and losses against the model's rule on the same held-out boards give the exact McNemar p a model
that learned the rule perfectly would reach. Where the calls show nothing open the model answers at the cap, most
often with the kick a closed report shows: those boards' kicks are played at each speed too (`kicks`), and each
open-board rule is counted again together with the kick rule the train boards choose. A preference stage teaches
a choice the model can make from its input; what lies between the best such rule and the ceiling is what the
input does not show.

    python analysis/choice_rules.py --train_n 400 --n 200
"""

from __future__ import annotations

import sys
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from poolbench_data.core.cue_paths import PATH_CUSHIONS, cue_path, shot_points, tangent_path

SPEED_GRID = (3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0)
MODEL_SPEED = 5.0  # the speed the tool SFT model writes (docs/training.md)
CUT_BUCKET = 15.0  # degrees: the fitted rules' resolution in cut angle
TRAVEL_BUCKET = 0.5  # metres: the travel rule's resolution, with cuts to 2 * CUT_BUCKET (finer cells overfit)
MODEL_RULE = f"first open shot at {MODEL_SPEED:g} m/s (the model's rule)"


def at_speeds(s, ball: str, pocket: str, phi: float) -> dict:
    """Speed -> the metrics of the shot at `ball` into `pocket` with aim `phi`, written as the model writes it and
    played as the evaluator plays it, at each speed of SPEED_GRID."""
    from poolbench_data.core.records import Shot
    from poolbench_data.demos.tools import played
    from poolbench_data.protocol.prompts import format_action

    return {v: played(s, format_action(Shot(phi=phi, V0=v, target_ball=ball, target_pocket=pocket), s))[1]
            for v in SPEED_GRID}


def candidates(s, max_calls: int) -> list[dict]:
    """Every open shot of the first `max_calls` own balls listed, in the order the reports show them, with
    what the model can see of it and, for each speed, whether it is a clean pot."""
    import math

    from poolbench_data.llm.tools import ball_report
    from poolbench_data.demos.tools import listed_own

    out = []
    for call, ball in enumerate(listed_own(s)[:max_calls]):
        for x in ball_report(s, ball)["shots"]:
            if not x["open"]:
                continue
            cue, target, point, ghost = shot_points(s, ball, x["pocket"])
            metrics = at_speeds(s, ball, x["pocket"], x["potting_point_aim_angle_deg"])
            out.append({"call": call, "cut": x["cut_angle_deg"], "side": x["pocket"][1] == "c",
                        "clean": {v: m.clean_pot for v, m in metrics.items()},
                        "scratch": {v: "scratch" in m.foul_reasons for v, m in metrics.items()},
                        "tangent_path": tangent_path(s, ball, x["pocket"]),
                        "cue_path": {v: cue_path(s, ball, x["pocket"], v)[0] for v in SPEED_GRID},
                        "travel": math.dist(cue, ghost) + math.dist(target, point)})
    return out


def kicks(s, max_calls: int) -> list[dict]:
    """Where the first `max_calls` own balls listed show nothing open: the kick each report shows, in call order,
    with what the model sees of it (`pot`: aimed to pot) and, for each speed, clean pot and legal contact."""
    from poolbench_data.llm.tools import ball_report
    from poolbench_data.demos.tools import listed_own

    out = []
    for call, ball in enumerate(listed_own(s)[:max_calls]):
        k = ball_report(s, ball).get("kick")
        if k:
            metrics = at_speeds(s, ball, k["pocket"], k["aim_angle_deg"])
            out.append({"call": call, "pot": k["pot"], "clean": {v: m.clean_pot for v, m in metrics.items()},
                        "contact": {v: m.legal_contact for v, m in metrics.items()}})
    return out


def _board(args) -> tuple[list[dict], list[dict]]:
    cands = candidates(*args)
    return cands, ([] if cands else kicks(*args))


def boards(scenarios, max_calls: int, workers: int) -> list[tuple[list[dict], list[dict]]]:
    """Per board: its open shots (`candidates`) and, where there is none, its kicks (`kicks`)."""
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(_board, [(s, max_calls) for s in scenarios], chunksize=4))


def key(c: dict) -> tuple[int, bool]:
    """What a fitted rule sees of a shot: its cut, to CUT_BUCKET degrees, and side or corner pocket."""
    return int(c["cut"] // CUT_BUCKET), c["side"]


def travel_key(c: dict) -> tuple[int, int]:
    """The travel rule's view of a shot: its cut, to 2 * CUT_BUCKET degrees, and the balls' travel."""
    return int(c["cut"] // (2 * CUT_BUCKET)), min(int(c["travel"] // TRAVEL_BUCKET), 4)


def fit(train: list[list[dict]], by=key) -> dict[tuple, tuple[float, float]]:
    """Per `by(shot)`, over every open shot of the train boards: (the clean-pot rate at its best speed, that
    speed)."""
    n, hits = defaultdict(int), defaultdict(lambda: defaultdict(int))
    for cands in train:
        for c in cands:
            n[by(c)] += 1
            for v, ok in c["clean"].items():
                hits[by(c)][v] += ok
    return {k: max((hits[k][v] / n[k], -abs(v - MODEL_SPEED), v) for v in SPEED_GRID)[::2] for k in n}


def fits(train: list[list[dict]]) -> dict[str, dict]:
    """The fitted tables the rules read: by cut and pocket (what the reports show), by cut and travel."""
    return {"pocket": fit(train), "travel": fit(train, travel_key)}


def rules(tables: dict, max_calls: int) -> dict:
    """Name -> (pick, speed): pick chooses one of a board's candidates (they are never empty here), speed says
    at what speed to play it. Only what the reports show, or geometry a tool could add, goes in."""
    table = tables["pocket"]
    def first(cands):
        return cands[0]  # the first open ball's first open shot: the reports' own order

    def fitted_speed(c):
        return table.get(key(c), (0.0, MODEL_SPEED))[1]

    def best_fitted(cands):
        return max(cands, key=lambda c: table.get(key(c), (0.0,))[0])

    def smallest_cut(cands):
        return min(cands, key=lambda c: c["cut"])

    def no_tangent_pocket(cands):
        return next((c for c in cands if c["tangent_path"] != 0), cands[0])

    def travel_speed(c):
        return tables["travel"].get(travel_key(c), (0.0, MODEL_SPEED))[1]

    out = {MODEL_RULE if v == MODEL_SPEED else f"first open shot at {v:g} m/s": (first, lambda c, v=v: v)
           for v in SPEED_GRID}
    out[f"smallest cut of the {max_calls} calls' open shots at {MODEL_SPEED:g} m/s"] = (
        smallest_cut, lambda c: MODEL_SPEED)
    out["first open shot, fitted speed by cut and pocket"] = (first, fitted_speed)
    out["fitted choice of shot and speed"] = (best_fitted, fitted_speed)
    out[f"first open shot whose tangent line misses the pockets, {MODEL_SPEED:g} m/s"] = (
        no_tangent_pocket, lambda c: MODEL_SPEED)
    # tangent_path is None where the line meets no pocket within PATH_CUSHIONS cushions
    out[f"first open shot, {SPEED_GRID[0]:g} m/s where its tangent line meets a pocket"] = (
        first, lambda c: SPEED_GRID[0] if c["tangent_path"] is not None else MODEL_SPEED)
    out["first open shot, fitted speed by cut and travel"] = (first, travel_speed)
    out[f"first open shot whose cue path misses the pockets, {MODEL_SPEED:g} m/s"] = (
        lambda cands: next((c for c in cands if c["cue_path"][MODEL_SPEED] != "pocket"), cands[0]),
        lambda c: MODEL_SPEED)
    out[f"first open shot, speed nearest {MODEL_SPEED:g} whose cue path misses pockets"] = (
        first, lambda c: min(SPEED_GRID, key=lambda v: (c["cue_path"][v] == "pocket", abs(v - MODEL_SPEED))))
    return out


def score(cands_per_board: list[list[dict]], tables: dict, max_calls: int) -> dict[str, list[bool]]:
    """Clean pot or not, board by board, of each rule, then of the simulated ceilings, over the boards with an
    open shot."""
    played = [cands for cands in cands_per_board if cands]
    out = {}
    for name, (pick, speed) in rules(tables, max_calls).items():
        out[name] = [c["clean"][speed(c)] for c in map(pick, played)]
    out["ceiling: the first open shot at its best speed"] = [any(cs[0]["clean"].values()) for cs in played]
    out["ceiling: the first open ball's best shot and speed"] = [
        any(any(c["clean"].values()) for c in cs if c["call"] == cs[0]["call"]) for cs in played]
    out[f"ceiling: the best of the {max_calls} calls' open shots and speeds"] = [
        any(any(c["clean"].values()) for c in cs) for cs in played]
    # What a tool that simulates would add: one bit a speed, whether the cue ball falls in (not geometry)
    out[f"simulated: speed nearest {MODEL_SPEED:g} at which the cue ball stays up"] = [
        cs[0]["clean"][min(SPEED_GRID, key=lambda v: (cs[0]["scratch"][v], abs(v - MODEL_SPEED)))] for cs in played]
    return out


KICK_RULE = f"first kick shown at {MODEL_SPEED:g} m/s (the model's speed)"


def kick_rules() -> dict:
    """Name -> (pick, speed) over a board's kicks (never empty here): which kick, at what speed."""
    out = {}
    for which, pick in (("first", lambda ks: ks[0]), ("last", lambda ks: ks[-1])):
        for v in SPEED_GRID:
            name = KICK_RULE if (which, v) == ("first", MODEL_SPEED) else f"{which} kick shown at {v:g} m/s"
            out[name] = (pick, v)
    out[f"first kick aimed to pot at {MODEL_SPEED:g} m/s"] = (
        lambda ks: next((k for k in ks if k["pot"]), ks[0]), MODEL_SPEED)
    return out


def kick_score(per_board: list[tuple[list[dict], list[dict]]]) -> dict[str, list[bool]]:
    """Clean pot or not, board by board, of each kick rule and the ceiling, over the boards with nothing open but
    a kick."""
    kicked = [ks for cands, ks in per_board if not cands and ks]
    out = {name: [pick(ks)["clean"][v] for ks in kicked] for name, (pick, v) in kick_rules().items()}
    out["ceiling: the best of the kicks shown and speeds"] = [any(any(k["clean"].values()) for k in ks)
                                                              for ks in kicked]
    return out


def against_model(outcomes: dict[str, list[bool]], model: str = MODEL_RULE) -> dict[str, tuple[int, int, float]]:
    """Per rule: boards it pots that the model's rule does not, the reverse, and the exact McNemar p."""
    from poolbench_data.report.stats import mcnemar_exact

    base = outcomes[model]
    out = {}
    for name, got in outcomes.items():
        gained = sum(g and not b for g, b in zip(got, base))
        lost = sum(b and not g for g, b in zip(got, base))
        out[name] = (gained, lost, mcnemar_exact(gained, lost))
    return out


@dataclass(frozen=True)
class ScriptArguments:
    """How much better a tool player can choose from what the tool shows."""

    n: int = field(default=200, metadata={"help": "the first N held-out boards (seed 0), where rules are counted"})
    train_n: int = field(default=400, metadata={"help": "the first N train boards (seed 1, the pilot's), where rules "
                                                         "are fitted"})
    workers: int = field(default=0, metadata={"help": "processes that simulate (0: one per core)"})


def study(a: ScriptArguments) -> int:
    from poolbench_data.core.errors import check_at_least

    for flag, v, low in (("--n", a.n, 1), ("--train_n", a.train_n, 1), ("--workers", a.workers, 0)):
        check_at_least(flag, v, low)
    from poolbench_data.boards.generate import generate
    from poolbench_data.llm.tools import MAX_CALLS
    from poolbench_data.players.pool import resolve_workers

    workers = resolve_workers(a.workers)
    train_boards = boards(generate(a.train_n, base_seed=1), MAX_CALLS, workers)
    held_boards = boards(generate(a.n, base_seed=0), MAX_CALLS, workers)
    train, held_out = [c for c, _ in train_boards], [c for c, _ in held_boards]
    tables = fits(train)
    print(f"data: the first {a.train_n} train boards (seed 1) fit the rules; the first {a.n} held-out boards "
          f"(seed 0), generated; open shots of the first {MAX_CALLS} own balls listed, speeds "
          f"{', '.join(f'{v:g}' for v in SPEED_GRID)} m/s")
    print(f"boards with an open shot: train {sum(map(bool, train))} of {a.train_n}, held-out "
          f"{sum(map(bool, held_out))} of {a.n}\n")
    held = score(held_out, tables, MAX_CALLS)
    print(f"{'clean pots':62}{'train':>7}{'held-out':>10}   held-out against the model's rule: gained, lost, p")
    for (name, t), h, (g, lost, pv) in zip(score(train, tables, MAX_CALLS).items(), held.values(),
                                         against_model(held).values()):
        print(f"{name:62}{sum(t):>7}{sum(h):>10}   {g:>3} {lost:>3}  {pv:.3f}")
    missed = [cs[0] for cs in held_out if cs and not cs[0]["clean"][MODEL_SPEED]]
    scratched = [c for c in missed if c["scratch"][MODEL_SPEED]]
    print(f"\nheld-out boards the model's rule misses: {len(missed)}; its shot scratched on {len(scratched)}, "
          f"of which {sum(c['clean'][SPEED_GRID[0]] for c in scratched)} pot cleanly at {SPEED_GRID[0]:g} m/s")
    shots = [c for cands in train for c in cands]
    for k in (*range(PATH_CUSHIONS + 1), None):
        some = [c for c in shots if c["tangent_path"] == k]
        where = f"meets a pocket after {k} cushions" if k is not None else f"meets none within {PATH_CUSHIONS}"
        print(f"train open shots whose tangent line {where}: {len(some)}, scratched at {MODEL_SPEED:g} m/s "
              f"{sum(c['scratch'][MODEL_SPEED] for c in some)}")
    for v in (SPEED_GRID[0], MODEL_SPEED):
        for end, where in (("pocket", "in a pocket"), ("cushion", "at a cushion"), ("stops", "stopped"),
                           ("jaw", "at a jaw")):
            some = [c for c in shots if c["cue_path"][v] == end]
            print(f"train open shots at {v:g} m/s whose cue path before a cushion ends {where}: {len(some)}, "
                  f"scratched {sum(c['scratch'][v] for c in some)}")
    print("\nfitted speed by (cut bucket, side pocket), train clean rate: " + ", ".join(
        f"{k[0] * CUT_BUCKET:g}-{(k[0] + 1) * CUT_BUCKET:g}{' side' if k[1] else ''} {v:g} ({r:.2f})"
        for k, (r, v) in sorted(tables["pocket"].items())))
    print_kicks(train_boards, held_boards, held)
    return 0


def main(argv=None) -> int:
    from poolbench_data.config import parse, run_main

    return run_main(lambda: study(parse(ScriptArguments, argv, __doc__)))


def print_kicks(train_boards, held_boards, held: dict[str, list[bool]]) -> None:
    """The boards with nothing open: what each kick rule pots, then each open-board rule together with the kick
    rule the train boards choose, against the model's on every board with an open shot or a kick."""
    from poolbench_data.report.stats import mcnemar_exact

    train_k, held_k = kick_score(train_boards), kick_score(held_boards)
    n_train, n_held = (sum(1 for c, ks in b if not c and ks) for b in (train_boards, held_boards))
    print(f"\nboards with nothing open and a kick: train {n_train}, held-out {n_held}")
    print(f"{'clean pots':62}{'train':>7}{'held-out':>10}   held-out against {KICK_RULE!r}: gained, lost, p")
    for (name, t), h, (g, lost, pv) in zip(train_k.items(), held_k.values(),
                                         against_model(held_k, KICK_RULE).values()):
        print(f"{name:62}{sum(t):>7}{sum(h):>10}   {g:>3} {lost:>3}  {pv:.3f}")
    # The kick rule chosen on the train boards only, as a preference stage would learn it; then each open-board
    # rule with it, on every board with an open shot or a kick.
    best_kick = max(kick_rules(), key=lambda n: sum(train_k[n]))
    g0, l0, _ = against_model(held_k, KICK_RULE)[best_kick]
    print(f"\nwith {best_kick!r} (the train boards' best kick rule) where only a kick is, held-out against the "
          "model's rules: gained, lost, p")
    for name, (g, lost, _) in against_model(held).items():
        if not name.startswith(("ceiling", "simulated")):
            print(f"{name:62}{'':17}   {g0 + g:>3} {l0 + lost:>3}  {mcnemar_exact(g0 + g, l0 + lost):.3f}")


if __name__ == "__main__":
    sys.exit(main())
