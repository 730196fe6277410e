"""The one step of every game: (state, action) -> (next state, outcome), built on core.physics.

A rule set (RULES) says where an action is aimed (`aim`), how the table is simulated (`simulate`) and what a
simulated attempt means (`judge`: the table it leaves, fouls, success, the end); `step` does the rest the same way
for every game: it counts the attempt, removes pocketed balls and carries the simulator's resting positions over
(the rule set's verdict), ends the episode at its cap of attempts, and turns an answer that could not be parsed,
or an action outside the action space, into a wasted attempt recorded with its status. Nothing here draws a
random number: the same start and actions give the same episode, byte for byte.
"""

from __future__ import annotations

from dataclasses import replace

from poolbench_data.core.records import InvalidShot, ShotResult
from poolbench_data.games.nineball import NineBall
from poolbench_data.games.records import GAMES, GameState, Outcome
from poolbench_data.games.runout import Runout

RULES = {"nineball": NineBall(seeded=False), "nineball-seeded": NineBall(seeded=True), "runout": Runout()}
assert tuple(RULES) == GAMES


def rules_of(game: str):
    if game not in RULES:
        raise ValueError(f"--game {game!r} is not a game; choose from {', '.join(RULES)}")
    return RULES[game]


def start_game(game: str, k: int, base_seed: int = 0, max_attempts: int = 15) -> GameState:
    """Episode k's start: the rack (nineball) or board k of `base_seed` (runout)."""
    if max_attempts < 1:
        raise ValueError(f"--attempts must be >= 1 (got {max_attempts})")
    return rules_of(game).start(k, base_seed, max_attempts)


def step(state: GameState, action, *, result: ShotResult | None = None, parse_status: str = "ok",
         parse_message: str = "") -> tuple[GameState, Outcome | None]:
    """Play `action` (a Strike for nineball, a Shot for runout; None where the answer could not be parsed, with
    its `parse_status`) on `state`. `result`: the rule set's simulation of this very shot from this very state,
    when a searching player already ran it: it is used, never run again. An action after the episode ended is
    ignored: the state comes back unchanged, with no outcome."""
    if state.done:
        return state, None
    rules = RULES[state.game]
    attempt = state.attempts + 1
    shot = None
    if action is not None and parse_status == "ok":
        try:
            shot = rules.aim(state, action)
        except InvalidShot as e:
            parse_status, parse_message = e.reason, str(e)
    if shot is None:
        outcome = Outcome(attempt, action, None, None, (), False, ("not-fired", parse_status), False,
                          rules.wasted_end, parse_status=parse_status, message=parse_message)
        balls, success = state.balls, False
    else:
        verdict = rules.judge(state, shot, result if result is not None else rules.simulate(state, shot))
        outcome = Outcome(attempt, action, shot, verdict.result, verdict.potted, verdict.scratch,
                          verdict.foul_reasons, verdict.clean, verdict.end, verdict.respotted, message=verdict.message)
        balls, success = verdict.balls, verdict.success
    if not outcome.end and attempt >= state.max_attempts:
        outcome = replace(outcome, end="attempts")
    after = replace(state, balls=balls, attempts=attempt, potted=state.potted + outcome.potted,
                    actions=state.actions + (action,), last=outcome, done=bool(outcome.end), success=success,
                    end=outcome.end)
    return after, outcome
