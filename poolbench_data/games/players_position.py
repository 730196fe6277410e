"""The position Oracle: the run-out player that looks one shot ahead.

Each attempt it gathers the shots that pot an own ball cleanly: the greedy Oracle's own (so it never has fewer
options than the greedy Oracle), and a small grid over the cheapest ghost-ball candidates of speed and spin
(follow, stun, draw, and side spin either way). For each, the table that shot leaves is read from its simulation
(games.step with the simulation handed over), and ranked by how good its next shot looks: a win first; then the
number of own balls with a clean pot line (open paths, cut <= 60 degrees: core.candidates), then the cheapest
candidate's cost. The best-ranked tables are then checked in the simulator: the first on which the greedy Oracle
finds a clean pot is chosen (those simulations are kept, and reused when that table comes up next turn). Where no
ranked table passes the check, the best-ranked shot is played; where no shot pots cleanly, the greedy Oracle's
fallback. Every candidate is simulated at most once (games.search), and the chosen shot is played from its own
simulation.

A decision's two halves, the options (`options`) and their ranking (`ranked`), are readable on their own:
`ranked_shots` lists a table's options in the order the look-ahead checks them, for the preference pairs that set
them against each other (pairs.position).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from poolbench_data.core.candidates import candidates
from poolbench_data.core.records import Shot, ShotResult
from poolbench_data.games.records import GameState, Move
from poolbench_data.games.search import board, simulations_run
from poolbench_data.games.step import RULES, step
from poolbench_data.players.baselines import Decision, oracle

SPEEDS = (4.0, 7.0, 10.0)  # m/s: soft, medium, firm
SPINS = ((0.0, 0.4), (0.0, 0.0), (0.0, -0.4), (0.3, 0.0), (-0.3, 0.0))  # (a, b): follow, stun, draw, side spins
TOP = 3  # the cheapest candidates the grid is tried on
VERIFY = 3  # ranked tables checked with the greedy Oracle


@dataclass(frozen=True)
class Ranked:
    """One option, ranked: the rank of the table it leaves, minus its place among the options (the earlier wins
    a tie), the shot on the view, its simulation, and the table after it."""

    rank: tuple
    order: int
    shot: Shot
    result: ShotResult
    after: GameState


class PositionOracle:
    searches = True

    def __init__(self, seed: int = 0):
        self.seed = seed

    def options(self, state: GameState) -> tuple[Decision, list[tuple[Shot, ShotResult]]]:
        """The greedy Oracle's decision on the table, and the shots that pot an own ball cleanly with their
        simulations (on the view): the greedy Oracle's first where it pots, then the grid's, in grid order."""
        view = RULES[state.game].view(state)
        sims = board(view)
        greedy = oracle(view, sims=sims)
        options = [(greedy.shot, greedy.result)] if greedy.how == "pot" else []
        for c in candidates(view)[:TOP]:
            for V0 in SPEEDS:
                for a, b in SPINS:
                    shot = Shot(c.phi, V0, a, b, target_ball=c.ball, target_pocket=c.pocket)
                    if shot != greedy.shot and sims.worth(shot):
                        result, m = sims.outcome(shot)
                        if m.clean_pot:
                            options.append((shot, result))
        return greedy, options

    @staticmethod
    def ranked(state: GameState, options: list[tuple[Shot, ShotResult]]) -> list[Ranked]:
        """Each option with the table it leaves, best-ranked first (ties: the earlier option): the order the
        look-ahead checks them in."""
        rules = RULES[state.game]
        ranked = []
        for i, (shot, result) in enumerate(options):
            after, _ = step(state, rules.real_shot(state, shot), result=result)
            ranked.append(Ranked(_rank(after), -i, shot, result, after))
        ranked.sort(key=lambda r: (r.rank, r.order), reverse=True)
        return ranked

    def decide(self, state: GameState) -> Move:
        rules = RULES[state.game]
        before = simulations_run()
        greedy, options = self.options(state)
        if not options:
            result = greedy.result if greedy.result is not None else board(rules.view(state)).known(greedy.shot)
            return Move(rules.real_shot(state, greedy.shot), result, simulations_run() - before, greedy.how)
        ranked = self.ranked(state, options)
        chosen, how = ranked[0], "position-ranked"
        for r in ranked[:VERIFY]:
            if r.after.success:
                chosen, how = r, "position-win"
                break
            if r.after.done:
                continue
            if oracle(rules.view(r.after), sims=board(rules.view(r.after))).how == "pot":
                chosen, how = r, "position-checked"
                break
        return Move(rules.real_shot(state, chosen.shot), chosen.result, simulations_run() - before, how)


def ranked_shots(state: GameState) -> list[Shot]:
    """The position Oracle's options at `state` as played on the table (the 8 named as itself), best-ranked
    first: what a pair builder sets against each other."""
    player = PositionOracle()
    rules = RULES[state.game]
    return [rules.real_shot(state, r.shot) for r in player.ranked(state, player.options(state)[1])]


def _rank(after: GameState) -> tuple:
    """How good the next shot looks from the table a shot leaves, by geometry alone (no simulation)."""
    if after.success:
        return (2, 0, 0.0)
    if after.done:
        return (0, 0, -math.inf)
    cands = candidates(RULES[after.game].view(after))
    clean = {c.ball for c in cands if c.clean}
    return (1, len(clean), -min((c.cost for c in cands), default=math.inf))
