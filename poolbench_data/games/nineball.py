"""DeepPHY's nine-ball task (its Appendix E and its published runner), on pooltool's own rack and default table.

The agent shoots until the 9 drops, at most 15 attempts; every shot is aimed at the lowest-numbered ball on the
table (pooltool's `aim.at_ball`), and the agent chooses only the speed and the strike spot. Pocketed balls leave
the table; a pocketed cue ball is put back at (table width / 2, table length / 4); any other foul costs only the
attempt. The 9 pocketed on any attempt, the break included, is a success, whatever else happened on that shot.

Racks. `pt.get_rack(pt.GameType.NINEBALL, table)` jitters every ball and draws the order of the 2-8 from
Python's and numpy's global generators. `nineball` plays one rack, drawn from RACK_SEED, in every episode, as
DeepPHY built one rack per run; `nineball-seeded` draws a rack per episode from the episode's seed, for datasets
and training. The global generators are seeded for the draw and restored after it. pooltool picks each of the
2-8 from a Python set, whose order follows string hashing and so differs between processes: those seven ids are
dealt again, to the same seven places, by a generator seeded with the rack's seed, so that a rack is the same in
every process.
"""

from __future__ import annotations

import functools
import math

from poolbench_data.boards.generate import scenario_seed
from poolbench_data.core.physics import run_system, system_of
from poolbench_data.core.records import CUE, BallPos, Shot, ShotResult
from poolbench_data.core.table import geometry
from poolbench_data.games.records import GameState, Strike, Verdict
from poolbench_data.protocol.strikespot import SPEEDS, STRIKESPOTS, StrikeParse, parse_strike

NINE = "9"
RACK_SEED = 0  # the one rack of the exact setup (DeepPHY's was one unrecorded draw)
MAX_ATTEMPTS = 15  # DeepPHY's
CUE_SPOT = (0.5, 0.25)  # fractions of (width, length): where DeepPHY's runner puts a pocketed cue ball
_DEALT = ("2", "3", "4", "5", "6", "7", "8")  # the balls pooltool places in a random order
_SPOT_GAP = 0.001  # metres of cloth left between a respotted cue ball and any other ball

# DeepPHY's 27 actions, speed-major in its order; each one's name is "Speed / Strikespot".
DISCRETE = tuple(Strike(SPEEDS[s], *STRIKESPOTS[p], name=f"{s} / {p}") for s in SPEEDS for p in STRIKESPOTS)
_BY_NAME = {s.name: s for s in DISCRETE}


def strike(speed: str, spot: str) -> Strike:
    """One of DeepPHY's 27 actions, by its speed and strike-spot names."""
    return _BY_NAME[f"{speed} / {spot}"]


def read_strike(text: str | None) -> tuple[Strike | None, StrikeParse]:
    """A model's answer in DeepPHY's line format, as its action (None where the parse failed)."""
    parsed = parse_strike(text)
    return (strike(parsed.speed, parsed.spot) if parsed.ok else None), parsed


@functools.cache
def table():
    """pooltool's default table (a 7-foot pocket table), DeepPHY's."""
    import pooltool as pt

    return pt.Table.default()


@functools.cache
def rack(seed: int) -> tuple[BallPos, ...]:
    """pooltool's nine-ball rack drawn from `seed`, in canonical order (cue first); the global generators are
    left as they were."""
    import random

    import numpy as np
    import pooltool as pt

    py_state, np_state = random.getstate(), np.random.get_state()
    try:
        random.seed(seed)
        np.random.seed(int(np.random.SeedSequence(seed).generate_state(1)[0]))
        made = pt.get_rack(pt.GameType.NINEBALL, table())
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)
    xy = {bid: (float(b.state.rvw[0][0]), float(b.state.rvw[0][1])) for bid, b in made.items()}
    places = sorted((xy[b] for b in _DEALT), key=lambda p: (round(p[1], 9), round(p[0], 9)))
    dealt = np.random.default_rng(seed).permutation(len(_DEALT))
    xy.update({_DEALT[i]: place for i, place in zip(dealt, places)})
    return tuple(BallPos(b, *xy[b]) for b in (CUE, "1", *_DEALT, NINE))


def lowest(state: GameState) -> str:
    return min(state.object_ids, key=int)


def _at_ball(cue: BallPos, target: BallPos) -> float:
    import pooltool as pt

    return float(pt.aim.at_ball(cue_ball=pt.Ball.create(CUE, xy=(cue.x, cue.y)),
                                object_ball=pt.Ball.create(target.id, xy=(target.x, target.y))))


def _free(x: float, y: float, balls) -> bool:
    return all(math.hypot(x - b.x, y - b.y) >= geometry().ball_diameter + _SPOT_GAP for b in balls)


def respot(balls: tuple[BallPos, ...]) -> BallPos:
    """The cue ball put back at (w/2, l/4). Where a ball stands there (DeepPHY's runner does not say), the cue
    ball goes to the nearest free point on the table's long centre line, toward the head rail first: the
    spot's line, as a ball is spotted on a taken foot spot."""
    t = table()
    x, y0 = CUE_SPOT[0] * float(t.w), CUE_SPOT[1] * float(t.l)
    R = geometry().ball_radius
    step = R / 4
    for i in range(int(float(t.l) / step)):
        for y in (y0 - i * step, y0 + i * step):
            if R <= y <= float(t.l) - R and _free(x, y, balls):
                return BallPos(CUE, x, y)
    raise RuntimeError("no free point on the long centre line for the cue ball")  # more balls than fit


class NineBall:
    """The rule set (see the module docstring); `seeded`: a rack per episode instead of the one rack."""

    wasted_end = ""  # an unparsed answer costs the attempt, as any foul does

    def __init__(self, seeded: bool = False):
        self.seeded = seeded
        self.name = "nineball-seeded" if seeded else "nineball"

    def start(self, k: int, base_seed: int, max_attempts: int = MAX_ATTEMPTS) -> GameState:
        seed = scenario_seed(base_seed, k)
        rack_seed = seed if self.seeded else RACK_SEED
        return GameState(self.name, f"rack-{rack_seed}", rack_seed, seed, "rack", rack(rack_seed), None,
                         max_attempts)

    def aim(self, state: GameState, action: Strike) -> Shot:
        """The shot an action fires: at the lowest-numbered ball, with the action's speed and spin; InvalidShot
        where a continuous action is outside the action space."""
        if not isinstance(action, Strike):
            raise TypeError(f"a nine-ball action is a Strike (speed and spin), got {type(action).__name__}")
        target = state.ball(lowest(state))
        phi = _at_ball(state.balls[0], target)
        return Shot(phi, action.V0, action.a, action.b, 0.0, target_ball=target.id).validated()

    def simulate(self, state: GameState, shot: Shot) -> ShotResult:
        return run_system(system_of(state.balls, shot, table()))

    def judge(self, state: GameState, shot: Shot, result: ShotResult) -> Verdict:
        pocketed = result.pocketed_ids()
        potted = tuple(b for b in pocketed if b != CUE)
        scratch = CUE in pocketed
        first = result.first_contact
        reasons = (("scratch",) if scratch else ()) + (
            ("no-contact",) if first is None else ("wrong-first-contact",) if first != shot.target_ball else ())
        balls = tuple(BallPos(b, x, y) for b, x, y in result.final_positions)
        if scratch:
            balls = (respot(balls),) + balls
        success = NINE in potted
        end = "nine-potted" if success else (f"simulator-{result.status}" if result.status != "ok" else "")
        return Verdict(balls, result, potted, scratch, reasons, bool(potted) and not reasons, success, end,
                       respotted=scratch, message=result.message)
