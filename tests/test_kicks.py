"""The kick Oracle: one-cushion kicks where no straight shot reaches an own ball."""

from __future__ import annotations

import math

import pytest

from poolbench_data.boards.categories import directly_hittable_own
from poolbench_data.core.kicks import kick_candidates
from poolbench_data.core.physics import simulate
from poolbench_data.core.scoring import score
from poolbench_data.core.table import geometry
from poolbench_data.players.baselines import oracle, oracle_kick


@pytest.mark.slow
def test_kicks_reach_the_indirect_boards(benchmark_scenarios):
    indirect = [s for s in benchmark_scenarios if not directly_hittable_own(s)]
    assert len(indirect) == 8
    metrics = [score(simulate(s, oracle_kick(s).shot)) for s in indirect]
    contact = sum(m.legal_contact for m in metrics)
    pots = sum(m.clean_pot for m in metrics)
    assert contact >= 6 and pots >= 2, (contact, pots)  # the paper's Oracle: 0/8 and 0/8
    assert sum(score(simulate(s, oracle(s).shot)).legal_contact for s in indirect) == 0


def test_where_a_straight_shot_exists_it_is_the_papers_oracle(benchmark_scenarios):
    for s in [s for s in benchmark_scenarios if directly_hittable_own(s)][:4]:
        assert oracle_kick(s).shot == oracle(s).shot


def test_a_kick_aims_at_the_target_mirrored_in_the_rail(board):
    # The 9 blocks the straight line; the left rail's mirror image of the 1 is a clear kick.
    s = board({"cue": (0.3, 0.5), "1": (0.3, 1.9), "9": (0.3, 1.2), "10": (0.24, 1.2), "11": (0.36, 1.2)})
    R = geometry().ball_radius
    kicks = [k for k in kick_candidates(s) if not k.pot and k.rail == "left"]
    assert kicks
    expected = math.degrees(math.atan2(1.9 - 0.5, (2 * R - 0.3) - 0.3)) % 360
    assert abs(kicks[0].phi - expected) < 1e-9
    assert all(k.ball == "1" for k in kick_candidates(s))
