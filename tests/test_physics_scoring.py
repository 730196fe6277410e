import math
import subprocess
import sys

import pytest

from poolbench_data.core.physics import build_system, simulate
from poolbench_data.core.records import Event, Metrics, Shot, ShotResult
from poolbench_data.core.scoring import score, score_not_fired


@pytest.fixture
def corner(board):
    """Cue, ball 1 and the lb pocket in a straight line."""
    return board({"cue": (0.45, 0.45), "1": (0.3, 0.3), "9": (0.8, 1.8), "8": (0.5, 1.6)})


def test_balls_enter_pooltool_in_canonical_order(board):
    s = board({"8": (0.3, 1.5), "12": (0.9, 1.9), "cue": (0.5, 0.3), "3": (0.7, 1.0), "1": (0.2, 1.0)})
    assert list(build_system(s, Shot(90, 5)).balls) == ["cue", "1", "3", "8", "12"]


def test_straight_pot_is_legal_and_clean(board):
    s = board({"cue": (0.5, 0.3), "1": (0.5, 1.0), "9": (0.9, 0.3)})
    # Straight up the table is not a pocket line: contact, no pot, no foul.
    r = simulate(s, Shot(90.0, 4.0))
    m = score(r)
    assert r.status == "ok" and r.first_contact == "1"
    assert (m.legal_contact, m.foul) == (True, False)


def test_contact_plus_scratch_sets_both_flags(corner):
    r = simulate(corner, Shot(225.0, 4.0))
    m = score(r)
    assert [b for b, _ in r.pocketed] == ["1", "cue"] and {p for _, p in r.pocketed} == {"lb"}
    assert m.legal_contact and m.own_potted and m.foul and not m.clean_pot
    assert m.foul_reasons == ("scratch",)


def test_scratch_without_contact(board):
    s = board({"cue": (0.3, 0.3), "1": (0.7, 1.5), "8": (0.3, 1.5)})
    m = score(simulate(s, Shot(225.0, 3.0)))
    assert m.foul_reasons == ("scratch", "no-contact") and not m.legal_contact


def test_eight_ball_potted_and_wrong_first_contact(board):
    s = board({"cue": (0.45, 0.45), "8": (0.3, 0.3), "1": (0.8, 1.8)})
    m = score(simulate(s, Shot(225.0, 3.0, b=-0.3)))
    assert "eight-potted" in m.foul_reasons and "wrong-first-contact" in m.foul_reasons
    assert m.opp_or_8_potted and not m.own_potted


def test_wrong_first_contact_on_a_stripe(board):
    s = board({"cue": (0.5, 0.3), "9": (0.5, 0.8), "1": (0.5, 1.5)})
    r = simulate(s, Shot(90.0, 3.0))
    assert r.first_contact == "9" and score(r).foul_reasons == ("wrong-first-contact",)


def test_no_contact_at_all(board):
    s = board({"cue": (0.5, 1.0), "1": (0.5, 1.5)})
    m = score(simulate(s, Shot(0.0, 2.0)))
    assert m.foul_reasons == ("no-contact",) and not m.legal_contact and m.foul


@pytest.mark.parametrize("shot, reason", [
    (Shot(math.nan, 5.0), "non-finite"),
    (Shot(90.0, math.inf), "non-finite"),
    (Shot(90.0, 1e9), "out-of-range"),
    (Shot(90.0, 1.0), "out-of-range"),
    (Shot(90.0, 5.0, b=0.9), "out-of-range"),
    (Shot("90", 5.0), "non-numeric"),
])
def test_invalid_shots_are_recorded_not_raised(board, shot, reason):
    s = board({"cue": (0.5, 0.3), "1": (0.5, 1.0)})
    r = simulate(s, shot)
    assert r.status == "error" and f"({reason})" in r.message and r.events == ()
    m = score(r)
    assert m.foul and m.foul_reasons == ("not-fired", "invalid-shot")


def test_phi_is_wrapped_not_clamped():
    assert Shot(-90.0, 5.0).validated().phi == 270.0
    # Wrapping moves a value into [0, 360); clamping would leave 360 at 360 or 359.99...
    assert Shot(360.0, 5.0).validated().phi == 0.0
    assert Shot(-360.0, 5.0).validated().phi == 0.0
    assert Shot(-0.5, 5.0).validated().phi == 359.5
    assert Shot(359.5, 5.0).validated().phi == 359.5  # inside the range: unchanged


def test_event_limit_and_timeout_are_statuses(board):
    s = board({"cue": (0.5, 0.3), "1": (0.5, 1.0), "2": (0.2, 1.5), "9": (0.8, 1.5)})
    r = simulate(s, Shot(90.0, 8.0), max_events=3)
    assert r.status == "event-limit" and "3 events" in r.message
    r = simulate(s, Shot(90.0, 8.0), timeout_s=0.0)
    assert r.status == "timeout"


def test_time_numba_spends_compiling_is_not_simulation_time(board, monkeypatch):
    """A cold numba cache compiles pooltool's code during a process's first shots (tens of seconds on a 2-core Zen 3); that
    time must not turn a shot into a timeout, while time spent simulating still does."""
    import time

    import numba.core.event as ev
    from pooltool.evolution.event_based.simulate import _SimulationState

    s = board({"cue": (0.5, 0.3), "1": (0.5, 1.0), "2": (0.2, 1.5), "9": (0.8, 1.5)})
    step = _SimulationState.step

    def slow_first_step(compiles: bool):
        first = []

        def stepped(self):
            if not first:  # the first event takes 1.5 s, compiling or not; a whole warm shot takes ~30 ms
                first.append(True)
                if compiles:
                    with ev.trigger_event("numba:compiler_lock"):  # as numba's compiler lock fires it
                        with ev.trigger_event("numba:compiler_lock"):  # nested: a compile inside a compile
                            time.sleep(1.5)
                else:
                    time.sleep(1.5)
            return step(self)
        return stepped

    warm = simulate(s, Shot(90.0, 8.0))
    monkeypatch.setattr(_SimulationState, "step", slow_first_step(True))
    compiled = simulate(s, Shot(90.0, 8.0), timeout_s=1.0)
    assert compiled.status == "ok" and compiled == warm
    monkeypatch.setattr(_SimulationState, "step", slow_first_step(False))
    assert simulate(s, Shot(90.0, 8.0), timeout_s=1.0).status == "timeout"


def test_the_shot_loop_matches_pooltools_own_bit_for_bit(benchmark_scenarios, monkeypatch):
    # simulate() runs its own loop (a faster collision-cache invalidation) on pooltool's cushion model without
    # its debug f-strings; pooltool's simulate with its own model must give the same result, event for event.
    import numpy as np
    from pooltool.evolution.event_based.simulate import simulate as pooltool_simulate
    from pooltool.physics.resolve.ball_cushion.stronge_compliant import model

    from poolbench_data.core.physics import MAX_EVENTS, build_system, engine, result_from_system

    engine()
    assert model._solve.__wrapped__ is not model._solve  # the copy is the one pooltool calls
    rng = np.random.default_rng(11)
    shots = [Shot(float(rng.uniform(0, 360)), float(rng.uniform(1, 12)), a=float(rng.uniform(-0.3, 0.3)),
                  b=float(rng.uniform(-0.3, 0.3))) for _ in range(3)]
    ours = [simulate(s, shot) for s in benchmark_scenarios[:8] for shot in shots]
    monkeypatch.setattr(model, "_solve", model._solve.__wrapped__)
    theirs = []
    for s in benchmark_scenarios[:8]:
        for shot in shots:
            system = build_system(s, shot)
            pooltool_simulate(system, engine=engine(), inplace=True, max_events=MAX_EVENTS)
            theirs.append(result_from_system(system, "ok"))
    assert sum(len(r.cushion_contacts) for r in ours) > 50  # the cushion model ran
    assert ours == theirs


def test_the_cushion_model_runs_as_shipped_with_its_debug_log_on_or_without_its_source(monkeypatch):
    import logging

    from pooltool.physics.resolve.ball_cushion.stronge_compliant import model

    from poolbench_data.core.physics import _drop_cushion_debug_strings, engine

    engine()
    original = model._solve.__wrapped__
    monkeypatch.setattr(model, "_solve", original)
    level = model.logger.level
    try:
        model.logger.setLevel(logging.DEBUG)
        _drop_cushion_debug_strings()
        assert model._solve is original
    finally:
        model.logger.setLevel(level)
    _drop_cushion_debug_strings()
    assert model._solve.__wrapped__ is original
    monkeypatch.setattr(model, "_solve", original)

    def no_source(obj):
        raise OSError("could not get source code")

    monkeypatch.setattr("inspect.getsourcelines", no_source)
    _drop_cushion_debug_strings()
    assert model._solve is original  # the model as shipped


def _unreadable(obj):
    raise PermissionError(13, "Permission denied", "stronge_compliant/model.py")


def _not_utf8(obj):
    raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")


@pytest.mark.parametrize("source", [
    _unreadable,  # the file cannot be read
    _not_utf8,  # it is not text
    lambda obj: (["def _solve(:\n"], 1),  # it does not parse
    lambda obj: (["return _solve\n"], 1),  # it parses but does not compile
    lambda obj: (["_solve = 1 / 0\n"], 1),  # it raises as it runs
    lambda obj: (["def solve():\n", "    pass\n"], 1),  # it defines no _solve
], ids=["unreadable", "not-utf8", "unparsable", "not-compilable", "raises", "no-function"])
def test_a_cushion_model_copy_that_cannot_be_made_leaves_pooltools_own(source, board, monkeypatch, caplog):
    """However the copy without debug calls fails, the engine runs pooltool's model as shipped, says so once, and
    every shot is simulated as the copy simulates it (no shot becomes an `error`)."""
    from pooltool.physics.resolve.ball_cushion.stronge_compliant import model

    from poolbench_data.core.physics import engine

    s = board({"cue": (0.5, 0.5), "1": (0.3, 1.2), "8": (0.8, 1.6)})
    shot = Shot(20.0, 6.0)  # off two cushions
    engine()
    expected = simulate(s, shot)  # on the copy
    assert expected.status == "ok" and expected.cushion_contacts
    original = model._solve.__wrapped__
    monkeypatch.setattr(model, "_solve", original)
    monkeypatch.setattr("inspect.getsourcelines", source)
    engine.cache_clear()
    try:
        with caplog.at_level("WARNING", logger="poolbench_data.core.physics"):
            got = [simulate(s, shot), simulate(s, shot)]
    finally:
        engine.cache_clear()  # the next engine() rebuilds on the copy monkeypatch restores
    assert model._solve is original  # pooltool's own model ran
    assert got == [expected, expected]
    warned = [r.getMessage() for r in caplog.records if "cushion model runs as shipped" in r.getMessage()]
    assert len(warned) == 1, caplog.records


def test_a_run_whose_shots_all_fail_in_the_simulator_stops(tmp_path):
    """pooltool's resolver broken: every shot fails in the engine, and `poolbench baseline` stops with one line and
    exit 1, writing nothing, instead of a table of 0% contact and 100% fouls for every player."""
    broken = ("import sys\n"
              "import pooltool.physics.resolve.resolver as resolver\n"
              "def broken(*args, **kwargs):\n"
              "    raise RuntimeError('no resolver here')\n"
              "resolver.default_resolver = broken\n"
              "from poolbench_data.cli import main\n"
              "sys.exit(main(sys.argv[1:]))\n")
    out = tmp_path / "baselines.json"
    p = subprocess.run([sys.executable, "-c", broken, "baseline", "--n", "2", "--no_label", "--quiet", "--workers",
                        "1", "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert p.stderr.startswith("error: the simulator failed all 8 shots played (the first: RuntimeError: no "
                               "resolver here)") and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not out.exists() and not p.stdout


def test_the_builder_and_eval_stop_when_every_shot_fails_in_the_simulator(tmp_path, monkeypatch, capsys):
    """The same stop in the dataset builder (no folder left) and in `poolbench eval` (before the model plays)."""
    import importlib.util
    import json
    from pathlib import Path

    import pooltool.physics.resolve.resolver as resolver

    from poolbench_data.boards.generate import generate
    from poolbench_data.cli import main
    from poolbench_data.core.physics import engine

    def broken(*args, **kwargs):
        raise RuntimeError("no resolver here")

    spec = importlib.util.spec_from_file_location("bd", Path(__file__).parents[1] / "builders" / "build_dataset.py")
    builder = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = builder  # dataclasses resolve their annotations through it
    spec.loader.exec_module(builder)
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"player": "m", "player_kind": "llm", "scenario_id": generate(1)[0].id,
                                   "sample": 0, "raw_response": "no idea"}) + "\n")
    monkeypatch.setattr(resolver, "default_resolver", broken)
    monkeypatch.setenv("POOLBENCH_WORKERS", "1")
    engine.cache_clear()
    try:
        dataset = tmp_path / "dataset"
        assert builder.main(["--output_dir", str(dataset), "--eval_n", "2", "--train_n", "0", "--players",
                             "oracle,random", "--workers", "1"]) == 1
        err = capsys.readouterr().err.strip().splitlines()[-1]  # after its progress bar
        assert err.startswith("error: the simulator failed all 4 shots played"), err
        assert not dataset.exists()
        assert main(["eval", "--backend", "replay", "--responses", str(answers), "--name", "m", "--n", "1",
                     "--baselines", "random", "--quiet", "--out", str(tmp_path / "eval")]) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: the simulator failed all 2 shots played") and len(err.splitlines()) == 1, err
    finally:
        monkeypatch.undo()
        engine.cache_clear()


def test_scorer_is_pure_over_results():
    ev = (Event(0.0, "stick_ball", ("cue_stick", "cue")), Event(0.1, "ball_ball", ("cue", "11")),
          Event(0.3, "ball_pocket", ("11", "rt")), Event(0.5, "ball_pocket", ("3", "lt")))
    r = ShotResult("ok", ev, "11", (), (("11", "rt"), ("3", "lt")), ())
    # '1' must not match '11' (pooltool's ruleset matches by substring).
    assert score(r) == Metrics(False, True, True, True, ("wrong-first-contact",))
    assert score_not_fired("no-json") == Metrics(False, False, True, False, ("not-fired", "no-json"))


def _trace(s, shot):
    return simulate(s, shot).events


@pytest.mark.slow
def test_same_shot_same_trace_bit_for_bit_across_processes(benchmark_scenarios):
    s = benchmark_scenarios[3]
    shot = Shot(37.123456789, 9.87654321)
    here = _trace(s, shot)
    assert here == _trace(s, shot)
    code = ("from poolbench_data.boards.generate import generate;from poolbench_data.core.physics import simulate;"
            "from poolbench_data.core.records import Shot;s=generate(4)[3];"
            "print(repr([(e.time,e.type,e.ids) for e in simulate(s, Shot(37.123456789, 9.87654321)).events]))")
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert there == repr([(e.time, e.type, e.ids) for e in here])
