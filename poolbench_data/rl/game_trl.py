"""Games as multi-turn environments for TRL's GRPOTrainer: the model plays an episode by calling one tool,
`shoot`, whose arguments are the game's action; each call is one attempt, played as `poolbench eval --game G`
plays an answer (rl.game_env.GameSession), and its result is the next observation, or the episode's end.

    from trl import GRPOTrainer
    from poolbench_data.rl.game_trl import game_environment, game_prompts, game_reward

    trainer = GRPOTrainer(model=..., train_dataset=game_prompts("runout", n=200, seed=1),
                          environment_factory=game_environment("runout"), reward_funcs=[game_reward], args=...)

The rows (`game_prompts`) are the evaluator's first messages of each start, with a paragraph naming the tool
added to the system prompt (as `poolbench eval --tools` adds the ghost_ball tool's), and the start's columns
game, episode, seed, action and attempts; `reset(**row)` deals that start. The tool is the action's fields:

- runout: target_ball, target_pocket, aim_angle_deg, cue_speed and the optional spin a, b (the protocol's JSON
  action);
- nine-ball, discrete: speed and strikespot (DeepPHY's answer line); continuous: cue_speed, a and b.

`shoot` writes its arguments as the answer text the evaluator would read (the JSON action, or DeepPHY's line),
so a call's verdict is the evaluator's on that text: an argument the parser refuses is a wasted attempt, as in
`poolbench eval`. A call TRL cannot make (a required argument missing, an unknown one) never reaches the game;
TRL answers it with its error. `game_reward` gives each rollout the sum of its turns' rewards (GameSession's
balls, success or physics); a rollout that never shot scores 0. A call after the episode ended plays nothing and
says so. TRL drops a tool result that would overrun max_completion_length from the conversation, but the call
was played: its attempt counts in the reward.
"""

from __future__ import annotations

import json
from functools import partial

from poolbench_data.llm.observation import outcome_text
from poolbench_data.rl.game_env import MAX_ATTEMPTS, EpisodeOver, GameSession, check_game_args, check_starts

GAME_COLUMNS = ("game", "episode", "seed", "action", "attempts")
_FIELDS = {
    "runout": "target_ball, target_pocket, aim_angle_deg and cue_speed, and optionally a and b",
    "discrete": "speed and strikespot",
    "continuous": "cue_speed, a and b",
}


def shoot_note(game: str, action: str) -> str:
    """The paragraph added to the system prompt: the answer goes through the tool, one call an attempt."""
    fields = _FIELDS["runout" if game == "runout" else action]
    return ("\n\nTOOL. Play each shot by calling the `shoot` tool with your answer's fields (" + fields + ") "
            "instead of writing the answer: each call is one attempt, and its result is the next table, or the end "
            "of the episode. Keep shooting until the episode ends.")


class GameEnvironment:
    """One rollout's episode: `reset` deals the row's start; the subclass's `shoot` is the tool. Every public
    method is a tool to TRL, so the reward lives outside (`game_reward`) and the rest is private or a property."""

    def __init__(self, game: str = "runout", action: str | None = None, attempts: int = MAX_ATTEMPTS,
                 reward: str = "balls"):
        self._session = GameSession(game, action=action, attempts=attempts, reward=reward)
        self.calls: list[dict] = []  # each call that reached the game: its arguments, the answer, the verdict

    @property
    def session(self) -> GameSession:
        return self._session

    @property
    def total_reward(self) -> float:
        """The episode's reward so far: the sum of its turns' (0 before the first call)."""
        return float(sum(self._session.rewards))

    def reset(self, **row) -> None:
        """Deal the row's start (game_prompts' columns); the prompt already shows it."""
        s = self._session
        missing = [c for c in GAME_COLUMNS if c not in row]
        if missing:
            raise ValueError(f"{type(self).__name__}.reset needs the columns {list(GAME_COLUMNS)}; missing "
                             f"{missing}. Fix: train on rows of game_prompts")
        for column, mine in (("game", s.game), ("action", s.action), ("attempts", s.attempts)):
            if row[column] != mine:
                raise ValueError(f"the row's {column} is {row[column]!r}, this environment's {mine!r}: its prompt "
                                 f"was written for another game. Fix: build the rows and the environment with the "
                                 "same game, action and attempts")
        s.reset(row["episode"], row["seed"])
        self.calls = []
        return None

    def _play(self, arguments: dict, answer: str) -> str:
        """One attempt of `answer` (the text the evaluator would read); the tool's result."""
        s = self._session
        if s.state is None:
            return "No episode is being played: the environment was not reset."
        try:
            turn = s.step(answer)
        except EpisodeOver:
            return (f"The episode is over ({s.state.end}) after {_attempts(s.state)}: this call played nothing. "
                    "Stop calling shoot.")
        self.calls.append({"arguments": arguments, "answer": answer, "parse_status": turn.parse_status,
                           "potted": turn.outcome["potted"], "end": turn.outcome["end"], "reward": turn.reward})
        if not turn.done:
            return turn.observation
        state = turn.state
        return (f"{outcome_text(state.last)}\n\nThe episode is over ({state.end}) after {_attempts(state)}"
                f"{': won' if state.success else ''}. Stop calling shoot.")


class RunoutEnvironment(GameEnvironment):
    def shoot(self, target_ball: str, target_pocket: str, aim_angle_deg: float, cue_speed: float,
              a: float | None = None, b: float | None = None) -> str:
        """Play one shot of the visit: the protocol's action, with optional spin.

        Args:
            target_ball: the object ball to pot: one of your group's ('1'..'7'), or '8' once they are all down
            target_pocket: the pocket's id: lb, lc, lt, rb, rc or rt
            aim_angle_deg: the cue ball's direction in degrees, [-360, 360]
            cue_speed: the cue ball's speed in m/s, [2, 12]
            a: the cue tip's sideways offset from centre in ball radii, [-0.5, 0.5] (left out: 0)
            b: the cue tip's vertical offset from centre in ball radii, [-0.5, 0.5] (left out: 0.25)

        Returns:
            What the shot did and the table now, or the end of the visit.
        """
        spin = {k: v for k, v in (("a", a), ("b", b)) if v is not None}  # left out: the protocol's defaults
        arguments = {"target_ball": target_ball, "target_pocket": target_pocket, "aim_angle_deg": aim_angle_deg,
                     "cue_speed": cue_speed, **spin}
        return self._play(arguments, _json(arguments))


class NineballEnvironment(GameEnvironment):
    def shoot(self, speed: str, strikespot: str) -> str:
        """Strike the cue ball at the lowest-numbered ball: one of DeepPHY's 27 actions.

        Args:
            speed: Low, Medium or High
            strikespot: Top Left Spin, Top Spin, Top Right Spin, Middle Left Spin, Middle Spin, Middle Right Spin,
                Bottom Left Spin, Bottom Spin or Bottom Right Spin

        Returns:
            What the shot did and the table now, or the end of the episode.
        """
        from poolbench_data.protocol.strikespot import format_strike

        arguments = {"speed": speed, "strikespot": strikespot}
        return self._play(arguments, format_strike(speed, strikespot))


class NineballContinuousEnvironment(GameEnvironment):
    def shoot(self, cue_speed: float, a: float, b: float) -> str:
        """Strike the cue ball at the lowest-numbered ball with any speed and spin.

        Args:
            cue_speed: the cue ball's speed in m/s, [2, 12]
            a: the cue tip's sideways offset from centre in ball radii, [-0.5, 0.5]
            b: the cue tip's vertical offset from centre in ball radii, [-0.5, 0.5]

        Returns:
            What the shot did and the table now, or the end of the episode.
        """
        arguments = {"cue_speed": cue_speed, "a": a, "b": b}
        return self._play(arguments, _json(arguments))


def _attempts(state) -> str:
    return f"{state.attempts} attempt{'' if state.attempts == 1 else 's'}"


def _json(arguments: dict) -> str:
    # The arguments as TRL parsed them from the model's call, written back as the JSON answer the evaluator reads:
    # a value of the wrong type stays wrong, and the parser judges it.
    return json.dumps(arguments, default=str)


def environment_class(game: str, action: str | None = None) -> type[GameEnvironment]:
    """The class whose `shoot` takes the game's action format."""
    action = check_game_args(game, action)
    if game == "runout":
        return RunoutEnvironment
    return NineballEnvironment if action == "discrete" else NineballContinuousEnvironment


def game_environment(game: str, action: str | None = None, attempts: int = MAX_ATTEMPTS, reward: str = "balls"):
    """TRL's `environment_factory` for `game`: a callable making one environment a rollout. Bad arguments are one
    ValueError naming the argument, here, before TRL starts."""
    check_game_args(game, action, attempts, reward)
    return partial(environment_class(game, action), game=game, action=action, attempts=attempts, reward=reward)


def game_reward(completions, environments, **kwargs) -> list[float]:
    """For each rollout, its episode's summed reward (GameSession's, over the calls it made); 0 with no call."""
    out = []
    for env in environments:
        if env.session.state is None:
            raise RuntimeError("game_reward got an environment that was never reset: no episode to score")
        out.append(env.total_reward)
    return out


def game_prompts(game: str, n: int | None = None, seed: int | None = None, *, action: str | None = None,
                 attempts: int = MAX_ATTEMPTS, train: bool = True):
    """A `datasets.Dataset` of GRPO rows, one a start: episodes 0 .. n-1 of base seed `seed` (default: the
    training seed; with `train`, the evaluation seed and `nineball`'s one rack are refused). `prompt` is the
    evaluator's first messages with the tool's paragraph; the start's columns are what `reset` reads."""
    from datasets import Dataset

    action = check_game_args(game, action, attempts)
    n, seed = check_starts(game, n, seed, train)
    session = GameSession(game, action=action, attempts=attempts)
    note = shoot_note(game, action)

    def rows():
        for k in range(n):
            session.reset(k, seed)
            system, user = session.messages()
            yield {"prompt": [{**system, "content": system["content"] + note}, user], "game": game, "episode": k,
                   "seed": seed, "action": action, "attempts": attempts}

    return Dataset.from_list(list(rows()))


