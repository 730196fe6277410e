"""Frozen records of a game played shot by shot.

Strike    - a nine-ball action: speed and cue-tip offsets; the game chooses the aim.
Outcome   - what one attempt did: the action, the shot fired, the simulation, the verdict.
GameState - the table between attempts: balls at rest, attempts so far, balls potted, the last outcome.
Episode   - one player's game from its start to its end, with a digest that is the same byte for byte
            wherever it was played.
Move      - a player's decision: its action, and the simulation of it when the player ran one.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from poolbench_data.core.records import CUE, EIGHT, BallPos, Shot, ShotResult, group_of

GAMES = ("nineball", "nineball-seeded", "runout")


@dataclass(frozen=True)
class Strike:
    """Speed (m/s) and the cue tip's offsets a, b (ball radii, pooltool's signs); `name` is DeepPHY's
    "Speed / Strikespot" for one of its 27 discrete actions, empty for a continuous one."""

    V0: float
    a: float = 0.0
    b: float = 0.0
    name: str = ""

    def to_row(self) -> dict:
        return {"kind": "strike", "V0": self.V0, "a": self.a, "b": self.b, "name": self.name}


def action_row(action) -> dict | None:
    if action is None:
        return None
    return action.to_row() if isinstance(action, Strike) else {"kind": "shot", **action.to_row()}


@dataclass(frozen=True)
class Outcome:
    """One attempt. `action` is what the player chose (None: nothing could be parsed); `shot` what was fired
    (None: the attempt was wasted, `parse_status` says why); `result` the simulation, with the balls' real ids."""

    attempt: int  # 1-based
    action: Strike | Shot | None
    shot: Shot | None
    result: ShotResult | None
    potted: tuple[str, ...]  # object balls pocketed on this attempt, in order
    scratch: bool  # the cue ball was pocketed
    foul_reasons: tuple[str, ...]
    clean: bool  # an own ball (runout) or any ball (nineball) potted, the right ball hit first, no foul
    end: str = ""  # why the episode ended on this attempt; "" while it goes on
    respotted: bool = False  # nineball: the cue ball was put back on its spot
    parse_status: str = "ok"
    message: str = ""

    @property
    def fired(self) -> bool:
        return self.shot is not None

    @property
    def event_text(self) -> str:
        return self.result.event_text() if self.result is not None else ""

    def to_row(self) -> dict:
        r = self.result
        return {"attempt": self.attempt, "action": action_row(self.action),
                "shot": self.shot.to_row() if self.shot is not None else None,
                "status": r.status if r is not None else None, "event_text": self.event_text,
                "events": [e.to_row() for e in r.events] if r is not None else [],
                "first_contact": r.first_contact if r is not None else None,
                "potted": list(self.potted), "scratch": self.scratch, "foul_reasons": list(self.foul_reasons),
                "clean": self.clean, "end": self.end, "respotted": self.respotted,
                "parse_status": self.parse_status, "message": self.message}


@dataclass(frozen=True)
class GameState:
    """The table between attempts. `seed` is the episode's (a player's random draws read it); `start` names the
    layout the episode began from and `start_seed` the seed that drew it (a rack's, or a board's)."""

    game: str  # one of GAMES
    start: str
    start_seed: int
    seed: int
    category: str  # runout: the board's category; nineball: "rack"
    balls: tuple[BallPos, ...]  # canonical order, the cue ball first while it is on the table
    group: str | None  # runout: the player's group; nineball: None (the lowest ball is always the target)
    max_attempts: int
    attempts: int = 0
    potted: tuple[str, ...] = ()  # object balls potted so far, in order
    actions: tuple = ()  # the actions of the attempts so far (MOCK draws among those not yet tried)
    last: Outcome | None = None
    done: bool = False
    success: bool = False
    end: str = ""

    @property
    def object_ids(self) -> tuple[str, ...]:
        return tuple(b.id for b in self.balls if b.id != CUE)

    def ball(self, ball_id: str) -> BallPos:
        return next(b for b in self.balls if b.id == ball_id)

    def to_row(self) -> dict:
        """The table and the counters (the last outcome is the episode's turn row, not repeated here)."""
        return {"game": self.game, "start": self.start, "start_seed": self.start_seed, "seed": self.seed,
                "category": self.category, "group": self.group, "max_attempts": self.max_attempts,
                "balls": [{"id": b.id, "x": b.x, "y": b.y} for b in self.balls], "attempts": self.attempts,
                "potted": list(self.potted), "done": self.done, "success": self.success, "end": self.end}


@dataclass(frozen=True)
class Episode:
    """A player's game: `states[0]` is the start, `states[i]` the table after attempt i (its `last` that
    attempt's outcome); `sims[i]` the simulations the player ran deciding attempt i + 1."""

    player: str
    states: tuple[GameState, ...]
    sims: tuple[int, ...]
    hows: tuple[str, ...] = ()  # how the player decided each attempt

    @property
    def final(self) -> GameState:
        return self.states[-1]

    @property
    def outcomes(self) -> tuple[Outcome, ...]:
        return tuple(s.last for s in self.states[1:])

    @property
    def success(self) -> bool:
        return self.final.success

    @property
    def attempts(self) -> int:
        return self.final.attempts

    @property
    def balls(self) -> int:
        """Balls potted on clean attempts: a run-out's balls per visit (the 8 counts when it wins)."""
        return sum(outcome_balls(o, self.final.game, self.final.group) for o in self.outcomes)

    def to_row(self) -> dict:
        return {"player": self.player, "start": self.states[0].to_row(), "sims": list(self.sims),
                "hows": list(self.hows),
                "turns": [{**s.last.to_row(), "after": s.to_row()} for s in self.states[1:]],
                "success": self.success, "attempts": self.attempts, "end": self.final.end}

    def digest(self) -> str:
        """sha256 of the episode's row: equal digests mean the same episode, byte for byte. The simulation
        counts are left out: they are a measurement (a worker that met a layout before reuses its simulations),
        never a result."""
        row = {k: v for k, v in self.to_row().items() if k != "sims"}
        text = json.dumps(row, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def outcome_balls(o: Outcome, game: str, group: str | None) -> int:
    """Balls one attempt adds to an episode's count: on a clean attempt, a run-out's own balls (and the 8 when it
    wins), any ball in nine-ball; none on any other attempt."""
    if not o.clean:
        return 0
    if game != "runout":
        return len(o.potted)
    return sum(1 for b in o.potted if group_of(b) == group or (b == EIGHT and o.end == "won"))


@dataclass(frozen=True)
class Verdict:
    """A rule set's reading of one simulated attempt: the table it leaves and whether the episode ends."""

    balls: tuple[BallPos, ...]  # the next table: pocketed balls gone, the rest where the simulation left them
    result: ShotResult  # with the balls' real ids
    potted: tuple[str, ...]
    scratch: bool
    foul_reasons: tuple[str, ...]
    clean: bool
    success: bool = False
    end: str = ""
    respotted: bool = False
    message: str = ""


@dataclass(frozen=True)
class Move:
    action: Strike | Shot
    result: ShotResult | None = None  # the rule set's simulation of this action from this state, when run
    sims: int = 0  # simulations run deciding
    how: str = ""
