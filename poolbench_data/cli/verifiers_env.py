"""PoolBench as a verifiers environment (extra `verifiers`, verifiers 0.4): evaluate with `vf-eval`, train with
any trainer that runs verifiers environments (prime-rl). The taskset id is `poolbench`, the top-level module
this package installs (`poolbench.py`), which exports the taskset and its harness the way verifiers finds
them (a module named by the id, exporting its Taskset and Harness subclasses in `__all__`):

    vf-eval poolbench -m served-name --client.base-url http://127.0.0.1:8000/v1 --no-push -n 50
    vf-eval poolbench --env.taskset.track tools -m served-name --client.base-url ... --no-push

    from poolbench import load_environment
    env = load_environment(track="tools", reward="physics", n=200, seed=1, train=True)

Arguments (`--env.taskset.*` on the command line, keywords of `load_environment`): the boards (`dataset_dir` and
`split`, or `n` and `seed`; `train` refuses evaluation boards), the track (`free_text`: the paper's single turn;
`tools`: the `ghost_ball` tool, at most `max_calls` calls, as `poolbench eval --tools`), and the reward
(`clean_pot`: 1 for a legal pot, else 0; `physics`: the physics levels 0 unparseable, 1 foul, 2 legal contact,
3 legal pot). Boards are made as the rollouts read them: a large `n` starts at once. Each rollout's final answer
is parsed and simulated by this package (`answer_record`, the evaluator's own path) and scored: the reward, and the
metrics legal_contact, own_potted, foul, opp_or_8_potted, clean_pot and parseable (each 0/1), plus tool_calls.

`game` plays a game turn by turn instead of one shot (docs/games.md), as `poolbench eval --game G` does: one
episode a rollout, each answer played by rl.game_env.GameSession, the reward summed over the episode's turns
(`--env.taskset.game runout`; poolbench_data.cli.verifiers_games says how).

The harness plays the protocol in process (the contract verifiers allows a harness: every model call goes
through the rollout's interception endpoint): the system and user prompts, then on the tools track every turn
whose text holds `<tool_call>` blocks outside its reasoning gets the tool's results (llm.tools.answer_calls) until
a turn holds none or `max_calls` turns called; that last turn is the answer. With a game the same loop plays the
episode, GameSession in place of the tool. Sampling defaults to the protocol's (T 0.2, 300 tokens); `--sampling.*`
overrides it.
"""

from __future__ import annotations

import functools
import json
import re

import verifiers.v1 as vf
from pydantic import ValidationError, model_validator

from poolbench_data.cli.verifiers_games import (  # noqa: F401 - GAME_METRICS, RUNOUT_METRICS: the taskset's API
    GAME_METRICS,
    RUNOUT_METRICS,
    SHOT,
    check_game_arguments,
    episodes,
    game_metrics,
    play,
    played,
)
from poolbench_data.config import shown
from poolbench_data.evaluation.env_boards import BoardSource
from poolbench_data.games.records import GAMES
from poolbench_data.llm.observation import HISTORIES
from poolbench_data.llm.tools import MAX_CALLS, TOOL_NOTE, TOOLS, answer_calls, tool_calls
from poolbench_data.protocol.prompts import DEFAULT_MAX_TOKENS, DEFAULT_TEMPERATURE
from poolbench_data.rl.game_env import MAX_ATTEMPTS
from poolbench_data.rl.game_env import REWARDS as GAME_REWARDS

TASKSET_ID = "poolbench"
TRACKS = ("free_text", "tools")
REWARDS = ("clean_pot", "physics")
METRICS = ("legal_contact", "own_potted", "foul", "opp_or_8_potted", "clean_pot", "parseable")
# The settings of one kind of environment, each refused (when not left at its default) by the other.
SHOT_ONLY = ("dataset_dir", "split", "track", "max_calls")
GAME_ONLY = ("action", "attempts", "history")


class PoolBenchConfig(vf.TasksetConfig):
    """PoolBench's boards, track and reward, or a game's episodes (`--env.taskset.*`)."""

    id: str = TASKSET_ID
    dataset_dir: str = ""
    """A dataset folder (builders/build_dataset.py) whose `split` to play; empty: generated boards (n, seed)."""
    split: str = "test"
    """The dataset folder's split (with dataset_dir)."""
    n: int | None = None
    """Boards: the first n of the split, or n generated boards (default: every board of the split, or 50); a game:
    n episodes (default 50)."""
    seed: int | None = None
    """Base seed of generated boards, or of a game's episodes (default: the evaluation set's 0; with train, 1)."""
    train: bool = False
    """An environment to train on: the evaluation split, seed and boards are refused (and nineball's one rack)."""
    track: str = "free_text"
    """free_text: one answer (the paper's protocol); tools: the ghost_ball tool before the answer."""
    max_calls: int = MAX_CALLS
    """Turns that may call the tool on the tools track; the turn after the last is the answer."""
    reward: str = ""
    """A single shot: clean_pot (the default), 1 for a legal pot, else 0; physics: 0 unparseable, 1 foul, 2 legal
    contact, 3 legal pot. A game: balls (the default), success or physics, summed over the episode's turns."""
    game: str = SHOT
    """shot: one shot a board (the paper's protocol); nineball, nineball-seeded, runout: a game played turn by turn,
    one episode a rollout (n episodes of base seed `seed`)."""
    action: str | None = None
    """With a nine-ball game: discrete (DeepPHY's answer line, the default) or continuous (a JSON of speed and
    spin)."""
    attempts: int = MAX_ATTEMPTS
    """With a game: the most attempts an episode takes (DeepPHY's 15)."""
    history: str = "full"
    """With a game: full, each turn sends the conversation so far; current, the system prompt and the table now."""

    @model_validator(mode="before")
    @classmethod
    def _check_types(cls, data):
        if isinstance(data, dict):
            check_types(data)
        return data

    @model_validator(mode="after")
    def _check(self) -> PoolBenchConfig:
        if not self.reward:  # each kind's own default, kept in the config verifiers records
            self.reward = "clean_pot" if self.game == SHOT else "balls"
        check_arguments(self)
        return self

    def source(self) -> BoardSource:
        return BoardSource(self.dataset_dir, self.split, self.n, self.seed, self.train)


# A whole number as a command line writes it (`--env.taskset.n 5` arrives as the text "5").
_WHOLE = re.compile(r"[+-]?[0-9]+")
# What each argument takes, for the one line that names it.
_WHOLES = {"n": "a whole number >= 1, or leave it out for every board of the split (50 generated boards)",
           "seed": "a whole number in [0, 2**63 - 1], or leave it out for the split's default",
           "max_calls": "a whole number >= 1", "attempts": "a whole number from 1 to 100"}
_TEXTS = {"dataset_dir": "a dataset folder's path, or leave it out for generated boards",
          "split": "a split of dataset_dir, e.g. 'train'", "track": f"{' or '.join(TRACKS)}",
          "reward": f"{' or '.join(REWARDS)} (a game: {', '.join(GAME_REWARDS)})",
          "game": f"{SHOT} or a game: {', '.join(GAMES)}", "history": f"{' or '.join(HISTORIES)}"}


def check_types(data: dict) -> None:
    """The arguments' types, before pydantic reads them (it reads True as 1, and its errors name no argument):
    one ValueError naming the argument and what to give."""
    for name, what in _WHOLES.items():
        value = data.get(name)
        if name not in data or (value is None and name not in ("max_calls", "attempts")):
            continue
        if isinstance(value, bool) or not (isinstance(value, int) or isinstance(value, str)
                                           and _WHOLE.fullmatch(value.strip())):
            raise ValueError(f"{name} is {shown(value)}; give {what}")
    for name, what in _TEXTS.items():
        if name in data and not isinstance(data[name], str):
            raise ValueError(f"{name} is {shown(data[name])}; give {what}")
    if data.get("action") is not None and not isinstance(data["action"], str):
        raise ValueError(f"action is {shown(data['action'])}; give discrete or continuous, or leave it out")
    if "train" in data and not isinstance(data["train"], (bool, str)):
        raise ValueError(f"train is {shown(data['train'])}; give True (an environment to train on) or False")


def check_arguments(config) -> None:
    """Every argument, before any board is made or engine started: one ValueError naming the argument."""
    if config.game != SHOT:
        return check_game_arguments(config, REWARDS, lambda what: _only_with(config, SHOT_ONLY, what))
    if config.track not in TRACKS:
        raise ValueError(f"track {config.track!r} is unknown; choose {' or '.join(TRACKS)}")
    if config.reward not in REWARDS:
        if config.reward in GAME_REWARDS:
            raise ValueError(f"reward {config.reward!r} is a game's reward; add game ({', '.join(GAMES)}), or "
                             f"choose {' or '.join(REWARDS)}")
        raise ValueError(f"reward {config.reward!r} is unknown; choose {' or '.join(REWARDS)}")
    if isinstance(config.max_calls, bool) or config.max_calls < 1:
        raise ValueError(f"max_calls must be >= 1 (got {config.max_calls!r})")
    _only_with(config, GAME_ONLY, f"read only with a game ({', '.join(GAMES)}); add game, or leave {{}} out")
    config.source().check()


def _only_with(config, names: tuple[str, ...], what: str) -> None:
    """The settings `names` left at their defaults: given to the other kind of environment, it would ignore them.
    `what` says why, with {} for the setting's name."""
    for name in names:
        if getattr(config, name) != PoolBenchConfig.model_fields[name].default:
            raise ValueError(f"{name} is {what.format(name)}")


class PoolBenchData(vf.TaskData):
    """One board (its scenario row) and how it is played and scored; with a game, one episode's start (episode k
    of base seed `seed`) and the game's settings."""

    board: dict | None = None
    category: str = ""
    track: str = "free_text"
    max_calls: int = MAX_CALLS
    reward: str = "clean_pot"
    game: str = SHOT
    action: str | None = None
    attempts: int = MAX_ATTEMPTS
    history: str = "full"
    episode: int = 0
    seed: int = 0


class PoolBenchTask(vf.Task[PoolBenchData, vf.State, vf.TaskConfig]):
    """Scores the rollout's final answer with this package's parser and simulator; a game's episode by the verdicts
    the harness recorded as it played it."""

    @property
    def key(self) -> str:
        if self.data.game != SHOT:
            return f"{self.data.game}:{self.data.seed}:{self.data.episode}"
        return f"{self.data.id}:{self.data.track}"

    @vf.metric
    async def outcome(self, task, trace) -> dict[str, float]:
        if getattr(task, "game", SHOT) != SHOT:
            return game_metrics(task.game, played(trace))
        return {**shot_metrics(_board_json(task.board), final_text(trace)),
                "tool_calls": float(len(trace.tool_messages))}

    @vf.reward
    async def reward(self, task, trace) -> dict[str, float]:
        if getattr(task, "game", SHOT) != SHOT:
            return {task.reward: float(sum(t["reward"] for t in played(trace)["turns"]))}
        metrics = shot_metrics(_board_json(task.board), final_text(trace))
        return {task.reward: metrics["physics"] if task.reward == "physics" else metrics["clean_pot"]}


class PoolBenchTaskset(vf.Taskset[PoolBenchTask, PoolBenchConfig]):
    """The boards of `config.source()`, each the protocol's prompts (with the tool's paragraph on the tools
    track); with a game, its episodes' starts, each the evaluator's first messages."""

    def load(self):
        from poolbench_data.protocol.prompts import messages

        c = self.config
        if c.game != SHOT:
            yield from self._episodes()
            return
        for s in c.source().boards():
            system, user = messages(s)
            note = TOOL_NOTE if c.track == "tools" else ""
            yield PoolBenchTask(PoolBenchData(id=s.id, name=f"{s.id} ({s.category})", prompt=user["content"],
                                              system_prompt=system["content"] + note, board=s.to_row(),
                                              category=s.category, track=c.track, max_calls=c.max_calls,
                                              reward=c.reward), c.task)

    def _episodes(self):
        """Each episode's start as the evaluator deals it (verifiers_games.episodes); made as read."""
        for fields in episodes(self.config):
            yield PoolBenchTask(PoolBenchData(**fields), self.config.task)


class PoolBenchHarnessConfig(vf.HarnessConfig):
    id: str = TASKSET_ID


class PoolBenchHarness(vf.Harness[PoolBenchHarnessConfig]):
    """The protocol's conversation, in process: every model call goes through the rollout's endpoint."""

    APPENDS_SYSTEM_PROMPT = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data, tool_interception_url=None):
        import openai

        from poolbench_data.core.records import Scenario

        system, prompt = self.resolve_prompt(data)
        conv = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        tools = getattr(data, "track", "free_text") == "tools"
        client = openai.AsyncOpenAI(base_url=endpoint, api_key=secret, max_retries=0)
        if getattr(data, "game", SHOT) != SHOT:
            try:
                text = await play(lambda conv: _turn(client, ctx.model, conv, False), conv, data, trace)
            finally:
                await client.close()
            return vf.ProgramResult(exit_code=0, stdout=text, stderr="")
        try:
            text = await _turn(client, ctx.model, conv, tools)
            if tools:
                scenario, cap, log = Scenario.from_row(data.board), int(data.max_calls), []
                for _ in range(cap):  # each turn spends at least one call of the cap
                    if len(log) >= cap or not tool_calls(text):
                        break
                    answer_calls(scenario, conv, text, cap, log)
                    text = await _turn(client, ctx.model, conv, tools)
        finally:
            await client.close()
        return vf.ProgramResult(exit_code=0, stdout=text, stderr="")


class PoolBenchEnvConfig(vf.EnvConfig):
    """One `agent` seat, as verifiers' single-agent env, whose runtime defaults to a local subprocess: the
    harness runs in process and needs no sandbox (`--env.agent.runtime.type` still picks another)."""

    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())


class PoolBenchEnv(vf.Env[PoolBenchEnvConfig]):
    """The single-agent episode: the agent plays the board, or the game's episode, once."""

    async def run(self, task, agents) -> None:
        await agents.agent.run(task)


async def _turn(client, model: str, conv: list[dict], tools: bool) -> str:
    from poolbench_data.llm.openai_backend import message_text

    extra = {"tools": TOOLS} if tools else {}
    response = await client.chat.completions.create(model=model, messages=conv, temperature=DEFAULT_TEMPERATURE,
                                                    max_tokens=DEFAULT_MAX_TOKENS, **extra)
    return message_text(response.choices[0].message)


def final_text(trace) -> str:
    """The rollout's last model turn as the evaluator reads an answer (llm.openai_backend.message_text): reasoning
    the server returned apart inside <think> ... </think>, the content, then structured calls as <tool_call> text.
    No turn at all is an empty answer."""
    turns = trace.assistant_messages
    return answer_text(turns[-1]) if turns else ""


def answer_text(m) -> str:
    """One model turn of a trace as the evaluator reads an answer (final_text's form)."""
    from poolbench_data.llm.backend import tool_call_text
    from poolbench_data.protocol.parsing import THINK_CLOSE, THINK_OPEN

    think = f"{THINK_OPEN}{m.reasoning_content}{THINK_CLOSE}" if m.reasoning_content else ""
    calls = [tool_call_text(c.name, c.arguments) for c in m.tool_calls or []]
    return "".join([think, m.content or "", *calls])


def _board_json(board: dict) -> str:
    return json.dumps(board, sort_keys=True)


@functools.lru_cache(maxsize=4096)
def shot_metrics(board_json: str, text: str) -> dict[str, float]:
    """The answer's six 0/1 metrics and its physics level, as `poolbench eval` records it (reward and metrics
    of one rollout share one simulation)."""
    from poolbench_data.core.records import Scenario
    from poolbench_data.core.scoring import physics_score
    from poolbench_data.llm.player import answer_record

    rec = answer_record(Scenario.from_row(json.loads(board_json)), text, None, player="model", sample=0)
    values = {k: float(getattr(rec.metrics, k)) for k in METRICS if k != "parseable"}
    return {**values, "parseable": float(rec.shot is not None), "physics": physics_score(rec.metrics)}


def taskset_config(**kwargs) -> PoolBenchConfig:
    """The taskset's config from keyword arguments; a bad one is one ValueError naming it."""
    unknown = sorted(set(kwargs) - set(PoolBenchConfig.model_fields) - {"id"})
    if unknown:
        raise ValueError(f"load_environment got unknown arguments {unknown}; it takes "
                         f"{', '.join(f for f in PoolBenchConfig.model_fields if f not in ('id', 'task'))}")
    try:
        return PoolBenchConfig(**{**kwargs, "id": TASKSET_ID})
    except ValidationError as exc:
        raise ValueError("; ".join(_named(e) for e in exc.errors())) from None


def _named(error: dict) -> str:
    """One pydantic error as a line that names its argument (a check of ours names it itself)."""
    message = str(error["msg"]).removeprefix("Value error, ")
    name = ".".join(str(part) for part in error.get("loc", ()))
    return f"{name}: {message}" if name and not message.startswith(name) else message


def load_environment(**kwargs) -> vf.Env:
    """The environment verifiers runs (`vf.Env`): PoolBench's taskset, played by its harness. Keyword arguments
    are the taskset's (PoolBenchConfig): dataset_dir, split, n, seed, train, track, max_calls, reward; game,
    action, attempts, history."""
    config = taskset_config(**kwargs)
    return vf.load_environment(vf.resolve_env_config({"taskset": config.model_dump()}))
