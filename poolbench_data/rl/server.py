"""PoolBench's games as an OpenEnv environment server (`poolbench serve-env`), built on openenv's `create_app`.

Each session plays one game session (rl.game_env.GameSession, or rl.shot_env.ShotSession for the single shot),
so an answer's verdict and reward are the evaluator's: the observation `poolbench eval --game G` sends, the
answer read as the game's action, one step of the game, a wasted attempt where the answer cannot be played.

    reset(game, episode, seed, action, attempts, reward) -> PoolObservation (the first table, the system prompt)
    step(PoolAction(answer=...))                         -> PoolObservation (the next table, the turn's reward)
    state                                                -> PoolState (the start, attempts, done, rewards so far)

OpenEnv's transports: the WebSocket /ws keeps one session (one PoolEnvironment) a connection, its messages
handled one after another; HTTP /reset, /step and /state give each request a fresh environment, so an HTTP
/step names its start beside the action (`start`) and scores that one answer: the single shot, or a game's
first attempt. A refused request changes nothing: reset checks every argument before it replaces the episode,
and a step after the episode ended, on no episode or for another game plays nothing (HTTP: 400 or 409 with
the reason; WebSocket: an error message, the session kept).

Simulations run one at a time in a process (`_PLAYING`): pooltool's nine-ball rack is drawn under seeded global
generators (games.nineball.rack), which two threads would mix, and its numba code holds the GIL anyway. More
throughput is more server processes.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, ConcurrencyConfig, EnvironmentMetadata, Observation, State
from pydantic import Field

from poolbench_data.games.records import GAMES as GAME_NAMES
from poolbench_data.rl.game_env import MAX_ATTEMPTS, EpisodeOver, GameSession
from poolbench_data.rl.shot_env import SHOT, ShotSession, check_shot_args

GAMES = (SHOT, *GAME_NAMES)
START_ARGS = ("game", "episode", "seed", "action", "attempts", "reward")
DEFAULT_GAME = "runout"
MAX_ANSWER = 32_768  # characters: a long reasoning answer fits, a body stays far below the server's size limit
MAX_SESSIONS = 64
IDLE_SESSION_S = 600.0  # a session opened over HTTP /mcp and left: reaped (WebSocket sessions end with their socket)

_PLAYING = threading.Lock()


class Refused(ValueError):
    """A request the environment does not carry out; nothing is recorded. `status`: its HTTP status."""

    status = 400


class Conflict(Refused):
    """A step the session's state does not allow: after the episode ended, or before any reset."""

    status = 409


class PoolAction(Action):
    """One answer: the model's text, read as the evaluator reads it."""

    answer: str = Field(..., max_length=MAX_ANSWER, description="the model's answer text, as the evaluator reads it")
    game: str | None = Field(default=None, description="the game the answer is for; given, an answer meant for "
                             "another game than the session's is refused and nothing is played")


class PoolObservation(Observation):
    """The next user message and what the last answer did (`reward` and `done` are OpenEnv's own fields)."""

    game: str = Field(default="", description="the session's game")
    text: str = Field(default="", description="the user message to answer next: the table and the request; empty "
                      "once the episode ended")
    system_prompt: str = Field(default="", description="the game's system prompt (on reset only)")
    attempt: int = Field(default=0, description="attempts played in this episode")
    parse_status: str = Field(default="", description="how the answer read: ok, or why it could not be played")
    outcome: dict[str, Any] = Field(default_factory=dict, description="the attempt as the evaluator's turn rows "
                                    "carry it (empty on reset)")
    end: str = Field(default="", description="why the episode ended; empty while it goes on")


class PoolState(State):
    """The session's episode: its start, its settings, the rewards so far."""

    game: str | None = Field(default=None, description="the game (None before the first reset)")
    episode: int | None = Field(default=None, description="the start's episode index")
    seed: int | None = Field(default=None, description="the start's base seed")
    action: str | None = Field(default=None, description="the answer format (nine-ball: discrete or continuous)")
    attempts: int | None = Field(default=None, description="the episode's cap of attempts")
    reward: str | None = Field(default=None, description="what a turn's reward counts (balls, success, physics)")
    played: int = Field(default=0, description="attempts played")
    done: bool = Field(default=False, description="whether the episode ended")
    end: str = Field(default="", description="why it ended")
    rewards: list[float] = Field(default_factory=list, description="each attempt's reward, in order")
    total: float = Field(default=0.0, description="the sum of rewards")


def open_session(game: str = DEFAULT_GAME, action: str | None = None, attempts: int | None = None,
                 reward: str | None = None):
    """A fresh session of `game`, every argument checked first (one ValueError naming the argument)."""
    if not isinstance(game, str) or game not in GAMES:
        raise ValueError(f"game {game!r} is not a game; choose from {', '.join(GAMES)}")
    if game == SHOT:
        check_shot_args(action, attempts, reward)
        return ShotSession()
    return GameSession(game, action=action, attempts=MAX_ATTEMPTS if attempts is None else attempts,
                       reward="balls" if reward is None else reward)


def check_start_args(given: dict, allowed: tuple[str, ...] = START_ARGS) -> None:
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise Refused(f"unknown argument{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
                      f"give {', '.join(allowed)}")


class PoolEnvironment(Environment[PoolAction, PoolObservation, PoolState]):
    """One session's game: a new episode on reset, an attempt a step."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # nothing is shared between instances but the simulation lock

    def __init__(self):
        super().__init__()
        self._session = None
        self._start: dict = {}
        self._episode_id: str | None = None

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> PoolObservation:
        """Deal `episode` of base seed `seed` of `game` (OpenEnv's `seed` is the base seed: 0 the evaluation's)."""
        check_start_args(kwargs)  # `seed` is OpenEnv's own argument, never among the rest
        if episode_id is not None and (not isinstance(episode_id, str) or len(episode_id) > 255):
            raise Refused(f"episode_id is {_shown(episode_id)}; give a string of at most 255 characters")
        game, episode = kwargs.get("game", DEFAULT_GAME), kwargs.get("episode", 0)
        seed = 0 if seed is None else seed
        try:
            session = open_session(game, kwargs.get("action"), kwargs.get("attempts"), kwargs.get("reward"))
            with _PLAYING:
                text = session.reset(episode, seed)
        except ValueError as e:
            raise Refused(str(e)) from None
        self._session, self._episode_id = session, episode_id
        self._start = {"game": game, "episode": episode, "seed": seed}
        return PoolObservation(game=game, text=text, system_prompt=session.system_prompt, done=False, reward=None)

    def step(self, action: PoolAction, timeout_s: float | None = None, start: dict | None = None,
             **kwargs: Any) -> PoolObservation:
        """Play one answer. `start` (HTTP, where each request gets a fresh environment): deal that start first."""
        if kwargs:
            check_start_args(kwargs, ("start",))
        if start is not None:
            if not isinstance(start, dict):
                raise Refused(f"start is {_shown(start)}; give an object of {', '.join(START_ARGS)}")
            check_start_args(start)
            self.reset(**start)
        session = self._session
        if session is None:
            raise Conflict("no episode: reset first. An HTTP /step keeps no session (OpenEnv gives each request a "
                           "fresh environment): give `start` beside the action to score one answer, or play an "
                           "episode over the WebSocket /ws")
        if action.game is not None and action.game != session.game:
            raise Refused(f"the answer is for game {action.game!r}; the episode being played is {session.game!r}")
        try:
            with _PLAYING:
                began = time.perf_counter()
                turn = session.step(action.answer)
                spent = time.perf_counter() - began
        except EpisodeOver as e:
            raise Conflict(str(e)) from None
        return PoolObservation(game=session.game, text=turn.observation, attempt=len(session.rewards),
                               parse_status=turn.parse_status, outcome=turn.outcome, end=_end(session),
                               done=turn.done, reward=turn.reward, metadata={"step_s": spent})

    @property
    def state(self) -> PoolState:
        s = self._session
        if s is None:
            return PoolState(episode_id=self._episode_id)
        return PoolState(episode_id=self._episode_id, step_count=len(s.rewards), **self._start, action=s.action,
                         attempts=s.attempts, reward=s.reward, played=len(s.rewards), done=s.done, end=_end(s),
                         rewards=list(s.rewards), total=float(sum(s.rewards)))

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="poolbench", version=_version(),
            description="PoolBench: eight-ball and nine-ball pool simulated with pooltool. Games: "
                        f"{', '.join(GAMES)}; an answer is read and scored as `poolbench eval` does.")


def _end(session) -> str:
    return session.end if isinstance(session, ShotSession) else (session.state.end if session.state else "")


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("poolbench-data")
    except PackageNotFoundError:
        return "0+unknown"


def make_app(max_sessions: int = MAX_SESSIONS, allowed_hosts: frozenset[str] | None = None):
    """The ASGI app: openenv's create_app over PoolEnvironment, its refusals as HTTP 400/409, behind the request
    guard (rl.asgi_guard: body and frame size and nesting, Host and Origin)."""
    from fastapi.responses import JSONResponse
    from openenv.core.env_server.http_server import create_app

    from poolbench_data.rl.asgi_guard import Guard

    app = create_app(PoolEnvironment, PoolAction, PoolObservation, env_name="poolbench", state_cls=PoolState,
                     concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions,
                                                          session_timeout=IDLE_SESSION_S))

    async def refused(request, exc: Refused):
        return JSONResponse({"detail": str(exc)}, status_code=exc.status)

    app.add_exception_handler(Refused, refused)
    return Guard(app, allowed_hosts=allowed_hosts, body_check=check_body)


def check_body(path: str, body: bytes) -> str | None:
    """What OpenEnv's HTTP routes would take but this server refuses (400), given the body as sent:
    - /reset's `seed` other than a whole number: OpenEnv's ResetRequest reads it leniently (true, 1.0 and "1" all
      become 1), where a WebSocket reset's reaches PoolEnvironment as sent and is refused;
    - /mcp's `openenv/session/create`: a session opened over HTTP holds a place among --max_sessions until it is
      reaped, and this environment has no MCP tools to call in it; sessions are played over /ws."""
    import json

    if path not in ("/reset", "/mcp"):
        return None
    try:
        data = json.loads(body)
    except ValueError:
        return None  # OpenEnv answers a malformed body itself (422)
    if not isinstance(data, dict):
        return None
    seed = data.get("seed")
    if path == "/reset" and seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        return f"seed is {_shown(seed)}; give a whole number from 0 to 2**32 - 1"
    if path == "/mcp" and data.get("method") == "openenv/session/create":
        return "this environment has no MCP tools: play a session over the WebSocket /ws"
    return None
