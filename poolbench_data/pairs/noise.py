"""Physics labels that survive a little execution noise.

One simulated outcome is a noisy label: the first open shot of the listed procedure, written with the tool's aim,
pots cleanly at some of 8, 10 and 12 m/s and not at others on many boards, most misses being pots that scratch
(docs/results.md#what-the-tool-lets-a-player-reach).
Two samples of a board that differ only there are ranked by chance, and DPO on such pairs learns nothing a model
can read off the tool's answer. `robust_score` is the physics level (`core.scoring.physics_score`) averaged over
the action replayed on a small grid around it, aim +-AIM_JITTER degrees and speed +-SPEED_JITTER m/s: a pair
whose chosen side is better on average, not once, says something about the choice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from poolbench_data.core.records import Scenario, Shot
from poolbench_data.core.scoring import physics_score
from poolbench_data.core.vocab import V0_RANGE
from poolbench_data.players.play import play_shot

AIM_JITTER = 0.1  # degrees: ~2 mm at the object ball a metre away, well inside a pot's tolerance
SPEED_JITTER = 0.5  # m/s: the speeds the model writes are whole numbers, 8, 10, 12
MIN_MARGIN = 0.25  # levels: a pair's robust scores must differ by at least this (a quarter of a level)


def jittered(shot: Shot) -> list[Shot]:
    """The 9 shots of the grid around `shot`: its aim +-AIM_JITTER x its speed +-SPEED_JITTER (kept in range)."""
    speeds = sorted({min(max(shot.V0 + d, V0_RANGE[0]), V0_RANGE[1]) for d in (-SPEED_JITTER, 0.0, SPEED_JITTER)})
    return [replace(shot, phi=(shot.phi + d) % 360.0, V0=v) for d in (-AIM_JITTER, 0.0, AIM_JITTER) for v in speeds]


def robust_score(scenario: Scenario, trace: Mapping) -> float | None:
    """The mean physics level of a trace row's action over `jittered`; 0 for an action that never fired; None where
    a shot of the grid stopped early (a pair ranked by it is skipped)."""
    action = trace.get("action")
    if not action:
        return 0.0
    records = [play_shot(scenario, s, player="robust", kind="llm") for s in jittered(Shot.from_row(action))]
    # A stopped shot is scored from where the balls happened to be: averaged in, it would rank the pair by chance.
    if any(r.stopped_early for r in records):
        return None
    return sum(physics_score(r.metrics) for r in records) / len(records)
