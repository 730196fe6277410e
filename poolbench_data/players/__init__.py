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
# What tables and figures call each baseline (README.md's Table 1 uses these names), in the order they show
# them: the weakest first, the Oracles' ceilings last; a model follows them under its own name.
DISPLAY_NAMES = {"random": "Random", "heuristic-centre": "Heuristic, pocket-centre aim",
                 "heuristic": "Heuristic, potting-point aim", "oracle-centre": "Oracle, pocket-centre aim",
                 "oracle": "Oracle", "oracle-kick": "Kick Oracle"}


def display_name(player: str) -> str:
    """A baseline's name in tables and figures (DISPLAY_NAMES); a model's own name unchanged."""
    return DISPLAY_NAMES.get(player, player)


def display_order(players) -> list[str]:
    """The baselines among `players` in DISPLAY_NAMES' order, then the models in the order given."""
    return sorted(players, key=lambda p: (p not in DISPLAY_NAMES, list(DISPLAY_NAMES).index(p)
                                          if p in DISPLAY_NAMES else 0))


def check_players(names: Sequence[str], flag: str = "", known: Sequence[str] = BASELINES, of: str = "") -> list[str]:
    """The names, checked: every one in `known` (the baselines; `of` says whose players they are), none twice;
    a mistake names `flag` (the setting they came from)."""
    names, at, known = list(names), f"{flag}: " if flag else "", list(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"{at}unknown player(s) {unknown}{of}; choose from {', '.join(known)}")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"{at}player(s) {twice} listed more than once; name each player once")
    if not names:
        raise ValueError(f"{at}no players given; choose from {', '.join(known)}")
    return names


__all__ = ["BASELINES", "DEFAULT_BASELINES", "DISPLAY_NAMES", "EVAL_BASELINES", "Decision", "check_players",
           "display_name", "display_order", "heuristic", "oracle", "oracle_kick", "random_player"]
