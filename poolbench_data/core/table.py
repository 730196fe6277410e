"""The paper's table, and every number derived from pooltool's table object.

Nothing here is retyped: pocket centres and radii, cushion segments and the
ball radius are read from the simulator objects once and frozen.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

# The paper's prompt: "width=1.0668m, length=2.1336m" (a 7-foot pocket table).
TABLE_WIDTH = 1.0668
TABLE_LENGTH = 2.1336
POCKET_IDS = ("lb", "lc", "lt", "rb", "rc", "rt")


@dataclass(frozen=True)
class Pocket:
    id: str
    x: float
    y: float
    radius: float


@dataclass(frozen=True)
class Geometry:
    """Frozen geometry of the pooltool table used for every simulation."""

    width: float
    length: float
    ball_radius: float
    pockets: tuple[Pocket, ...]
    # Cushion segments as plain tuples, for overlap checks without pooltool.
    linear_cushions: tuple[tuple[str, float, float, float, float], ...]  # id, x1, y1, x2, y2
    circular_cushions: tuple[tuple[str, float, float, float], ...]  # id, x, y, radius

    @property
    def ball_diameter(self) -> float:
        return 2 * self.ball_radius

    def pocket(self, pocket_id: str) -> Pocket:
        for p in self.pockets:
            if p.id == pocket_id:
                return p
        raise KeyError(f"unknown pocket {pocket_id!r}; pockets are {', '.join(POCKET_IDS)}")

    def to_row(self) -> dict:
        return {
            "width": self.width,
            "length": self.length,
            "ball_radius": self.ball_radius,
            "pockets": [{"id": p.id, "x": p.x, "y": p.y, "radius": p.radius} for p in self.pockets],
        }


@functools.cache
def pooltool_table():
    """The pooltool Table object (pocketed: ball_pocket events fire)."""
    import pooltool as pt
    from pooltool.objects.table.specs import PocketTableSpecs

    return pt.Table.from_table_specs(PocketTableSpecs(l=TABLE_LENGTH, w=TABLE_WIDTH))


@functools.cache
def geometry() -> Geometry:
    return geometry_of(pooltool_table())


def geometry_of(table) -> Geometry:
    """The frozen geometry of a pooltool Table (the benchmark's: `geometry()`; a game may play on another)."""
    from pooltool.objects.ball.params import BallParams

    pockets = tuple(
        Pocket(pid, float(table.pockets[pid].center[0]), float(table.pockets[pid].center[1]),
               float(table.pockets[pid].radius))
        for pid in POCKET_IDS
    )
    segs = table.cushion_segments
    linear = tuple(
        (str(k), float(s.p1[0]), float(s.p1[1]), float(s.p2[0]), float(s.p2[1]))
        for k, s in sorted(segs.linear.items(), key=lambda kv: str(kv[0]))
    )
    circular = tuple(
        (str(k), float(s.center[0]), float(s.center[1]), float(s.radius))
        for k, s in sorted(segs.circular.items(), key=lambda kv: str(kv[0]))
    )
    return Geometry(
        width=float(table.w),
        length=float(table.l),
        ball_radius=float(BallParams.default().R),
        pockets=pockets,
        linear_cushions=linear,
        circular_cushions=circular,
    )
