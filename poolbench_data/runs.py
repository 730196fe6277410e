"""Play players on scenarios: every shot simulated and scored the same way.

Parallel over scenarios with worker processes (pooltool is pure Python plus
numba; processes scale, threads do not). Results come back in scenario order.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from poolbench_data.physics import simulate
from poolbench_data.players import BASELINES
from poolbench_data.pottable import Pottability, straight_pottable
from poolbench_data.records import Metrics, Scenario, Shot, ShotResult
from poolbench_data.scoring import score, score_not_fired


@dataclass(frozen=True)
class ShotRecord:
    """One (scenario, player, sample): the action, the physics and the score."""

    scenario_id: str
    category: str
    player: str
    kind: str  # oracle | heuristic | random | llm
    sample: int
    shot: Shot | None  # None when no action could be parsed
    result: ShotResult | None
    metrics: Metrics
    how: str = ""  # how the player decided (baselines) or the parse status (llm)
    sims: int = 0  # simulations spent deciding
    raw_response: str | None = None
    parse_status: str = "baseline"
    parse_message: str = ""


@dataclass(frozen=True)
class ScenarioRun:
    scenario: Scenario
    records: tuple[ShotRecord, ...]
    pottability: Pottability | None


def play_shot(scenario: Scenario, shot: Shot | None, *, player: str, kind: str, sample: int = 0, how: str = "",
              sims: int = 0, raw_response: str | None = None, parse_status: str = "baseline",
              parse_message: str = "") -> ShotRecord:
    """Simulate and score one action; None = not fired (a foul, as in the paper)."""
    if shot is None:
        result, metrics = None, score_not_fired(parse_status)
    else:
        result = simulate(scenario, shot)
        metrics = score(result)
    return ShotRecord(scenario.id, scenario.category, player, kind, sample, shot, result, metrics, how, sims,
                      raw_response, parse_status, parse_message)


def play_baselines(scenario: Scenario, names: Sequence[str], label: bool = True) -> ScenarioRun:
    records = []
    oracle_shot = None
    for name in names:
        kind, decide = BASELINES[name]
        d = decide(scenario)
        records.append(play_shot(scenario, d.shot, player=name, kind=kind, how=d.how, sims=d.sims))
        if name == "oracle":
            oracle_shot = d.shot
    if label and oracle_shot is None:
        oracle_shot = BASELINES["oracle"][1](scenario).shot
    pot = straight_pottable(scenario, oracle_shot) if label else None
    return ScenarioRun(scenario, tuple(records), pot)


def _task(args):
    scenario, names, label = args
    return play_baselines(scenario, names, label)


def _init_worker():
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def run_baselines(scenarios: Iterable[Scenario], names: Sequence[str], *, workers: int = 1, label: bool = True,
                  total: int | None = None, progress: bool = True) -> Iterator[ScenarioRun]:
    """Yield one ScenarioRun per scenario, in input order."""
    from tqdm.auto import tqdm

    unknown = [n for n in names if n not in BASELINES]
    if unknown:
        raise ValueError(f"unknown baseline(s) {unknown}; available: {', '.join(BASELINES)}")
    tasks = ((s, tuple(names), label) for s in scenarios)
    bar = tqdm(total=total, desc="baselines", unit="scenario", disable=not progress)
    if workers <= 1:
        for t in tasks:
            yield _task(t)
            bar.update()
    else:
        for run in imap_bounded(_task, tasks, workers):
            yield run
            bar.update()
    bar.close()


def imap_bounded(fn, items: Iterable, workers: int, in_flight: int = 4) -> Iterator:
    """Ordered parallel map that keeps at most workers * in_flight tasks
    queued, so a 100,000-scenario run streams in bounded memory.
    spawn: a forked child would inherit tqdm's monitor thread and locks."""
    from collections import deque

    with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"), initializer=_init_worker) as ex:
        queue: deque = deque()
        for item in items:
            queue.append(ex.submit(fn, item))
            if len(queue) >= workers * in_flight:
                yield queue.popleft().result()
        while queue:
            yield queue.popleft().result()


def default_workers() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


def angular_error(phi: float, reference: float) -> float:
    """Smallest signed difference phi - reference, in (-180, 180]."""
    d = math.fmod(phi - reference, 360.0)
    if d > 180.0:
        d -= 360.0
    elif d <= -180.0:
        d += 360.0
    return d
