"""The paper's three baselines (section 3.4) as pure functions of a scenario.

Oracle:      ghost-ball candidates + simulator micro-search.
Heuristic:   the cheapest ghost-ball candidate, no search.
Random:      uniform aim, speed and declared target.
Kick Oracle: ours, not the paper's: the Oracle, plus one-cushion kicks searched
             in the simulator where no straight shot reaches an own ball.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from poolbench_data.boards.categories import directly_hittable_own
from poolbench_data.core.candidates import candidates, speed_for
from poolbench_data.core.kicks import kick_candidates
from poolbench_data.core.records import V0_RANGE, Scenario, Shot, ShotResult
from poolbench_data.core.simcache import BoardSims

# The paper's 3x5 grid, in its order: first success wins.
ORACLE_SPEEDS = (8.0, 10.0, 12.0)
ORACLE_DPHIS = (0.0, 0.4, -0.4, 0.8, -0.8)
ORACLE_TOP_K = 8
# Kicks: a wider angle grid (cushions are not mirrors), the cheapest pot kicks, then plain contacts.
KICK_SPEEDS = (6.0, 8.0, 10.0, 12.0)
KICK_DPHIS = (0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -1.5)
KICK_POTS, KICK_CONTACTS = 6, 4


@dataclass(frozen=True)
class Decision:
    shot: Shot
    sims: int = 0  # simulations run deciding
    how: str = ""  # pot | contact-fallback | geometric-fallback | geometric | random | no-candidate
    result: ShotResult | None = None  # the chosen shot's simulation, when deciding ran it


def _search(sims: BoardSims, shots) -> tuple[bool, Shot, ShotResult | None] | None:
    """The first shot that pots an own ball legally, as (True, shot, result);
    else the first legal contact without a foul, as (False, ...); else None.
    Shots geometry proves to hit a wrong ball first are not simulated."""
    contact = None
    for shot in shots:
        if not sims.worth(shot):
            continue
        result, m = sims.outcome(shot)
        if m.clean_pot:
            return True, shot, result
        if contact is None and m.legal_contact and not m.foul:
            contact = (False, shot, result)
    return contact


def oracle(scenario: Scenario, aim: str = "potting-point", top_k: int = ORACLE_TOP_K,
           sims: BoardSims | None = None) -> Decision:
    """First grid shot that pots an own ball LEGALLY (the paper's wording also
    accepts a foul pot; we do not). Falls back to the first legal contact
    without foul, then to the best geometric candidate."""
    cands = candidates(scenario, aim)[:top_k]
    if not cands:
        return _no_candidate(scenario)
    sims = sims if sims is not None else BoardSims(scenario)
    before = sims.run
    found = _search(sims, (c.shot(V0, dphi) for c in cands for V0 in ORACLE_SPEEDS for dphi in ORACLE_DPHIS))
    if found is not None:
        pot, shot, result = found
        return Decision(shot, sims.run - before, "pot" if pot else "contact-fallback", result)
    return Decision(cands[0].shot(speed_for(cands[0])), sims.run - before, "geometric-fallback")


def oracle_kick(scenario: Scenario, sims: BoardSims | None = None) -> Decision:
    """The paper's Oracle where a straight shot reaches an own ball; elsewhere
    the first one-cushion kick that pots legally, else the first that makes
    legal contact without a foul, else the Oracle's fallback."""
    if directly_hittable_own(scenario):
        return oracle(scenario, sims=sims)
    sims = sims if sims is not None else BoardSims(scenario)
    before = sims.run
    kicks = kick_candidates(scenario)
    tried = [k for k in kicks if k.pot][:KICK_POTS] + [k for k in kicks if not k.pot][:KICK_CONTACTS]
    found = _search(sims, (k.shot(V0, dphi) for k in tried for V0 in KICK_SPEEDS for dphi in KICK_DPHIS))
    if found is not None:
        pot, shot, result = found
        return Decision(shot, sims.run - before, "kick-pot" if pot else "kick-contact", result)
    d = oracle(scenario, sims=sims)
    return Decision(d.shot, sims.run - before, d.how, d.result)


def heuristic(scenario: Scenario, aim: str = "potting-point") -> Decision:
    cands = candidates(scenario, aim)
    if not cands:
        return _no_candidate(scenario)
    return Decision(cands[0].shot(speed_for(cands[0])), 0, "geometric")


def random_player(scenario: Scenario, seed: int = 0) -> Decision:
    """Uniform phi in [0, 360), V0 in [2, 12], a random own target (logged only)."""
    rng = np.random.default_rng([seed, scenario.seed])
    own = [b.id for b in scenario.own()]
    phi = float(rng.uniform(0.0, 360.0))
    V0 = float(rng.uniform(*V0_RANGE))
    target = own[int(rng.integers(len(own)))]
    return Decision(Shot(phi=phi, V0=V0, target_ball=target), 0, "random")


def _no_candidate(scenario: Scenario) -> Decision:
    """No candidate within MAX_CUT: hit the nearest own ball full, declaring
    the pocket closest to the line it would travel (a shot must name one)."""
    from poolbench_data.core.geometry import angle_deg, cut_angle
    from poolbench_data.core.table import geometry

    c = scenario.cue
    t = scenario.nearest_own()
    pocket = min(geometry().pockets, key=lambda p: cut_angle(c.x, c.y, t.x, t.y, p.x, p.y))
    shot = Shot(angle_deg(c.x, c.y, t.x, t.y), 8.0, target_ball=t.id, target_pocket=pocket.id)
    return Decision(shot, 0, "no-candidate")
