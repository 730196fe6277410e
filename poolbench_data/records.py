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

CUE = "cue"
SOLIDS = tuple(str(i) for i in range(1, 8))
STRIPES = tuple(str(i) for i in range(9, 16))
EIGHT = "8"
OBJECT_BALLS = tuple(str(i) for i in range(1, 16))
# Canonical insertion order: pooltool is bitwise deterministic only for a fixed
# order of balls in the System's dict.
CANONICAL_ORDER = (CUE,) + OBJECT_BALLS
CATEGORIES = ("open", "partial-block", "indirect", "crowded", "sparse", "foul-trap", "spin-shot")
PLAYER_GROUP = "solids"  # the paper: the player always has solids 1-7

# The paper's action space (section 3.1). a, b are tip offsets in ball radii;
# beyond 0.5 pooltool's cue model leaves the physical contact region.
PHI_RANGE = (-360.0, 360.0)
V0_RANGE = (2.0, 12.0)
SPIN_RANGE = (-0.5, 0.5)
THETA_RANGE = (0.0, 60.0)
DEFAULT_B = 0.25  # the paper's small top spin for every player


def group_of(ball_id: str) -> str:
    if ball_id == CUE:
        return "cue"
    if ball_id == EIGHT:
        return "eight"
    if ball_id in SOLIDS:
        return "solids"
    if ball_id in STRIPES:
        return "stripes"
    raise ValueError(f"unknown ball id {ball_id!r}: use 'cue' or '1'..'15'")


class InvalidScenario(ValueError):
    """A scenario that cannot be simulated; the message names ball and fix."""


class InvalidShot(ValueError):
    """A shot outside the action space; `reason` is a short machine tag."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


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

    @staticmethod
    def create(id: str, category: str, seed: int, positions: dict[str, tuple[float, float]]) -> Scenario:
        """Build and validate a scenario from {ball id: (x, y)}."""
        from poolbench_data.validation import validate_positions

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

    def to_row(self) -> dict:
        return {"legal_contact": self.legal_contact, "own_potted": self.own_potted, "foul": self.foul,
                "opp_or_8_potted": self.opp_or_8_potted, "clean_pot": self.clean_pot,
                "foul_reasons": list(self.foul_reasons)}
