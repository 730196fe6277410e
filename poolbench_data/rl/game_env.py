"""A game played turn by turn through text, as every environment harness plays it: verifiers
(`load_environment(game=...)`), TRL's `environment_factory` (rl.game_trl) and the OpenEnv server (rl.server).

Each turn is what `poolbench eval --game G` does with one answer (llm.game_player): the observation
(llm.observation.observation), the answer read as the game's action and played by one step of the game
(llm.observation.play_answer), a wasted attempt where the answer cannot be played. So a harness's verdict on an answer is the
evaluator's, turn by turn, and an episode's rewards add up to what the evaluator reports for it.

Rewards a turn (REWARDS):
- `balls`: balls potted on a clean attempt (a run-out's own balls, and the 8 on the win; any ball in nine-ball);
  an episode's sum is its balls per visit.
- `success`: 1 on the attempt that wins (the 9 down, or the run-out's 8 potted cleanly), else 0.
- `physics`: the benchmark's levels for the turn's shot: 0 not fired (the answer could not be played), 1 foul,
  2 legal contact, 3 a clean pot.
"""

from __future__ import annotations

from dataclasses import dataclass

from poolbench_data.boards.generate import DEFAULT_N
from poolbench_data.boards.splits import EVAL_SEED, SplitLeakError
from poolbench_data.games.records import GAMES, GameState, Outcome, action_row, outcome_balls
from poolbench_data.games.step import start_game
from poolbench_data.llm.observation import ACTIONS, default_action, game_system_prompt, observation, play_answer

REWARDS = ("balls", "success", "physics")
MAX_ATTEMPTS = 15  # DeepPHY's cap; a run-out visit ends by the rules well before it
TRAIN_SEED = 1  # the base seed a training environment defaults to (the train split's, as the single-shot env's)


class EpisodeOver(ValueError):
    """A step after the episode ended: no attempt is played, nothing is recorded."""


def check_game_args(game: str, action: str | None = None, attempts: int = MAX_ATTEMPTS,
                    reward: str = "balls") -> str:
    """The arguments of a game environment, each checked as the harnesses pass them (a JSON value: a bool or a
    float is no whole number); one ValueError naming the argument. Returns the action format."""
    if not isinstance(game, str) or game not in GAMES:
        raise ValueError(f"game {game!r} is not a game; choose from {', '.join(GAMES)}")
    if action is not None and action not in ACTIONS:
        raise ValueError(f"action {action!r}: choose from {', '.join(ACTIONS)}")
    if game == "runout" and action == "discrete":
        raise ValueError("action 'discrete' is DeepPHY's nine-ball answer line; a runout answers with the "
                         "protocol's JSON action: leave action out")
    if isinstance(attempts, bool) or not isinstance(attempts, int) or not 1 <= attempts <= 100:
        raise ValueError(f"attempts is {attempts!r}; give a whole number from 1 to 100")
    if reward not in REWARDS:
        raise ValueError(f"reward {reward!r}: choose from {', '.join(REWARDS)}")
    return action or default_action(game)


def check_start(episode, seed) -> tuple[int, int]:
    for name, value in (("episode", episode), ("seed", seed)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**32:
            raise ValueError(f"{name} is {value!r}; give a whole number from 0 to 2**32 - 1")
    return episode, seed


def check_starts(game: str, n: int | None = None, seed: int | None = None, train: bool = False) -> tuple[int, int]:
    """(n, base seed) of a set of starts, episodes 0 .. n-1 as `poolbench eval --game G --n N --seed S` plays
    them: n defaults to the evaluator's, the seed to the evaluation's (EVAL_SEED) or, with `train`, TRAIN_SEED.
    An environment built for training refuses the evaluation seed, and `nineball`, whose every episode is the
    evaluation's one rack: a SplitLeakError (a ValueError) naming the argument."""
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 2**32):
        raise ValueError(f"n is {n!r}; give a whole number of episodes from 1 to 2**32")
    base = seed if seed is not None else TRAIN_SEED if train else EVAL_SEED
    check_start(0, base)
    if train and base == EVAL_SEED:
        raise SplitLeakError(f"seed {EVAL_SEED} is the evaluation's seed, and this environment is built for training "
                             f"(train=True). Fix: train on another seed (e.g. seed={TRAIN_SEED}), or build it for "
                             "evaluation (train=False)")
    if train and game == "nineball":
        raise SplitLeakError("game 'nineball' deals the evaluation's one rack in every episode, and this environment "
                             "is built for training (train=True). Fix: train on game='nineball-seeded' (a rack "
                             "drawn for each episode)")
    return (DEFAULT_N if n is None else n), base


def physics_level(o: Outcome) -> int:
    if not o.fired:
        return 0
    if o.foul_reasons:
        return 1
    return 3 if o.clean else 2


def reward_of(reward: str, o: Outcome, after: GameState) -> float:
    if reward == "balls":
        return float(outcome_balls(o, after.game, after.group))
    if reward == "success":
        return float(after.success and o.end != "")
    return float(physics_level(o))


@dataclass(frozen=True)
class Turn:
    """What one answer did: the next observation ("" once the episode ended), the turn's reward, the outcome as
    the evaluator's turn rows carry it (`outcome`: games.records.Outcome.to_row() and the action), the table
    after it."""

    observation: str
    reward: float
    done: bool
    parse_status: str
    outcome: dict
    state: GameState


class GameSession:
    """One episode of `game` played by text answers: `reset` deals a start, `step(answer)` plays an attempt."""

    def __init__(self, game: str, *, action: str | None = None, attempts: int = MAX_ATTEMPTS,
                 reward: str = "balls"):
        self.action = check_game_args(game, action, attempts, reward)
        self.game, self.attempts, self.reward = game, attempts, reward
        self.state: GameState | None = None
        self.rewards: list[float] = []

    @property
    def system_prompt(self) -> str:
        return game_system_prompt(self.game, self.action)

    @property
    def done(self) -> bool:
        return self.state is not None and self.state.done

    def reset(self, episode: int = 0, seed: int = 0) -> str:
        """Deal start `episode` of base seed `seed` (the evaluator's starts: `poolbench eval --game G --seed S`
        plays episodes 0 .. n-1); the first observation."""
        episode, seed = check_start(episode, seed)
        return self.reset_to(start_game(self.game, episode, seed, self.attempts))

    def reset_to(self, state: GameState) -> str:
        """Play on from a given table (a state an episode reached)."""
        if state.game != self.game:
            raise ValueError(f"state is a {state.game} table, not {self.game}")
        self.state, self.rewards = state, []
        return observation(state)

    def messages(self) -> list[dict]:
        """The messages `poolbench eval --game G` (history current) sends for the current table."""
        self._need_state()
        return [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": observation(self.state)}]

    def step(self, answer: str | None) -> Turn:
        """Play one answer (text; None: no answer, a wasted attempt). EpisodeOver after the episode ended."""
        self._need_state()
        if self.state.done:
            raise EpisodeOver(f"the episode ended ({self.state.end}) after {self.state.attempts} attempts; "
                              "reset to play another")
        if answer is not None and not isinstance(answer, str):
            raise ValueError(f"answer is a {type(answer).__name__}; give the model's text")
        action, after, outcome = play_answer(self.state, answer, self.action)
        self.state = after
        r = reward_of(self.reward, outcome, after)
        self.rewards.append(r)
        row = {**outcome.to_row(), "action": action_row(action)}
        return Turn("" if after.done else observation(after), r, after.done, outcome.parse_status, row, after)

    def _need_state(self) -> None:
        if self.state is None:
            raise RuntimeError("no episode: call reset first")
