"""A PoolBench eight-ball visit: from a benchmark board, the player shoots while each shot pots an own ball
cleanly (core.scoring's clean pot: an own ball potted, the first contact an own ball, no foul).

The visit ends on the first shot that does not: a foul, a miss, or only opponent balls potted. The 8-ball is the
player's ball once its group is cleared, and potting it cleanly then wins; the 8 potted while an own ball was on
the table before the shot is a loss. Opponent balls potted on a clean shot stay down. A shot the simulator
stopped early ends the visit (the balls were still moving), and so does a resting layout the benchmark cannot
simulate again (a ball left in a pocket's jaw, two balls pressed together): both are recorded, never raised.

Once the group is cleared the 8 is simulated, scored and searched under the id of a solid (EIGHT_AS): pooltool's
balls are identical, so this changes no physics, and the benchmark's scoring and players, which know the
player's group as the solids, apply unchanged. Outcomes carry the real ids.
"""

from __future__ import annotations

from dataclasses import replace

from poolbench_data.boards.generate import generate_scenario, iter_specs
from poolbench_data.core.physics import simulate
from poolbench_data.core.records import (
    CANONICAL_ORDER,
    CUE,
    EIGHT,
    PLAYER_GROUP,
    BallPos,
    Event,
    InvalidScenario,
    Scenario,
    Shot,
    ShotResult,
    group_of,
)
from poolbench_data.core.scoring import score
from poolbench_data.games.records import GameState, Verdict

EIGHT_AS = "1"  # a solid's id, free once the group is cleared
MAX_ATTEMPTS = 15  # never reached on a PoolBench board (7 solids and the 8), so a visit ends by the rules
_ORDER = {b: i for i, b in enumerate(CANONICAL_ORDER)}


def _renamed(result: ShotResult, ids: dict[str, str]) -> ShotResult:
    def r(b):
        return ids.get(b, b)

    final = sorted(((r(b), x, y) for b, x, y in result.final_positions), key=lambda f: _ORDER[f[0]])
    return ShotResult(result.status, tuple(Event(e.time, e.type, tuple(map(r, e.ids))) for e in result.events),
                      r(result.first_contact) if result.first_contact else None,
                      tuple((r(b), c) for b, c in result.cushion_contacts),
                      tuple((r(b), p) for b, p in result.pocketed), tuple(final), result.message)


class Runout:
    name = "runout"
    wasted_end = "foul"  # an unparsed answer is a foul (the paper's rule), which ends a visit

    def start(self, k: int, base_seed: int, max_attempts: int = MAX_ATTEMPTS) -> GameState:
        """Board k of base seed `base_seed` (the benchmark's boards at seed 0)."""
        return self.from_scenario(generate_scenario(*next(iter_specs(1, base_seed, k))), max_attempts)

    def from_scenario(self, scenario: Scenario, max_attempts: int = MAX_ATTEMPTS) -> GameState:
        problem = scenario.playable_problem()
        if problem:
            raise InvalidScenario(problem)
        return GameState(self.name, scenario.id, scenario.seed, scenario.seed, scenario.category, scenario.balls,
                         PLAYER_GROUP, max_attempts)

    @staticmethod
    def on_eight(state: GameState) -> bool:
        """The group is cleared: the 8 is the player's ball."""
        return not any(group_of(b) == state.group for b in state.object_ids)

    def scenario(self, state: GameState) -> Scenario:
        """The table as a benchmark board (its prompt and table text are the protocol's)."""
        return Scenario(state.start, state.category, state.start_seed, state.balls)

    def view(self, state: GameState) -> Scenario:
        """The board players search and the simulator plays: the table, with the 8 as EIGHT_AS once the group
        is cleared."""
        if not self.on_eight(state):
            return self.scenario(state)
        xy = {(EIGHT_AS if b.id == EIGHT else b.id): (b.x, b.y) for b in state.balls}
        return Scenario.create(state.start, state.category, state.start_seed, xy)

    def real_shot(self, state: GameState, shot: Shot) -> Shot:
        """A shot decided on the view, with its declared target named as on the table."""
        if self.on_eight(state) and shot.target_ball == EIGHT_AS:
            return replace(shot, target_ball=EIGHT)
        return shot

    def aim(self, state: GameState, action: Shot) -> Shot:
        if not isinstance(action, Shot):
            raise TypeError(f"a run-out action is a Shot (the protocol's JSON action), got {type(action).__name__}")
        return action.validated()

    def simulate(self, state: GameState, shot: Shot) -> ShotResult:
        """The shot on the view: what a searching player simulated is what is played."""
        return simulate(self.view(state), shot)

    def judge(self, state: GameState, shot: Shot, result: ShotResult) -> Verdict:
        eight_phase = self.on_eight(state)
        m = score(result, state.group)  # on the view: a clean pot of EIGHT_AS is the 8 potted cleanly
        real = _renamed(result, {EIGHT_AS: EIGHT}) if eight_phase else result
        pocketed = real.pocketed_ids()
        potted = tuple(b for b in pocketed if b != CUE)
        balls = tuple(BallPos(b, x, y) for b, x, y in real.final_positions)
        won = eight_phase and m.clean_pot
        if not eight_phase and EIGHT in potted:
            end = "eight-early"
        elif won:
            end = "won"
        elif m.clean_pot:
            end = ""
        else:
            end = "foul" if m.foul else "opponent-only" if m.opp_or_8_potted else "miss"
        message = real.message
        if not end and result.status != "ok":
            end = f"simulator-{result.status}"
        elif not end:
            try:
                Scenario(state.start, state.category, state.start_seed, balls)
            except InvalidScenario as e:
                end, message = "layout", str(e)
        return Verdict(balls, real, potted, CUE in pocketed, m.foul_reasons, m.clean_pot and end != "eight-early",
                       success=won, end=end, message=message)
