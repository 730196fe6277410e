import pytest

from poolbench_data.report.stats import mcnemar_exact, quantile, wilson


def test_wilson_matches_the_papers_table():
    lo, hi = wilson(0, 50)
    assert (round(100 * lo, 1), round(100 * hi, 1)) == (0.0, 7.1)
    lo, hi = wilson(31, 50)
    assert (round(100 * lo, 1), round(100 * hi, 1)) == (48.2, 74.1)
    lo, hi = wilson(27, 50)
    assert (round(100 * lo, 1), round(100 * hi, 1)) == (40.4, 67.0)


def test_mcnemar_exact():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(0, 6) == pytest.approx(2 / 64)
    assert mcnemar_exact(5, 5) == 1.0


def test_quantile():
    assert quantile([1, 2, 3, 4], 0.5) == 2.5
    assert quantile([5], 0.9) == 5
