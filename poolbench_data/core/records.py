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
from dataclasses import dataclass, field

from poolbench_data.core.validation import validate_positions
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


@dataclass(frozen=True)
class Scenario:
    id: str
    category: str
    seed: int
    balls: tuple[BallPos, ...]  # canonical order, cue first

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

    @staticmethod
    def create(id: str, category: str, seed: int, positions: dict[str, tuple[float, float]]) -> Scenario:
        """Build and validate a scenario from {ball id: (x, y)}."""
        validate_positions(positions, where=f"scenario {id!r}")
        order = {b: i for i, b in enumerate(CANONICAL_ORDER)}
        balls = tuple(
            BallPos(b, float(x), float(y)) for b, (x, y) in sorted(positions.items(), key=lambda kv: order[kv[0]])
        )
        if category not in CATEGORIES:
            raise InvalidScenario(f"scenario {id!r}: unknown category {category!r}; use one of {', '.join(CATEGORIES)}")
        return Scenario(id=id, category=category, seed=int(seed), balls=balls)

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
        for key in ("id", "category", "seed", "cue_ball", "balls"):
            if key not in row:
                raise InvalidScenario(f"scenario row is missing field {key!r}")
        cue = row["cue_ball"]
        if cue is None:
            raise InvalidScenario(f"scenario {row['id']!r}: field 'cue_ball' is empty; give the cue ball's x and y")
        positions: dict[str, tuple[float, float]] = {CUE: (cue["x"], cue["y"])}
        for b in row["balls"]:
            if b["id"] in positions:
                raise InvalidScenario(f"scenario {row['id']!r}: ball {b['id']!r} appears twice; list each ball once")
            positions[str(b["id"])] = (b["x"], b["y"])
        return Scenario.create(row["id"], row["category"], row["seed"], positions)

    def to_json(self) -> str:
        return json.dumps(self.to_row(), sort_keys=True)

    @staticmethod
    def from_json(text: str) -> Scenario:
        try:
            row = json.loads(text)
        except json.JSONDecodeError as e:
            raise InvalidScenario(f"scenario JSON does not parse: {e}") from None
        if not isinstance(row, dict):
            raise InvalidScenario("scenario JSON must be an object with id, category, seed, cue_ball, balls")
        if "cue_ball" not in row:
            raise InvalidScenario(f"scenario {row.get('id')!r}: missing cue ball; add \"cue_ball\": {{\"x\": .., \"y\": ..}}")
        return Scenario.from_row(row)


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
                raise InvalidShot("non-numeric", f"shot field {name}={v!r} is not a number")
            if not math.isfinite(v):
                raise InvalidShot("non-finite", f"shot field {name}={v!r} is not finite; give a real number in [{lo}, {hi}]")
            if not lo <= v <= hi:
                raise InvalidShot("out-of-range", f"shot field {name}={v!r} is outside [{lo}, {hi}]")
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
