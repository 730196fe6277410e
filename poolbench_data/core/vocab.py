"""The benchmark's vocabulary: ball ids and groups, categories, the action
space, and the two errors every input check raises."""

from __future__ import annotations

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
MAX_SEED = 2**63 - 1  # seeds are stored in int64 dataset columns


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
