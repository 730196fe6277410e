"""A language model plays games: each turn, every unfinished episode's observation goes to the backend in one
batched request; each answer is read as the game's action and played by the game's one step function
(games.step), which also turns an answer that cannot be played into a wasted attempt, recorded with its status.
An episode waits only for its own simulation: it leaves the batch when it ends, and the others go on.

messages (llm.observation) -> backend.generate -> play_answer (read_answer, then step) -> the next observation.

A turn whose request failed for good (timeout, refused, past the deadline, a replay with no stored answer) is no
answer of the model's: the episode stops there, marked `request_failed`, and reports leave it out of the model's
rates and count it apart, as the single-shot evaluator does with REQUEST_FAILED shots.

Every request is seeded by its episode, sample and attempt (`turn_seed`), never by its place in the batch, so
an episode's sampling does not depend on which others are still playing. With `replay` the answers are a
stored run's, looked up by (episode, sample, turn).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

from poolbench_data.core.shutdown import stop_if_requested
from poolbench_data.games.records import Episode, GameState, action_row
from poolbench_data.games.step import rules_of
from poolbench_data.llm.backend import GenerationFailure
from poolbench_data.llm.observation import (
    GAME_PROMPT_VERSION,
    answer_schema,
    game_system_prompt,
    observation,
    play_answer,
)
from poolbench_data.llm.player import REQUEST_FAILED
from poolbench_data.llm.tools import MAX_CALLS, TOOLS, ToolThread, continue_threads, with_tool_note
from poolbench_data.protocol.prompts import DEFAULT_MAX_TOKENS, DEFAULT_TEMPERATURE


@dataclass(frozen=True)
class GameSettings:
    """How the model plays: the game, its action format and history, and the sampling (stored with each run)."""

    model: str
    backend: str
    game: str
    action: str  # discrete (DeepPHY's line) or continuous (a JSON action)
    history: str = "current"  # current: the table now (DeepPHY's runner); full: the conversation so far
    samples: int = 1  # independent episodes from each start
    temperature: float = DEFAULT_TEMPERATURE
    max_tokens: int = DEFAULT_MAX_TOKENS
    seed: int = 0
    structured: bool = False
    vision: bool = False
    tools: bool = False
    max_tool_calls: int = MAX_CALLS
    tool_lines: bool = False  # the tool's reports show the cue ball's headings after contact (llm.tools.LINES_NOTE)
    prompt_version: str = GAME_PROMPT_VERSION

    def to_dict(self) -> dict:
        return asdict(self)


def turn_seed(seed: int, episode: int, sample: int, turn: int, call: int = 0) -> int:
    """The request seed of one turn (and tool call) of one episode: hash-derived, 31 bits (llm.backend.request_seed)."""
    digest = hashlib.sha256(f"poolbench-game:{seed}:{episode}:{sample}:{turn}:{call}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@dataclass
class Seat:
    """One episode while the model plays it: the states so far, the conversation (text only; `history` "full"
    keeps every turn in it), the model's answers and the turn rows."""

    episode: int  # k: the start's index
    sample: int
    states: list[GameState]
    conv: list[dict]
    answers: list[str | None] = field(default_factory=list)
    prompts: list[list[dict]] = field(default_factory=list)  # each turn's messages as first sent, images left out
    hows: list[str] = field(default_factory=list)
    failure: GenerationFailure | None = None

    @property
    def state(self) -> GameState:
        return self.states[-1]

    @property
    def live(self) -> bool:
        return self.failure is None and not self.state.done

    def to_episode(self, player: str) -> Episode:
        """The Episode as far as it went (a request failure leaves it unfinished); the model runs no simulation
        deciding, and `hows` holds each answer's parse status."""
        return Episode(player, tuple(self.states), (0,) * (len(self.states) - 1), tuple(self.hows))


def seats_of(starts: Sequence[GameState], settings: GameSettings) -> list[Seat]:
    """Each start's `settings.samples` episodes, start-major."""
    system = game_system_prompt(settings.game, settings.action, settings.vision)
    conv = [{"role": "system", "content": system}]
    if settings.tools:
        conv = with_tool_note([conv], settings.tool_lines)[0]
    return [Seat(k, j, [s], list(conv)) for k, s in enumerate(starts) for j in range(settings.samples)]


def prompt_sha256(messages: list[dict]) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def play_games(seats: list[Seat], backend, settings: GameSettings, *, player: str,
               replay: dict | None = None, image_of: Callable[[GameState], bytes] | None = None,
               on_turn: Callable[[dict], None] | None = None, on_done: Callable[[Seat], None] | None = None,
               usage: dict | None = None) -> list[Seat]:
    """Play every seat to its end (or to a failed request). `replay`: {(episode, sample, turn): answer or None}
    instead of the backend. `image_of(state)`: the PNG sent with each observation (--vision). Each turn's row
    goes to `on_turn` as it is played, each seat to `on_done` when it ends; token usage is added to `usage`."""
    from poolbench_data.llm.experiments import with_images
    from poolbench_data.llm.replay import ReplayBackend

    schema = answer_schema(settings.game, settings.action) if settings.structured else None
    tools = TOOLS if settings.tools else None
    while live := [s for s in seats if s.live]:
        stop_if_requested()
        asks = [observation(s.state) for s in live]
        plain = [s.conv + [{"role": "user", "content": text}] for s, text in zip(live, asks)]
        sent = plain
        if image_of is not None:
            sent = [with_images([conv], [image_of(s.state)])[0] for s, conv in zip(live, plain)]
        turns = [s.state.attempts + 1 for s in live]
        seeds = [turn_seed(settings.seed, s.episode, s.sample, t) for s, t in zip(live, turns)]
        if replay is not None:
            source = ReplayBackend([[replay.get((s.episode, s.sample, t))] for s, t in zip(live, turns)])
        else:
            source = backend
        gen = source.generate(sent, n=1, temperature=settings.temperature, max_tokens=settings.max_tokens,
                              seed=settings.seed, json_schema=schema, tools=tools, seeds=seeds)
        gens = [gen]
        failed = gen.failed_slots()
        threads = [ToolThread(i, 0, list(conv), gen.texts[i][0], failure=failed.get((i, 0)))
                   for i, conv in enumerate(sent)]
        if settings.tools:
            def ask(convs, live_threads, call):
                seeds = [turn_seed(settings.seed, live[t.board].episode, live[t.board].sample, turns[t.board], call)
                         for t in live_threads]
                return backend.generate(convs, n=1, temperature=settings.temperature, max_tokens=settings.max_tokens,
                                        seed=settings.seed, tools=TOOLS, seeds=seeds)

            gens += continue_threads(threads, lambda t: rules_of("runout").scenario(live[t.board].state),
                                     settings.max_tool_calls, ask, settings.tool_lines)
        if usage is not None:
            for g in gens:
                for key, value in g.usage.items():
                    usage[key] = usage.get(key, 0) + value
        for seat, text, conv, prompt, thread, turn, seed in zip(live, asks, sent, plain, threads, turns, seeds):
            row = _take(seat, thread, text, conv, prompt, turn, seed, settings, player)
            if on_turn is not None:
                on_turn(row)
            if not seat.live and on_done is not None:
                on_done(seat)
    return seats


def _take(seat: Seat, thread: ToolThread, text: str, sent: list[dict], prompt: list[dict], turn: int, seed: int,
          settings: GameSettings, player: str) -> dict:
    """Play the seat's answer (or record its failed request); the turn's row. `sent`: the messages as sent (with
    the image, under --vision); `prompt`: the same without it."""
    state = seat.state
    base = {"player": player, "player_kind": "llm", "model": settings.model, "game": state.game,
            "episode": seat.episode, "sample": seat.sample, "start": state.start, "turn": turn,
            "prompt_sha256": prompt_sha256(sent), "messages": len(sent), "observation": text,
            "history": settings.history, "action_format": settings.action, "temperature": settings.temperature,
            "seed": seed, "prompt_version": settings.prompt_version,
            "tool_calls": thread.calls, "tool_turns": thread.turns}
    if thread.failure is not None:
        seat.failure = thread.failure
        f = thread.failure
        return {**base, "raw_response": None, "parse_status": REQUEST_FAILED, "message": f"{f.kind}: {f.error}",
                "action": None, "after": state.to_row()}
    answer = thread.text
    action, after, outcome = play_answer(state, answer, settings.action)
    seat.states.append(after)
    seat.answers.append(answer)
    seat.prompts.append(prompt)
    seat.hows.append(outcome.parse_status)
    if settings.history == "full":
        seat.conv = [*seat.conv, {"role": "user", "content": text}, *thread.conv[len(sent):],
                     {"role": "assistant", "content": answer}]
    return {**base, **outcome.to_row(), "action": action_row(action), "raw_response": answer,
            "after": after.to_row()}


def episode_row(seat: Seat, player: str, model: str) -> dict:
    """The episode's row: Episode.to_row() (the `episodes` dataset's shape) with the model's answers and prompts
    (one a turn: the messages first sent, without images), its place (episode, sample), its digest, and the
    request failure that stopped it, if any."""
    episode = seat.to_episode(player)
    f = seat.failure
    return {**episode.to_row(), "player_kind": "llm", "model": model, "episode": seat.episode,
            "sample": seat.sample, "digest": episode.digest(), "balls": episode.balls, "answers": list(seat.answers),
            "prompts": list(seat.prompts),
            "request_failed": f is not None, "failure": None if f is None else {"kind": f.kind, "error": f.error}}
