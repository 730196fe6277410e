"""Baselines that play a game: each maps a GameState to a Move (its action, and the simulation of it when the
player ran one while deciding).

nineball: `mock`, DeepPHY's MOCK (uniform among the 27 actions not yet tried in the episode); `oracle`, all 27
          simulated from the table: the one that pots the 9, else the one that keeps the cue ball on the table
          and pots the most balls, hitting the lowest ball first where it can (DeepPHY's action order breaks ties);
          `heuristic`, the brute force DeepPHY saw its models use: full power, no spin, every attempt.
runout:   the single-shot baselines on the current table (players.BASELINES: `oracle`, the greedy clean pot;
          `heuristic`, `heuristic-centre`; `random`, with a fresh draw each attempt), and `position-oracle`, the
          first player here that plans (players_position).
"""

from __future__ import annotations

import numpy as np

from poolbench_data.games.nineball import DISCRETE, strike
from poolbench_data.games.players_position import PositionOracle
from poolbench_data.games.records import GameState, Move
from poolbench_data.games.search import board, memo, simulations_run
from poolbench_data.games.step import RULES, rules_of
from poolbench_data.players import BASELINES, check_players
from poolbench_data.players.baselines import random_player


class Mock:
    """DeepPHY's MOCK: uniform among the actions not yet tried in this episode (all 27 again once each was
    tried, which a 15-attempt episode never reaches); the draw reads the player's and the episode's seeds and
    the attempt, so an episode replays without any state in the player."""

    searches = False

    def __init__(self, seed: int = 0):
        self.seed = seed

    def decide(self, state: GameState) -> Move:
        untried = [a for a in DISCRETE if a not in state.actions] or list(DISCRETE)
        rng = np.random.default_rng([self.seed, state.seed, state.attempts])
        return Move(untried[int(rng.integers(len(untried)))], how="mock")


class NineballOracle:
    searches = True

    def __init__(self, seed: int = 0):
        self.seed = seed

    def decide(self, state: GameState) -> Move:
        rules = RULES[state.game]
        before = simulations_run()
        best = None
        for action in DISCRETE:
            shot = rules.aim(state, action)
            result = memo((state.game, state.balls, shot), lambda: rules.simulate(state, shot))
            v = rules.judge(state, shot, result)
            key = (v.success, not v.scratch, len(v.potted), not v.foul_reasons)
            if best is None or key > best[0]:
                best = (key, action, result)
        key, action, result = best
        how = "nine" if key[0] else "pot" if key[2] else "safe" if key[1] else "scratch"
        return Move(action, result, simulations_run() - before, how)


class NineballHeuristic:
    """The same action every attempt: High speed, Middle Spin (DeepPHY, section 4: its models "consistently use
    maximum power to shoot the target ball along the most direct path"); no search, no random draw."""

    searches = False
    ACTION = ("High", "Middle Spin")

    def __init__(self, seed: int = 0):
        self.seed = seed

    def decide(self, state: GameState) -> Move:
        return Move(strike(*self.ACTION), how="full-power")


class Wrapped:
    """A single-shot baseline (players.BASELINES) on the run-out's current table, searching through the
    board's kept simulations (games.search) when it searches."""

    def __init__(self, name: str, seed: int = 0):
        self.name, self.seed = name, seed
        self.searches = BASELINES[name][0] == "oracle"

    def decide(self, state: GameState) -> Move:
        rules = RULES[state.game]
        view = rules.view(state)
        before = simulations_run()
        if self.name == "random":  # a new draw each attempt: the board's seed alone would repeat one shot
            seed = int(np.random.SeedSequence([self.seed, state.seed, state.attempts]).generate_state(1)[0])
            d = random_player(view, seed=seed)
            return Move(rules.real_shot(state, d.shot), None, 0, d.how)
        sims = board(view)
        d = BASELINES[self.name][1](view, sims=sims)
        result = d.result if d.result is not None else sims.known(d.shot)
        return Move(rules.real_shot(state, d.shot), result, simulations_run() - before, d.how)


GAME_PLAYERS = {
    "nineball": {"mock": Mock, "oracle": NineballOracle, "heuristic": NineballHeuristic},
    "runout": {"oracle": lambda seed=0: Wrapped("oracle", seed), "position-oracle": PositionOracle,
               **{n: (lambda seed=0, n=n: Wrapped(n, seed)) for n in ("heuristic", "heuristic-centre", "random")}},
}
GAME_PLAYERS["nineball-seeded"] = GAME_PLAYERS["nineball"]
DEFAULT_GAME_PLAYERS = {"nineball": ("mock", "oracle"), "nineball-seeded": ("mock", "oracle"),
                        "runout": ("oracle", "position-oracle", "heuristic", "heuristic-centre", "random")}


def check_game_players(game: str, names, flag: str = "--players") -> list[str]:
    """The names, checked for `game`: each one of its players, none twice; a mistake names `flag`."""
    rules_of(game)
    return check_players(names, flag, GAME_PLAYERS[game], f" for --game {game}")


def make_player(game: str, name: str, seed: int = 0):
    return GAME_PLAYERS[game][name](seed)
