"""Baseline players. Each maps a Scenario to a Decision (a Shot + its cost)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from poolbench_data.players.baselines import Decision, heuristic, oracle, oracle_kick, random_player

# name -> (kind, decide). The paper's Heuristic aims at the pocket centre; the
# potting-point variants aim between the jaws (see docs/metrics.md).
# Every decide(scenario, sims=None) takes the board's BoardSims (core.simcache);
# only the Oracle simulates while deciding.
BASELINES: dict[str, tuple[str, Callable]] = {
    "oracle": ("oracle", lambda s, sims=None: oracle(s, "potting-point", sims=sims)),
    "oracle-centre": ("oracle", lambda s, sims=None: oracle(s, "centre", sims=sims)),
    "oracle-kick": ("oracle", lambda s, sims=None: oracle_kick(s, sims=sims)),
    "heuristic-centre": ("heuristic", lambda s, sims=None: heuristic(s, "centre")),
    "heuristic": ("heuristic", lambda s, sims=None: heuristic(s, "potting-point")),
    "random": ("random", lambda s, sims=None: random_player(s, seed=0)),
}
DEFAULT_BASELINES = ("oracle", "heuristic-centre", "heuristic", "random")
# Beside a model: the Oracle (the decomposition's reference) and the paper's two weak baselines.
EVAL_BASELINES = ("oracle", "heuristic-centre", "random")


def check_players(names: Sequence[str], flag: str = "") -> list[str]:
    """The names, checked: every one a baseline, none twice; a mistake names `flag` (the setting they came from)."""
    names, at = list(names), f"{flag}: " if flag else ""
    unknown = [n for n in names if n not in BASELINES]
    if unknown:
        raise ValueError(f"{at}unknown player(s) {unknown}; choose from {', '.join(BASELINES)}")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"{at}player(s) {twice} listed more than once; name each player once")
    if not names:
        raise ValueError(f"{at}no players given; choose from {', '.join(BASELINES)}")
    return names


__all__ = ["BASELINES", "DEFAULT_BASELINES", "EVAL_BASELINES", "Decision", "check_players", "heuristic", "oracle",
           "oracle_kick",
           "random_player"]
