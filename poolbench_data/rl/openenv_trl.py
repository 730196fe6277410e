"""GRPO against a running PoolBench OpenEnv server, through TRL's OpenEnv integration: `environment_factory`
(GRPOTrainer, trl >= 1.16) with a class that wraps the OpenEnv client, as TRL's OpenEnv guide does.

    from trl import GRPOTrainer
    from poolbench_data.rl.openenv_trl import PoolOpenEnv, openenv_prompts, openenv_reward

    env = PoolOpenEnv.for_server("http://127.0.0.1:8000")
    trainer = GRPOTrainer(model=..., train_dataset=openenv_prompts(env.base_url, starts),
                          environment_factory=env, reward_funcs=[openenv_reward], args=...)

TRL makes one environment a rollout and calls `reset(**row)` with the dataset row: the row's start columns
(game, episode, seed, action, attempts, reward) deal that start on the server, and the first table is appended to
the prompt's user message. The model plays by calling the `shoot` tool (one attempt a call, as `poolbench eval
--game` plays an answer); its last turn, when it is text and the episode still runs, is played as an attempt too,
by `openenv_reward`, so a model that answers in text (as the evaluator's models do) is scored on that answer.
The reward is the episode's sum of the server's turn rewards. Each environment keeps one WebSocket session on
the server for the trainer's life; `PoolOpenEnv.close_all()` ends them.
"""

from __future__ import annotations

import weakref
from typing import ClassVar

from poolbench_data.rl.env import ends_on_call, final_answer
from poolbench_data.rl.server import START_ARGS


class PoolOpenEnv:
    """One rollout's episode on the server. Every public method but `reset` is a tool to TRL: only `shoot`."""

    base_url: ClassVar[str] = ""
    _open: ClassVar[weakref.WeakSet] = weakref.WeakSet()

    @classmethod
    def for_server(cls, base_url: str) -> type[PoolOpenEnv]:
        """The environment class TRL's environment_factory takes (it calls it with no arguments)."""
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://", "ws://", "wss://")):
            raise ValueError(f"base_url {base_url!r}: give the server's URL, e.g. http://127.0.0.1:8000")
        return type(cls.__name__, (cls,), {"base_url": base_url.rstrip("/")})

    @classmethod
    def close_all(cls) -> None:
        """End every environment's session (their WebSockets and client threads)."""
        for env in list(cls._open):
            env._close()

    def __init__(self):
        if not self.base_url:
            raise ValueError("PoolOpenEnv has no server: use PoolOpenEnv.for_server(url) as environment_factory")
        self._client = None
        self.start: dict = {}  # the start dealt last: the row's start columns
        self.rewards: list[float] = []
        self.done = False
        self.end = ""

    def reset(self, **row) -> str:
        """Deal the row's start on the server; the first table, appended to the prompt's user message."""
        from poolbench_data.rl.openenv_client import PoolEnvClient

        if self._client is None:
            self._client = PoolEnvClient(base_url=self.base_url).sync()
            self._client.connect()
            PoolOpenEnv._open.add(self)
        start = {k: row[k] for k in START_ARGS if row.get(k) is not None}
        result = self._client.reset(**start)
        self.start, self.rewards, self.done, self.end = start, [], False, ""
        return result.observation.text

    def shoot(self, answer: str) -> str:
        """Play one attempt: the answer is read as the game's action (nine-ball: 'Speed: Medium, Strikespot:
        Bottom Spin'; run-out: the protocol's JSON action) and simulated.

        Args:
            answer: the action, written as the game's prompt asks

        Returns:
            The attempt's outcome and the next table, or how the episode ended.
        """
        from poolbench_data.rl.server import PoolAction

        if self.done:
            raise ValueError(f"the episode is over ({self.end}); no more attempts")
        result = self._client.step(PoolAction(answer=answer))
        self.rewards.append(float(result.reward))
        self.done, self.end = result.done, result.observation.end
        return result.observation.text or f"The episode ended: {self.end}."

    def _close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            client.close()
        PoolOpenEnv._open.discard(self)


def openenv_reward(completions, environments, **kwargs) -> list[float]:
    """Each rollout's episode reward on the server: its last text turn played as an attempt (unless the episode
    ended or the turn is a tool call), then the sum of the episode's turn rewards."""
    out = []
    for completion, env in zip(completions, environments, strict=True):
        if not env.done and not ends_on_call(completion):
            env.shoot(final_answer(completion))
        out.append(float(sum(env.rewards)))
    return out


def openenv_prompts(base_url: str, starts: list[dict]):
    """A `datasets.Dataset` of the starts (dicts of START_ARGS; game, episode and seed at least): the system
    prompt the server gives each start's game, an empty user message (reset appends the first table), and the
    start columns reset reads."""
    from datasets import Dataset

    from poolbench_data.rl.openenv_client import PoolEnvClient

    if not starts:
        raise ValueError("starts is empty; give at least one start (game, episode, seed)")
    for i, start in enumerate(starts):
        missing = [k for k in ("game", "episode", "seed") if k not in start]
        if missing:
            raise ValueError(f"starts[{i}] has no {', '.join(missing)}; give game, episode and seed of each start")
    rows = []
    with PoolEnvClient(base_url=base_url).sync() as client:
        for start in starts:
            first = client.reset(**start).observation
            rows.append({"prompt": [{"role": "system", "content": first.system_prompt},
                                    {"role": "user", "content": ""}], **{k: start.get(k) for k in START_ARGS}})
    return Dataset.from_list(rows)
