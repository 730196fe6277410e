"""Frozen record types, one per concept, with explicit row conversion.

Scenario  - a board: cue ball, object balls, category, seed.
Shot      - an action: phi, V0, a, b, theta (+ the declared target).
Event     - one simulator event (time, type, agent ids).
ShotResult- what pooltool did with a shot on a scenario.
Metrics   - the paper's four binary metrics (+ foul reasons).
"""

from __future__ import annotations

import json
import math
import operator
from dataclasses import dataclass, field

from poolbench_data.core.validation import coordinates, playable_problem, show, validate_positions
from poolbench_data.core.vocab import (  # noqa: F401 - re-exported: records and their vocabulary
    CUE,
    SOLIDS,
    STRIPES,
    EIGHT,
    OBJECT_BALLS,
    CANONICAL_ORDER,
    CATEGORIES,
    PLAYER_GROUP,
    PHI_RANGE,
    V0_RANGE,
    SPIN_RANGE,
    THETA_RANGE,
    DEFAULT_B,
    MAX_SEED,
    group_of,
    InvalidScenario,
    InvalidShot,
)


@dataclass(frozen=True)
class BallPos:
    id: str
    x: float
    y: float

    @property
    def group(self) -> str:
        return group_of(self.id)


_ORDER = {b: i for i, b in enumerate(CANONICAL_ORDER)}


@dataclass(frozen=True)
class Scenario:
    """A validated board: constructing one any way (create, from_row, the
    constructor, dataclasses.replace) runs the same checks, so a layout that
    pooltool would simulate as nonsense cannot exist."""

    id: str
    category: str
    seed: int
    balls: tuple[BallPos, ...]  # canonical order, cue first

    def __post_init__(self):
        if not isinstance(self.id, str):
            raise InvalidScenario(f"scenario 'id' must be a string such as 'pb0-000001', got {show(self.id)}")
        where = f"scenario {self.id!r}"
        if not isinstance(self.category, str) or self.category not in CATEGORIES:
            raise InvalidScenario(f"{where}: unknown category {show(self.category)}; use one of {', '.join(CATEGORIES)}")
        _check_seed(self.seed, where)
        if not isinstance(self.balls, tuple) or not all(isinstance(b, BallPos) for b in self.balls):
            raise InvalidScenario(f"{where}: 'balls' must be a tuple of BallPos, got {show(self.balls)}; "
                                  f"build scenarios with Scenario.create")
        positions: dict = {}
        for b in self.balls:
            coordinates(b.id, (b.x, b.y), where)  # an unhashable or unknown id stops here
            if b.id in positions:
                raise InvalidScenario(f"{where}: ball {b.id!r} appears twice; list each ball once")
            positions[b.id] = (b.x, b.y)
        validate_positions(positions, where)
        if [b.id for b in self.balls] != sorted(positions, key=_ORDER.__getitem__):
            raise InvalidScenario(f"{where}: balls must be in canonical order (cue, then '1'..'15'); "
                                  f"build scenarios with Scenario.create")

    @property
    def cue(self) -> BallPos:
        return self.balls[0]

    @property
    def object_balls(self) -> tuple[BallPos, ...]:
        return self.balls[1:]

    def ball(self, ball_id: str) -> BallPos:
        for b in self.balls:
            if b.id == ball_id:
                return b
        raise KeyError(f"ball {ball_id!r} is not on the table in scenario {self.id}")

    def own(self) -> tuple[BallPos, ...]:
        return tuple(b for b in self.balls if b.group == PLAYER_GROUP)

    def nearest_own(self) -> BallPos:
        """The own ball closest to the cue ball (ties: the lower number)."""
        from poolbench_data.core.geometry import nearest

        return self.ball(nearest(self.cue.x, self.cue.y, {b.id: (b.x, b.y) for b in self.own()}))

    def playable_problem(self) -> str | None:
        """Why the benchmark's players cannot play this board (no solid, no 8), or None."""
        return playable_problem((b.id for b in self.balls), f"scenario {self.id!r}")

    @staticmethod
    def create(id: str, category: str, seed: int, positions: dict[str, tuple[float, float]]) -> Scenario:
        """Build and validate a scenario from {ball id: (x, y)}."""
        where = f"scenario {show(id)}"
        if not isinstance(positions, dict):
            raise InvalidScenario(f"{where}: positions must be a dict {{ball id: (x, y)}}, got {show(positions)}")
        if CUE not in positions:
            raise InvalidScenario(f"{where}: missing cue ball; add a ball with id 'cue'")
        xy = {b: coordinates(b, p, where) for b, p in positions.items()}
        balls = tuple(BallPos(b, float(x), float(y)) for b, (x, y) in sorted(xy.items(), key=lambda kv: _ORDER[kv[0]]))
        return Scenario(id=id, category=category, seed=_seed(seed, where), balls=balls)

    def to_row(self) -> dict:
        return {
            "id": self.id,
            "category": self.category,
            "seed": self.seed,
            "cue_ball": {"x": self.cue.x, "y": self.cue.y},
            "balls": [{"id": b.id, "group": b.group, "x": b.x, "y": b.y} for b in self.object_balls],
        }

    @staticmethod
    def from_row(row: dict) -> Scenario:
        """A dataset row or JSON object; a malformed field is an InvalidScenario
        naming it, and the board must be playable (a solid and the 8)."""
        if not isinstance(row, dict):
            raise InvalidScenario(f"a scenario row must be an object with fields id, category, seed, cue_ball, "
                                  f"balls; got {show(row)}")
        for key in ("id", "category", "seed", "cue_ball", "balls"):
            if key not in row:
                raise InvalidScenario(f"scenario row is missing field {key!r}")
        where = f"scenario {show(row['id'])}"
        if row["cue_ball"] is None:
            raise InvalidScenario(f"{where}: field 'cue_ball' is empty; give the cue ball's x and y")
        positions = {CUE: _xy(row["cue_ball"], where, "field 'cue_ball'")}
        balls = row["balls"]
        if not isinstance(balls, list):
            raise InvalidScenario(f"{where}: field 'balls' must be a list of {{\"id\", \"x\", \"y\"}} objects, "
                                  f"got {show(balls)}")
        for i, b in enumerate(balls):
            if not isinstance(b, dict):
                raise InvalidScenario(f"{where}: balls[{i}] must be an object {{\"id\", \"x\", \"y\"}}, got {show(b)}")
            if "id" not in b:
                raise InvalidScenario(f"{where}: balls[{i}] is missing field 'id'")
            bid = _ball_id(b["id"], f"{where}: balls[{i}]")
            if bid in positions:
                raise InvalidScenario(f"{where}: ball {bid!r} appears twice; list each ball once")
            positions[bid] = _xy(b, where, f"ball {bid!r}")
        scenario = Scenario.create(row["id"], row["category"], row["seed"], positions)
        problem = scenario.playable_problem()
        if problem:
            raise InvalidScenario(problem)
        return scenario

    def to_json(self) -> str:
        return json.dumps(self.to_row(), sort_keys=True)

    @staticmethod
    def from_json(text: str) -> Scenario:
        try:
            row = json.loads(text)
        except RecursionError:
            raise InvalidScenario("scenario JSON is nested too deeply; give one object with id, category, seed, "
                                  "cue_ball, balls") from None
        except (ValueError, TypeError) as e:  # ValueError: bad JSON, or an integer over Python's digit limit
            raise InvalidScenario(f"scenario JSON does not parse: {show(str(e))}") from None
        if not isinstance(row, dict):
            raise InvalidScenario("scenario JSON must be an object with id, category, seed, cue_ball, balls")
        if "cue_ball" not in row:
            raise InvalidScenario(f"scenario {show(row.get('id'))}: missing cue ball; add \"cue_ball\": {{\"x\": .., \"y\": ..}}")
        return Scenario.from_row(row)


def _check_seed(seed, where: str) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise InvalidScenario(_seed_problem(seed, where))


def _seed_problem(seed, where: str) -> str:
    return f"{where}: 'seed' must be an integer in [0, 2**63 - 1], got {show(seed)}"


def _seed(seed, where: str) -> int:
    """A Python int from any integer seed (numpy's too); anything else is refused."""
    if not isinstance(seed, bool):
        try:
            return operator.index(seed)
        except TypeError:
            pass
    raise InvalidScenario(_seed_problem(seed, where))


def _ball_id(value, where: str) -> str:
    # Hand-written JSON often numbers the balls: 2 and "2" are the same ball.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str):
        return value
    raise InvalidScenario(f"{where} field 'id' must be a ball number such as \"1\", got {show(value)}")


def _xy(obj, where: str, what: str) -> tuple:
    if not isinstance(obj, dict):
        raise InvalidScenario(f"{where}: {what} must be an object {{\"x\": .., \"y\": ..}}, got {show(obj)}")
    for key in ("x", "y"):
        if key not in obj:
            raise InvalidScenario(f"{where}: {what} is missing field {key!r}")
    return obj["x"], obj["y"]


@dataclass(frozen=True)
class Shot:
    phi: float  # degrees, 0 = +x, 90 = +y
    V0: float  # m/s
    a: float = 0.0
    b: float = DEFAULT_B
    theta: float = 0.0
    target_ball: str | None = None  # declared intent, logged for diagnostics
    target_pocket: str | None = None

    def validated(self) -> Shot:
        """Return the shot with phi in [0, 360); raise InvalidShot otherwise.

        Wrapping phi is not clamping: it is the same direction.
        """
        for name, lo, hi in (("phi", *PHI_RANGE), ("V0", *V0_RANGE), ("a", *SPIN_RANGE),
                             ("b", *SPIN_RANGE), ("theta", *THETA_RANGE)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise InvalidShot("non-numeric", f"shot field {name}={show(v)} is not a number")
            try:
                finite = math.isfinite(v)
            except OverflowError:  # an int beyond any float is finite, just far out of range
                finite = True
            if not finite:
                raise InvalidShot("non-finite", f"shot field {name}={v!r} is not finite; give a real number in [{lo}, {hi}]")
            if not lo <= v <= hi:
                raise InvalidShot("out-of-range", f"shot field {name}={show(v)} is outside [{lo}, {hi}]")
        phi = float(self.phi) % 360.0
        return Shot(phi, float(self.V0), float(self.a), float(self.b), float(self.theta),
                    self.target_ball, self.target_pocket)

    def to_row(self) -> dict:
        return {"phi": self.phi, "V0": self.V0, "a": self.a, "b": self.b, "theta": self.theta,
                "target_ball": self.target_ball, "target_pocket": self.target_pocket}

    @staticmethod
    def from_row(row: dict) -> Shot:
        return Shot(row["phi"], row["V0"], row.get("a", 0.0), row.get("b", DEFAULT_B), row.get("theta", 0.0),
                    row.get("target_ball"), row.get("target_pocket"))


@dataclass(frozen=True)
class Event:
    time: float
    type: str  # pooltool EventType value, e.g. "ball_ball"
    ids: tuple[str, ...]

    def to_row(self) -> dict:
        return {"time": self.time, "type": self.type, "ids": list(self.ids)}


SIM_STATUSES = ("ok", "event-limit", "timeout", "error")
STOPPED_EARLY = ("event-limit", "timeout")  # fired, but scored from where the balls were when the simulation stopped
NOT_FIRED = "not-fired"  # the foul reason of an action that was never simulated


@dataclass(frozen=True)
class ShotResult:
    status: str  # one of SIM_STATUSES
    events: tuple[Event, ...]
    first_contact: str | None  # first ball the cue ball touched
    cushion_contacts: tuple[tuple[str, str], ...]  # (ball, cushion segment id), in order
    pocketed: tuple[tuple[str, str], ...]  # (ball, pocket id), in order
    final_positions: tuple[tuple[str, float, float], ...]  # balls left on the table
    message: str = ""

    def pocketed_ids(self) -> tuple[str, ...]:
        return tuple(b for b, _ in self.pocketed)

    @property
    def stopped_early(self) -> bool:
        """Stopped before the balls came to rest: an outcome of where they happened to be, not of the shot."""
        return self.status in STOPPED_EARLY

    def event_text(self) -> str:
        return event_text(self.events)


_CUSHION = ("ball_linear_cushion", "ball_circular_cushion")


def event_text(events: tuple[Event, ...]) -> str:
    """CueTip-style trace (section 3.1): ball-ball-cue-3, ball-cushion-3, ball-pocket-3-rt."""
    parts = []
    for e in events:
        if e.type == "ball_ball":
            parts.append(f"ball-ball-{e.ids[0]}-{e.ids[1]}")
        elif e.type in _CUSHION:
            parts.append(f"ball-cushion-{e.ids[0]}")
        elif e.type == "ball_pocket":
            parts.append(f"ball-pocket-{e.ids[0]}-{e.ids[1]}")
    return ", ".join(parts)


@dataclass(frozen=True)
class Metrics:
    legal_contact: bool
    own_potted: bool
    foul: bool
    opp_or_8_potted: bool
    foul_reasons: tuple[str, ...] = field(default=())

    @property
    def clean_pot(self) -> bool:
        """Own ball potted with no foul (the paper's 'potted' counts foul pots)."""
        return self.own_potted and not self.foul

    @property
    def fired(self) -> bool:
        """The shot reached the simulator (see scoring.score_not_fired)."""
        return NOT_FIRED not in self.foul_reasons

    def to_row(self) -> dict:
        return {"legal_contact": self.legal_contact, "own_potted": self.own_potted, "foul": self.foul,
                "opp_or_8_potted": self.opp_or_8_potted, "clean_pot": self.clean_pot,
                "foul_reasons": list(self.foul_reasons)}

    @staticmethod
    def from_row(row: dict) -> Metrics:
        return Metrics(bool(row["legal_contact"]), bool(row["own_potted"]), bool(row["foul"]),
                       bool(row["opp_or_8_potted"]), tuple(row.get("foul_reasons") or ()))
