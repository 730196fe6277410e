"""One function from (scenario, shot) to a frozen ShotResult.

The engine is built explicitly: pooltool's default engine reads its resolver
from ~/.config/pooltool, which a user may have edited. Balls are inserted in
canonical order, the only order for which pooltool is bitwise deterministic.
"""

from __future__ import annotations

import functools
import time

from poolbench_data.core.records import (
    CANONICAL_ORDER,
    CUE,
    Event,
    InvalidShot,
    Scenario,
    Shot,
    ShotResult,
)
from poolbench_data.core.table import pooltool_table

MAX_EVENTS = 1000  # storms seen upstream reach a few hundred events
TIMEOUT_S = 20.0  # a normal 16-ball shot takes ~20 ms; break shots ~1 s
_SKIP = {"none"}  # pooltool's null bookkeeping events


@functools.cache
def engine():
    from pooltool.physics.engine import PhysicsEngine
    from pooltool.physics.resolve.resolver import default_resolver

    _drop_cushion_debug_strings()
    return PhysicsEngine(resolver=default_resolver())


def _drop_cushion_debug_strings() -> None:
    """pooltool's cushion model (Stronge, compliant) formats numpy arrays into f-strings for `logger.debug` at
    every cushion hit, logged or not: a fifth of a typical shot's time. When that logger is off as the engine is
    built, the model runs a copy compiled from pooltool's own source without those calls; the arithmetic is
    untouched, so every result is the same bit for bit (tests/test_physics_scoring.py). Where the copy cannot be
    made in any way (the source unreadable, unparsable, failing to compile or to run, no `_solve` in it), the
    model runs as shipped, and a warning says so once: slower shots, the same results."""
    import logging

    from pooltool.physics.resolve.ball_cushion.stronge_compliant import model

    if hasattr(model._solve, "__wrapped__") or model.logger.isEnabledFor(logging.DEBUG):
        return
    try:
        copy = _solve_without_debug(model)
    except Exception as e:  # any failure leaves pooltool's own model, never a broken engine
        logging.getLogger(__name__).warning(
            "warning: pooltool's cushion model runs as shipped (its copy without debug calls could not be made: "
            "%s: %s); shots are slower, results the same", type(e).__name__, e)
        return
    copy.__wrapped__ = model._solve  # pooltool's own, for the test that compares them
    model._solve = copy


def _solve_without_debug(model):
    """The cushion model's `_solve`, compiled from pooltool's source without its `logger.debug` statements."""
    import ast
    import inspect

    lines, first = inspect.getsourcelines(model._solve)
    tree = ast.parse("".join(lines))
    ast.increment_lineno(tree, first - 1)  # a traceback still points at pooltool's line

    class Drop(ast.NodeTransformer):
        def visit_Expr(self, node):
            f = node.value.func if isinstance(node.value, ast.Call) else None
            is_debug = isinstance(f, ast.Attribute) and f.attr == "debug" and getattr(f.value, "id", "") == "logger"
            return None if is_debug else node

    names: dict = {}
    exec(compile(Drop().visit(tree), model.__file__, "exec"), model.__dict__, names)
    solve = names.get("_solve")
    if not callable(solve):
        raise LookupError("the compiled source defines no function _solve")
    return solve


def build_system(scenario: Scenario, shot: Shot):
    """The pooltool System for a scenario with the cue set to `shot`."""
    return system_of(scenario.balls, shot)


def system_of(balls, shot: Shot, table=None):
    """The pooltool System of balls (anything with id, x, y) on `table` (the paper's by default), with the cue set
    to `shot`: the one place a System is built, so every game inserts its balls in canonical order."""
    import pooltool as pt

    order = {b: i for i, b in enumerate(CANONICAL_ORDER)}
    made = {b.id: pt.Ball.create(b.id, xy=(b.x, b.y)) for b in sorted(balls, key=lambda b: order[b.id])}
    system = pt.System(cue=pt.Cue(cue_ball_id=CUE), table=table or pooltool_table(), balls=made)
    system.cue.set_state(V0=shot.V0, phi=shot.phi, theta=shot.theta, a=shot.a, b=shot.b)
    return system


def _run(system, max_events: int, timeout_s: float) -> str:
    """pooltool's simulate loop with a wall-clock bound added (and its cache update in `_update_caches`). The bound
    leaves out the time numba spends compiling or loading pooltool's code: with a cold cache a process's first shots
    compile for over 20 s on a slow CPU, and counting that would turn them into timeouts, a result that depends on
    the cache, not the shot."""
    from numba.core.event import TimingListener, install_listener
    from pooltool.evolution.event_based.simulate import _SimulationState

    compiling = TimingListener()  # nesting-aware: a compile inside a compile counts once
    with install_listener("numba:compiler_lock", compiling):
        sim = _SimulationState(system, engine(), max_events=max_events)
        sim.init()
        start = time.perf_counter()
        while not sim.done:
            event = sim.step()
            if not sim.done:
                _update_caches(sim, event)
                spent = time.perf_counter() - start - (compiling.duration if compiling.done else 0.0)
                if spent > timeout_s:
                    return "timeout"
    return "event-limit" if max_events and sim.num_events > max_events else "ok"


def _update_caches(sim, event) -> None:
    """`sim.update_caches(event)` with the collision cache's invalidation done in one pass a kind: pooltool's
    runs a generator for every cached key at every event, a third of a typical shot's time. The same keys go."""
    from pooltool.events.utils import event_type_to_ball_indices

    if event.event_type not in sim.include:
        return
    sim.transition_cache.update(event)
    moved = sim.collision_cache._get_invalid_ball_ids(event)
    for kind, times in sim.collision_cache.times.items():
        at = sorted(event_type_to_ball_indices.get(kind, ()))
        if len(at) == 1:
            i = at[0]
            stale = [key for key in times if key[i] in moved]
        elif len(at) == 2:
            i, j = at
            stale = [key for key in times if key[i] in moved or key[j] in moved]
        else:
            stale = [key for key in times if any(key[i] in moved for i in at)]
        for key in stale:
            del times[key]


def result_from_system(system, status: str, message: str = "") -> ShotResult:
    """Extract the frozen result from a simulated pooltool System."""
    events = tuple(
        Event(float(ev.time), str(ev.event_type.value), tuple(str(i) for i in ev.ids))
        for ev in system.events
        if ev.event_type.value not in _SKIP
    )
    first_contact = None
    cushions, pocketed = [], []
    for ev in events:
        if ev.type == "ball_ball" and first_contact is None and CUE in ev.ids:
            first_contact = ev.ids[1] if ev.ids[0] == CUE else ev.ids[0]
        elif ev.type in ("ball_linear_cushion", "ball_circular_cushion"):
            cushions.append((ev.ids[0], ev.ids[1]))
        elif ev.type == "ball_pocket":
            pocketed.append((ev.ids[0], ev.ids[1]))
    gone = {b for b, _ in pocketed}
    final = tuple(
        (bid, float(system.balls[bid].state.rvw[0][0]), float(system.balls[bid].state.rvw[0][1]))
        for bid in system.balls
        if bid not in gone
    )
    return ShotResult(status, events, first_contact, tuple(cushions), tuple(pocketed), final, message)


def simulate(scenario: Scenario, shot: Shot, *, max_events: int = MAX_EVENTS,
             timeout_s: float = TIMEOUT_S) -> ShotResult:
    """Resolve `shot` on `scenario`. Never raises for a bad shot or a failing
    simulation: the failure is recorded in the result's status and message."""
    try:
        shot = shot.validated()
    except InvalidShot as e:
        return _error(f"invalid shot ({e.reason}): {e}")
    except Exception as e:  # not a Shot at all: still a result, not a crash
        return _error(f"invalid shot: {type(e).__name__}: {e}")
    try:
        system = build_system(scenario, shot)
    except Exception as e:  # a simulator crash is data, not a reason to stop a run
        return _error(f"{type(e).__name__}: {e}")
    return run_system(system, max_events=max_events, timeout_s=timeout_s)


def run_system(system, *, max_events: int = MAX_EVENTS, timeout_s: float = TIMEOUT_S) -> ShotResult:
    """Simulate a built System (its cue set, its shot validated) under the same bounds as `simulate`, which
    calls it; a game on another table builds its System with `system_of`. Never raises."""
    try:
        status = _run(system, max_events, timeout_s)
        message = {"event-limit": f"stopped after {max_events} events",
                   "timeout": f"stopped after {timeout_s} s wall clock"}.get(status, "")
        return result_from_system(system, status, message)
    except Exception as e:  # a simulator crash is data, not a reason to stop a run
        return _error(f"{type(e).__name__}: {e}")


def _error(message: str) -> ShotResult:
    return ShotResult("error", (), None, (), (), (), message)
