"""analysis/tool_reach.py: the tool player's ceiling on real boards, and each answer matched to the
shot whose aim it wrote (where a model's legal contacts go: docs/results.md#what-the-tool-lets-a-player-reach)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from poolbench_data.boards.generate import generate
from poolbench_data.core.records import Shot
from poolbench_data.llm.tools import MAX_CALLS, call_of, turn_result
from poolbench_data.players.baselines import ORACLE_SPEEDS
from poolbench_data.demos.tools import played
from poolbench_data.protocol.prompts import format_action

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("tool_reach", REPO / "analysis" / "tool_reach.py")
bench = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = bench  # the arguments dataclass is resolved through its module
spec.loader.exec_module(bench)
BOARDS = generate(12)


def _thread(s, balls: list[str], answer_from: tuple[int, int] | None, text: str | None = None) -> dict:
    calls = [{"arguments": {"target_ball": b}, "result": turn_result(s, call_of(b), MAX_CALLS - 1 - i)}
             for i, b in enumerate(balls)]
    if answer_from is not None:
        r = calls[answer_from[0]]["result"]
        shot = r["shots"][answer_from[1]]
        text = format_action(Shot(phi=shot["potting_point_aim_angle_deg"], V0=8.0, target_ball=r["target_ball"],
                                  target_pocket=shot["pocket"]), s)
    return {"scenario_id": s.id, "sample": 0, "calls": calls, "final_response": text}


def _closed_and_open(s):
    reports = {b.id: turn_result(s, call_of(b.id), 0) for b in s.own()}
    closed = [b for b, r in reports.items() if not r["open"] and r["shots"] and r["kick"]]
    opened = [b for b, r in reports.items() if r["open"]]
    return closed, opened


def _kick_answer(s, ball: str) -> str:
    kick = turn_result(s, call_of(ball), 0)["kick"]
    return format_action(Shot(phi=kick["aim_angle_deg"], V0=8.0, target_ball=ball, target_pocket=kick["pocket"]), s)


def test_each_answer_is_matched_to_the_shot_it_copied(tmp_path):
    s, closed, opened = next((s, c, o) for s in BOARDS for c, o in [_closed_and_open(s)] if c and o)
    cases = {
        "open": _thread(s, [closed[0], opened[0]], (1, 0)),
        "kick": _thread(s, [closed[0]], None, _kick_answer(s, closed[0])),
        "closed, calls left": _thread(s, [closed[0]], (0, 0)),
        "closed, at cap": _thread(s, [closed[0]] * MAX_CALLS, (MAX_CALLS - 1, 0)),
        "aim not shown": _thread(s, [opened[0]], None, format_action(Shot(phi=123.456, V0=8.0,
                                 target_ball=opened[0], target_pocket="rc"), s)),
        "no action": _thread(s, [opened[0]], None, '<tool_call>{"name": "ghost_ball"}</tool_call>'),
    }
    assert set(cases) == set(bench.KINDS)
    for kind, t in cases.items():
        shot = played(s, t["final_response"])[0] if kind != "no action" else None
        kind_found, answer = bench.match(t, shot)
        assert kind_found == kind, kind
        if kind in ("open", "kick", "closed, calls left", "closed, at cap"):  # the answer whose shot it wrote
            assert answer is t["calls"][-1]["result"]
    # the folder's counts: one shot of each kind, each replayed in the simulator
    (tmp_path / "tool_calls.jsonl").write_text("".join(json.dumps(t) + "\n" for t in cases.values()))
    counts = bench.choices(tmp_path, {s.id: s})
    assert {k: counts[k]["shots"] for k in bench.KINDS} == {k: 1 for k in bench.KINDS}
    # the open answer wrote its report's first open shot; every written answer was at 8 m/s (no action: none)
    assert counts["open"]["the first open shot shown"] == 1
    every = counts["every shot"]
    assert every["answers at 8 m/s"] == len(bench.KINDS) - 1
    # the first call: `closed[0]` in five threads, `opened[0]` in two; the lowest-numbered own ball's openness
    assert every["boards with an open own ball"] == len(cases)
    assert every["first call open"] == 2
    assert every["lowest-numbered own ball open"] == len(cases) * (s.own()[0].id in opened)
    assert counts["no action"]["legal contact"] == 0
    # the kick was written after one call, and `opened` (not called) has an open shot
    assert counts["kick"]["open shot left uncalled"] == 1 and not counts["open"]["open shot left uncalled"]
    opened_played = played(s, cases["open"]["final_response"])[1]
    assert counts["open"]["clean pot"] == opened_played.clean_pot
    report = cases["open"]["calls"][-1]["result"]
    assert counts["open"]["best open shot shown"] == bench._best(s, [
        (report["target_ball"], x["pocket"], x["potting_point_aim_angle_deg"]) for x in report["shots"] if x["open"]])[1]


@pytest.mark.slow
def test_the_ceiling_counts_what_the_tool_shows():
    geometry_only = bench.ceiling(BOARDS, MAX_CALLS, simulate=False)
    assert geometry_only["boards"] == len(BOARDS)
    assert geometry_only[f"open in the first {MAX_CALLS} own balls listed"] <= geometry_only["an open own shot"]
    assert 0 < geometry_only["an open own shot"] <= len(BOARDS)
    two = BOARDS[:2]
    c = bench.ceiling(two, MAX_CALLS)
    legal, clean = c["legal contact, best shot of a ball's report"], c["clean pot, best shot of a ball's report"]
    assert clean <= legal <= c["legal contact, best aim any answer shows"] <= len(two)
    # the listed procedure: the first open ball's first shot at 8 m/s, and the best of its shots, never better
    listed = [c[f"listed order, first open shot (else kick) at 8 m/s: {x}"] for x in ("clean pot", "legal contact")]
    assert listed[0] <= c["listed order, best shot of the first open ball: clean pot"] <= len(two)
    assert listed[0] <= listed[1] <= len(two)
    # where no own ball has an open shot: the reports' kicks, the first own ball's and the best of any
    from poolbench_data.boards.generate import generate_scenario

    closed = [generate_scenario("indirect", 200 + i, f"pb1-{i:06d}") for i in range(3)]
    k = bench.ceiling(closed, MAX_CALLS)
    for s in closed:
        assert not any(turn_result(s, call_of(b.id), 0)["open"] for b in s.own())
    first = [next(r for b in s.own() for r in [turn_result(s, call_of(b.id), 0)] if r["kick"]) for s in closed]
    assert k["no open own shot: first own ball's kick legal"] == sum(
        bench._best(s, [(r["target_ball"], r["kick"]["pocket"], r["kick"]["aim_angle_deg"])])[0]
        for s, r in zip(closed, first))
    assert k["no open own shot: first own ball's kick clean"] <= k["no open own shot: some own ball's kick clean"]
    assert 0 < k["no open own shot: first own ball's kick legal"] <= k["no open own shot: some own ball's kick legal"]
    # one shot: legal / clean at any of the Oracle's speeds, as the simulator plays the written action
    s = two[0]
    r = next(r for b in s.own() for r in [turn_result(s, call_of(b.id), 0)] if r["shots"])
    for shot in r["shots"][:2]:
        outcomes = [played(s, format_action(Shot(phi=shot["potting_point_aim_angle_deg"], V0=v,
                                                 target_ball=r["target_ball"], target_pocket=shot["pocket"]), s))[1]
                    for v in ORACLE_SPEEDS]
        expected = (any(m.legal_contact for m in outcomes) or any(m.clean_pot for m in outcomes),
                    any(m.clean_pot for m in outcomes))
        assert bench._best(s, [(r["target_ball"], shot["pocket"], shot["potting_point_aim_angle_deg"])]) == expected


@pytest.mark.slow
def test_the_first_open_shot_at_each_speed(capsys):
    from poolbench_data.llm.tools import ball_report
    from poolbench_data.pairs.noise import MIN_MARGIN, robust_score
    from poolbench_data.demos.tools import listed_own

    three = BOARDS[:3]
    c = bench.speeds(three, MAX_CALLS)
    found = [s for s in three if any(ball_report(s, b)["open"] for b in listed_own(s)[:MAX_CALLS])]
    assert c["boards where the listed procedure finds an open shot"] == len(found) > 0
    assert c["clean at all of 8, 10, 12 m/s"] + c["clean at none"] + c["clean at some"] == len(found)
    s = found[0]
    r = next(r for b in listed_own(s)[:MAX_CALLS] for r in [ball_report(s, b)] if r["open"])
    x = next(x for x in r["shots"] if x["open"])
    at = {v: played(s, format_action(Shot(phi=x["potting_point_aim_angle_deg"], V0=v, target_ball=r["target_ball"],
                                          target_pocket=x["pocket"]), s))[1].clean_pot for v in bench.SPEED_GRID}
    one = bench.speeds([s], MAX_CALLS)
    assert all(one[f"first open shot at {v:g} m/s: clean pot"] == at[v] for v in bench.SPEED_GRID)
    assert one["clean at all of 8, 10, 12 m/s"] == all(at[v] for v in ORACLE_SPEEDS)
    steady = {v: robust_score(s, {"action": Shot(phi=x["potting_point_aim_angle_deg"], V0=v, target_ball=r[
        "target_ball"], target_pocket=x["pocket"]).to_row()}) for v in (5.0, 8.0)}
    assert one["robust level: 5 m/s above 8 m/s"] == (steady[5.0] - steady[8.0] >= MIN_MARGIN)
    assert one["robust level: 8 m/s above 5 m/s"] == (steady[8.0] - steady[5.0] >= MIN_MARGIN)
    assert c["robust level: 5 m/s above 8 m/s"] + c["robust level: 8 m/s above 5 m/s"] <= len(found)
    from test_tool_sft import stop_every_simulation

    with pytest.MonkeyPatch.context() as mp:  # a grid that stopped early gives no robust level, counted apart
        stop_every_simulation(mp)
        stopped = bench.speeds([s], MAX_CALLS)
    assert stopped["robust level: a grid stopped early"] == 1
    assert stopped["robust level: 5 m/s above 8 m/s"] == stopped["robust level: 8 m/s above 5 m/s"] == 0
    for argv, flag in ((["--seed", "-1"], "--seed"), (["--seed", "1", "--eval_dir", "x"], "--eval_dir")):
        assert bench.main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"error: {flag}") and len(err.splitlines()) == 1
