from collections import Counter

import numpy as np
import pytest

from poolbench_data.boards import categories as cat
from poolbench_data.core.records import CATEGORIES, SOLIDS
from poolbench_data.boards.generate import PAPER_COUNTS, category_sequence, generate, generate_scenario, scenario_seed
from poolbench_data.core.validation import validate_positions


def test_paper_counts_at_fifty_and_proportional_beyond():
    assert Counter(category_sequence(50)) == PAPER_COUNTS
    assert Counter(category_sequence(100)) == {c: 2 * n for c, n in PAPER_COUNTS.items()}
    for n in (7, 333, 100_000):
        counts = Counter(category_sequence(n))
        for c in CATEGORIES:
            assert abs(counts[c] - n * PAPER_COUNTS[c] / 50) < 1.0, (n, c)


def test_sequence_is_prefix_stable():
    assert category_sequence(1000)[:50] == category_sequence(50)


def test_same_seed_same_scenarios_and_prefix_stable(benchmark_scenarios):
    again = generate(10)
    assert again == benchmark_scenarios[:10]
    assert generate(3, start=7) == benchmark_scenarios[7:10]
    other = generate(10, base_seed=1)
    assert not set(s.id for s in other) & set(s.id for s in again)
    assert all(a.balls != b.balls for a, b in zip(other, again))


def test_scenario_is_a_pure_function_of_its_recorded_seed(benchmark_scenarios):
    s = benchmark_scenarios[11]
    assert s.seed == scenario_seed(0, 11)
    assert generate_scenario(s.category, s.seed, s.id) == s


def test_every_benchmark_scenario_is_valid_and_has_its_property(benchmark_scenarios):
    for s in benchmark_scenarios:
        validate_positions({b.id: (b.x, b.y) for b in s.balls})
        assert cat.has_property(s), s.id
        assert s.own(), s.id
        assert "8" in {b.id for b in s.balls}


@pytest.mark.parametrize("category", CATEGORIES)
def test_each_category_property_on_a_fresh_seed(category):
    for k in range(3):
        s = generate_scenario(category, 1000 + k, f"x{k}")
        assert cat.CHECKS[category](s)


def test_category_checks_reject_counterexamples(board):
    # Lone own ball in open play: one clean line is not "multiple".
    lonely = board({"cue": (0.5, 0.3), "1": (0.5, 1.0), "9": (0.9, 0.4)})
    assert not cat.is_open(lonely)
    assert not cat.is_indirect(lonely)
    hidden = board({"cue": (0.5, 0.3), "9": (0.5, 0.7), "1": (0.5, 1.2)}, category="indirect")
    assert cat.is_indirect(hidden)
    assert not cat.is_crowded(lonely)
    assert cat.is_sparse(lonely)
    near = board({"cue": (0.5, 0.3), "1": (0.5, 0.5), "9": (0.5, 0.6)})
    assert not cat.is_sparse(near)
    assert cat.is_foul_trap(hidden) and not cat.is_foul_trap(lonely)
    assert not cat.is_spin_shot(lonely)
    rail = board({"cue": (0.0286 + 0.003, 1.3), "1": (0.5, 1.0)})
    assert cat.is_spin_shot(rail)


def test_crowded_disc_count_is_exact():
    # Eight points on a circle of radius 0.399 fit one disc; one more far away does not count.
    ang = np.linspace(0, 2 * np.pi, 8, endpoint=False)
    pts = np.c_[0.5 + 0.399 * np.cos(ang), 1.0 + 0.399 * np.sin(ang)]
    assert cat.max_disc_count(pts, 0.4) == 8
    assert cat.max_disc_count(np.r_[pts, [[0.5, 2.0]]], 0.4) == 8
    assert cat.max_disc_count(pts, 0.3) < 8


def test_partial_block_mixes_clear_and_blocked_own_balls(benchmark_scenarios):
    for s in benchmark_scenarios:
        if s.category == "partial-block":
            clean = cat.clean_own_balls(s)
            own = {b.id for b in s.own()}
            assert clean and own - clean and own <= set(SOLIDS)


def test_bad_generation_arguments():
    with pytest.raises(ValueError, match="unknown category"):
        generate_scenario("trick", 1, "x")
    with pytest.raises(ValueError, match="must be >= 0"):
        generate(-1)
