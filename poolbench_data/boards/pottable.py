"""Is a board straight-pottable: does some straight cue-ball shot (no cushion
before first contact) pot an own ball legally? (players.play.label adds the
third label, `kick`: a one-cushion kick pots where no straight shot can.)

The indirect category makes the paper's "Oracle pots 100%" impossible by
construction, so every scenario is labelled, by a search wider than the
Oracle's grid, and the Oracle is judged on the pottable ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from poolbench_data.boards.categories import directly_hittable_own
from poolbench_data.core.candidates import candidates
from poolbench_data.core.records import Scenario, Shot
from poolbench_data.core.simcache import BoardSims

WIDE_SPEEDS = (4.0, 6.0, 8.0, 10.0, 12.0)
WIDE_DPHIS = tuple(float(x) for x in np.round(np.arange(-2.0, 2.0001, 0.2), 1))


@dataclass(frozen=True)
class Pottability:
    pottable: bool
    how: str  # no-direct-own-ball | oracle | wide-search | not-found
    sims: int  # simulations run labelling
    shot: Shot | None = None
    kind: str = ""  # straight | kick | none (POTTABILITY_KINDS); "" until labelled

    def __post_init__(self):
        if not self.kind:
            object.__setattr__(self, "kind", "straight" if self.pottable else "none")


POTTABILITY_KINDS = ("straight", "kick", "none")


def straight_pottable(scenario: Scenario, oracle_shot: Shot | None = None, sims: BoardSims | None = None) -> Pottability:
    """Cheapest proof first: geometry (no own ball can be hit first), then the
    Oracle's own legal pot, then the wide search (both aims, every candidate,
    5 speeds x 21 angle offsets in 0.2 deg steps over +-2 deg). With the
    board's BoardSims, shots the Oracle already tried are not simulated again."""
    if not directly_hittable_own(scenario):
        return Pottability(False, "no-direct-own-ball", 0)
    sims = sims if sims is not None else BoardSims(scenario)
    before = sims.run
    if oracle_shot is not None and sims.outcome(oracle_shot)[1].clean_pot:
        return Pottability(True, "oracle", sims.run - before, oracle_shot)
    for aim in ("potting-point", "centre"):
        for c in candidates(scenario, aim):
            for V0 in WIDE_SPEEDS:
                for dphi in WIDE_DPHIS:
                    shot = c.shot(V0, dphi)
                    if sims.worth(shot) and sims.outcome(shot)[1].clean_pot:
                        return Pottability(True, "wide-search", sims.run - before, shot)
    return Pottability(False, "not-found", sims.run - before)
