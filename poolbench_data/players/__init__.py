"""Baseline players. Each maps a Scenario to a Decision (a Shot + its cost)."""

from __future__ import annotations

from collections.abc import Callable

from poolbench_data.players.baselines import Decision, heuristic, oracle, random_player

# name -> (kind, decide). The paper's Heuristic aims at the pocket centre; the
# potting-point variants aim between the jaws (see docs/metrics.md).
BASELINES: dict[str, tuple[str, Callable]] = {
    "oracle": ("oracle", lambda s: oracle(s, "potting-point")),
    "oracle-centre": ("oracle", lambda s: oracle(s, "centre")),
    "heuristic-centre": ("heuristic", lambda s: heuristic(s, "centre")),
    "heuristic": ("heuristic", lambda s: heuristic(s, "potting-point")),
    "random": ("random", lambda s: random_player(s, seed=0)),
}
DEFAULT_BASELINES = ("oracle", "heuristic-centre", "heuristic", "random")

__all__ = ["BASELINES", "DEFAULT_BASELINES", "Decision", "heuristic", "oracle", "random_player"]
