"""Play players on scenarios: every shot simulated and scored the same way.

Parallel over scenarios with worker processes (players.pool); results come
back in scenario order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from poolbench_data.boards.generate import generate_scenario
from poolbench_data.boards.pottable import Pottability, straight_pottable
from poolbench_data.core.errors import SimulatorError
from poolbench_data.core.physics import simulate
from poolbench_data.core.records import InvalidScenario, Metrics, Scenario, Shot, ShotResult
from poolbench_data.core.scoring import score, score_not_fired
from poolbench_data.core.shutdown import stop_if_requested
from poolbench_data.core.simcache import BoardSims
from poolbench_data.players import BASELINES, check_players
from poolbench_data.players.pool import check_executor, cores, imap, resolve_workers


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

    @property
    def stopped_early(self) -> bool:
        """Fired, and its simulation stopped before the balls came to rest (ShotResult.stopped_early)."""
        return self.result is not None and self.result.stopped_early


@dataclass(frozen=True)
class ScenarioRun:
    scenario: Scenario
    records: tuple[ShotRecord, ...]
    pottability: Pottability | None
    sims_run: int = 0  # simulations this board cost (deciding, playing, labelling)
    sims_saved: int = 0  # simulations the floor avoided (core.simcache)
    sim_seconds: float = field(default=0.0, compare=False)  # CPU time in them; a measurement, not a result


def play_shot(scenario: Scenario, shot: Shot | None, *, player: str, kind: str, sample: int = 0, how: str = "",
              sims: int = 0, raw_response: str | None = None, parse_status: str = "baseline",
              parse_message: str = "", result: ShotResult | None = None,
              board: BoardSims | None = None) -> ShotRecord:
    """Simulate and score one action; None = not fired (a foul, as in the paper).
    `result`: the shot's simulation when the player already ran it."""
    if shot is None:
        result, metrics = None, score_not_fired(parse_status)
    else:
        if result is None:
            result = board.simulate(shot) if board is not None else simulate(scenario, shot)
        metrics = score(result)
    return ShotRecord(scenario.id, scenario.category, player, kind, sample, shot, result, metrics, how, sims,
                      raw_response, parse_status, parse_message)


def play_baselines(scenario: Scenario, names: Sequence[str], board: BoardSims | None = None) -> tuple[ShotRecord, ...]:
    problem = scenario.playable_problem()
    if problem:  # the baselines aim at the nearest solid: refuse, naming the fix, rather than crash
        raise InvalidScenario(problem)
    board = board if board is not None else BoardSims(scenario)
    records = []
    for name in names:
        kind, decide = BASELINES[name]
        d = decide(scenario, sims=board)
        reused = d.result if board.floor else None  # without the floor, played shots are simulated again
        if reused is not None:
            board.reused += 1
        records.append(play_shot(scenario, d.shot, player=name, kind=kind, how=d.how, sims=d.sims, result=reused,
                                 board=board))
    return tuple(records)


def label(scenario: Scenario, records: Sequence[ShotRecord], board: BoardSims | None = None) -> Pottability:
    """Straight-pottability, reusing the Oracle's shot when it was played; where
    no straight shot reaches an own ball, `kick` if the kick Oracle's
    one-cushion search pots legally (its shots reused when it was played)."""
    from dataclasses import replace

    from poolbench_data.players.baselines import oracle_kick

    oracle = next((r.shot for r in records if r.player == "oracle"), None)
    p = straight_pottable(scenario, oracle, board)
    if p.how != "no-direct-own-ball":
        return p
    board = board if board is not None else BoardSims(scenario)
    before = board.run
    kick = oracle_kick(scenario, sims=board)
    return replace(p, kind="kick" if kick.how == "kick-pot" else "none", sims=p.sims + board.run - before)


def play_scenario(scenario: Scenario, names: Sequence[str], labelled: bool = True, floor: bool = True) -> ScenarioRun:
    board = BoardSims(scenario, floor)
    records = play_baselines(scenario, names, board)
    pottability = label(scenario, records, board) if labelled else None
    return ScenarioRun(scenario, records, pottability, board.run, board.saved, board.seconds)


def _task(args):
    board, *rest = args
    if isinstance(board, tuple):  # a board spec (boards.generate.iter_specs): drawn here, in the worker
        board = generate_scenario(*board)
    return play_scenario(board, *rest)


def run_baselines(scenarios: Iterable[Scenario | tuple[str, int, str]], names: Sequence[str], *, workers: int = 1,
                  label: bool = True, total: int | None = None, progress: bool = True, floor: bool = True,
                  executor: str = "local", ray_address: str | None = None) -> Iterator[ScenarioRun]:
    """Yield one ScenarioRun per scenario (or board spec from
    boards.generate.iter_specs, drawn in the worker), in input order. Players, --workers
    (0: one per core) and the executor are checked now, before any board is
    played. floor=False simulates every shot, without the simulation floor
    (for benchmarks). The executor changes where boards run, never a result."""
    check_players(names)
    check_executor(executor, ray_address)
    workers = resolve_workers(workers) if executor == "local" else (workers or cores())
    return _run_baselines(scenarios, tuple(names), workers, label, total, progress, floor, executor, ray_address)


def _run_baselines(scenarios, names, workers, label, total, progress, floor, executor, address) -> Iterator[ScenarioRun]:
    from tqdm.auto import tqdm

    tasks = ((s, names, label, floor) for s in scenarios)
    bar = tqdm(total=total, desc="baselines", unit="scenario", disable=not progress)
    failures = EngineFailures()
    for run in imap(_task, tasks, workers, executor, address):
        stop_if_requested()
        failures.add(run.records)
        yield run
        bar.update()
    bar.close()
    failures.check(done=True)


# Fired shots that all failed in the simulator before a run stops: a working engine fails none of the first few.
ALL_FAILED_AFTER = 20


class EngineFailures:
    """A run's fired shots and those the simulator failed (status `error`). A run whose fired shots all fail
    measures nothing (every player at 0% contact, 100% fouls): it stops with a SimulatorError once
    ALL_FAILED_AFTER shots have failed with none simulated, or at its end."""

    def __init__(self):
        self.fired = self.failed = 0
        self.first = ""

    def add(self, records: Iterable[ShotRecord]) -> None:
        for r in records:
            if r.result is not None:
                self.fired += 1
                if r.result.status == "error":
                    self.failed += 1
                    self.first = self.first or (r.result.message.splitlines() or [""])[0]
        self.check()

    def check(self, done: bool = False) -> None:
        if self.fired and self.failed == self.fired and (done or self.fired >= ALL_FAILED_AFTER):
            raise SimulatorError(f"the simulator failed all {self.fired} shots played (the first: {self.first}); "
                                 "no result can be scored: check that pooltool runs here (python -c 'import "
                                 "pooltool')")
