"""Simulations a searching player runs, each at most once in a process, and the result of the one it plays.

A run-out board's searches go through the simulation floor (core.simcache.BoardSims), kept per board as
`KeptSims`, which also keeps each result: the shot a player chooses is played from the simulation that chose
it, never run again, and a layout met again (the next turn's table that a look-ahead already searched, or the
same rack in another episode) reuses what was simulated on it. A nine-ball table is not a benchmark board (its
table is pooltool's default), so its simulations are kept in `MEMO`, keyed by the table and the shot. Both are
bounded: the least recently used board or result goes first. Results are the same with or without them; only
the counts of simulations run change.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable

from poolbench_data.core.records import Scenario, Shot, ShotResult
from poolbench_data.core.simcache import BoardSims

MAX_BOARDS = 64  # run-out boards kept in a process: a visit's layouts and their look-aheads
MAX_RESULTS = 1024  # nine-ball results kept: a 15-attempt Oracle episode is 405 shots

_RUN = [0]  # simulations run through this module in this process


def simulations_run() -> int:
    """Simulations run so far in this process by the searches here: a decision's count is the difference."""
    return _RUN[0]


class KeptSims(BoardSims):
    """BoardSims (the floor, the metrics of every shot) that also keeps each shot's full result."""

    def __post_init__(self):
        super().__post_init__()
        self._results: dict[Shot, ShotResult] = {}

    def simulate(self, shot: Shot) -> ShotResult:
        result = super().simulate(shot)
        self._results[shot] = result
        _RUN[0] += 1
        return result

    def outcome(self, shot: Shot):
        result, metrics = super().outcome(shot)
        return (result if result is not None else self._results[shot]), metrics

    def known(self, shot: Shot) -> ShotResult | None:
        """The shot's result when it was simulated on this board, else None."""
        return self._results.get(shot)


class _Lru(OrderedDict):
    def __init__(self, size: int):
        super().__init__()
        self.size = size

    def get_or_make(self, key: Hashable, make: Callable):
        if key in self:
            self.move_to_end(key)
            return self[key], False
        value = self[key] = make()
        if len(self) > self.size:
            self.popitem(last=False)
        return value, True


_BOARDS = _Lru(MAX_BOARDS)
_RESULTS = _Lru(MAX_RESULTS)


def board(scenario: Scenario) -> KeptSims:
    """This layout's simulations, kept from any earlier search of it in this process."""
    return _BOARDS.get_or_make(scenario, lambda: KeptSims(scenario))[0]


def memo(key: Hashable, simulate: Callable[[], ShotResult]) -> ShotResult:
    """`simulate()` once per key in this process (nine-ball: the table, the balls and the shot)."""
    result, ran = _RESULTS.get_or_make(key, simulate)
    _RUN[0] += ran
    return result
