"""The paper's single-shot protocol as a one-answer episode, with GameSession's interface (rl.game_env), so a
harness deals a shot as it deals a game (the OpenEnv server's `game: shot`).

`reset(episode, seed)` deals board `episode` of base seed `seed`: the boards `poolbench eval --seed S` plays are
episodes 0 .. n-1 (boards.generate draws board k from (seed, k) alone). The observation is the protocol's user
message for the board, the system prompt the protocol's. `step(answer)` reads the answer with the evaluator's
parser and scores the shot with its physics (rl.reward.score_completion's levels: 0 not fired, 1 foul, 2 legal
contact, 3 a clean pot), and the episode ends: a shot is one answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from poolbench_data.rl.game_env import EpisodeOver, check_start

SHOT = "shot"


def check_shot_args(action: str | None = None, attempts: int | None = None, reward: str | None = None) -> None:
    """The game arguments a shot does not take, each refused by name: one ValueError."""
    if action is not None:
        raise ValueError(f"action {action!r}: a shot answers with the protocol's JSON action; leave action out")
    if attempts is not None and (isinstance(attempts, bool) or attempts != 1):
        raise ValueError(f"attempts is {attempts!r}; a shot is one answer: leave attempts out (or give 1)")
    if reward not in (None, "physics"):
        raise ValueError(f"reward {reward!r}: a shot is rewarded with its physics level; leave reward out (or give "
                         "'physics')")


@dataclass(frozen=True)
class ShotTurn:
    """What the answer did (GameSession's Turn without a game state): the episode is over after it."""

    observation: str
    reward: float
    done: bool
    parse_status: str
    outcome: dict


class ShotSession:
    """One board of the benchmark, answered once."""

    game = SHOT
    action = None
    attempts = 1
    reward = "physics"

    def __init__(self):
        self.scenario = None
        self.rewards: list[float] = []

    @property
    def system_prompt(self) -> str:
        from poolbench_data.protocol.prompts import SYSTEM_PROMPT

        return SYSTEM_PROMPT

    @property
    def done(self) -> bool:
        return bool(self.rewards)

    @property
    def end(self) -> str:
        return "answered" if self.rewards else ""

    def reset(self, episode: int = 0, seed: int = 0) -> str:
        from poolbench_data.boards.generate import generate
        from poolbench_data.protocol.prompts import user_prompt

        episode, seed = check_start(episode, seed)
        self.scenario, self.rewards = generate(1, seed, start=episode)[0], []
        return user_prompt(self.scenario)

    def step(self, answer: str | None) -> ShotTurn:
        """Score the one answer as the evaluator does (rl.reward.play_completion, score_completion's levels)."""
        from poolbench_data.core.scoring import physics_score
        from poolbench_data.rl.reward import play_completion

        if self.scenario is None:
            raise RuntimeError("no episode: call reset first")
        if self.rewards:
            raise EpisodeOver(f"the shot on board {self.scenario.id} was answered; reset to play another")
        if answer is not None and not isinstance(answer, str):
            raise ValueError(f"answer is a {type(answer).__name__}; give the model's text")
        parsed, record = play_completion(self.scenario, answer)
        score = physics_score(record.metrics)
        self.rewards.append(score)
        outcome = {"attempt": 1, "board": self.scenario.id, "category": self.scenario.category, **parsed.to_row(),
                   **record.metrics.to_row(), "end": self.end}
        return ShotTurn("", score, True, parsed.status, outcome)
