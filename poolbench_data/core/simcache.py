"""The simulation floor: one board's simulations, each run at most once, and
none that geometry already proves useless.

A search (the Oracle's grid, the pottability search) asks `worth(shot)` before
simulating: a shot whose straight path certainly meets a ball that is not the
player's first is a wrong-first-contact foul whatever happens next, so it can
be neither a legal pot nor a legal contact. Outcomes are remembered per shot,
so a shot one search tried is not simulated again by the next. The answers
are the same as simulating everything (tests/test_sim_floor.py compares a
200-board build); only the simulation counts change.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from poolbench_data.core.physics import simulate
from poolbench_data.core.records import PLAYER_GROUP, Metrics, Scenario, Shot, ShotResult
from poolbench_data.core.scoring import score
from poolbench_data.core.table import geometry

# Metres of doubt: a path within this of grazing a ball, or of reaching a rail,
# is left to the simulator.
MARGIN = 0.002


def sure_wrong_first_contact(scenario: Scenario, shot: Shot, group: str = PLAYER_GROUP) -> bool:
    """True when the cue ball, rolling straight, certainly first touches a
    ball outside `group`, before any cushion or pocket."""
    if shot.theta != 0.0 or shot.a != 0.0:  # elevation or side spin: the path may not be straight
        return False
    g = geometry()
    D, R = g.ball_diameter, g.ball_radius
    cue = scenario.cue
    ux, uy = math.cos(math.radians(shot.phi)), math.sin(math.radians(shot.phi))
    hits = []  # (earliest possible contact distance, certain contact distance or None, ball)
    for b in scenario.object_balls:
        rx, ry = b.x - cue.x, b.y - cue.y
        along, perp = rx * ux + ry * uy, abs(rx * uy - ry * ux)
        if along <= 0.0 or perp >= D + MARGIN:
            continue
        earliest = along - math.sqrt((D + MARGIN) ** 2 - perp * perp)
        certain = along - math.sqrt(D * D - perp * perp) if perp < D - MARGIN else None
        hits.append((earliest, certain, b))
    if not hits:
        return False
    hits.sort(key=lambda h: h[0])
    _, t, first = hits[0]
    if t is None or first.group == group or any(h[0] <= t for h in hits[1:]):
        return False
    # Contact point well inside the rails: the straight path to it meets no cushion and no pocket.
    x, y = cue.x + t * ux, cue.y + t * uy
    lo = R + MARGIN
    return lo <= x <= g.width - lo and lo <= y <= g.length - lo


@dataclass
class BoardSims:
    """Simulations of one scenario, counted. `floor=False` simulates every
    shot asked for, without the floor (the benchmark's reference)."""

    scenario: Scenario
    floor: bool = True
    run: int = 0  # simulations run
    reused: int = 0  # outcomes answered from an earlier simulation
    skipped: int = 0  # shots geometry proved useless, never simulated
    # CPU seconds inside pooltool (this thread's): the build's unavoidable work,
    # against which benchmarks/bench_floor.py measures the builder's overhead.
    seconds: float = 0.0

    def __post_init__(self):
        self._metrics: dict[Shot, Metrics] = {}

    @property
    def saved(self) -> int:
        return self.reused + self.skipped

    def worth(self, shot: Shot) -> bool:
        """Could this shot contact an own ball first (so pot or contact legally)?"""
        if self.floor and sure_wrong_first_contact(self.scenario, shot):
            self.skipped += 1
            return False
        return True

    def simulate(self, shot: Shot) -> ShotResult:
        t0 = time.thread_time()
        result = simulate(self.scenario, shot)
        self.seconds += time.thread_time() - t0
        self.run += 1
        if self.floor:
            self._metrics[shot] = score(result)
        return result

    def outcome(self, shot: Shot) -> tuple[ShotResult | None, Metrics]:
        """The shot's metrics, and its full result when it was simulated now
        (None when an earlier simulation answered)."""
        known = self._metrics.get(shot) if self.floor else None
        if known is not None:
            self.reused += 1
            return None, known
        result = self.simulate(shot)
        return result, self._metrics[shot] if self.floor else score(result)
