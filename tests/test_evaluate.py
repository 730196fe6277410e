"""The evaluator pipeline on real physics; model text from a replay backend
(the vLLM engine and server are exercised in tests/test_llm_backends.py and
tests/test_eval_cli.py)."""

import json

import pytest

from poolbench_data.llm.player import EvalSettings, evaluate_model, few_shot_examples, llm_trace_rows
from poolbench_data.report.evaluation import decomposition
from poolbench_data.llm.replay import ReplayBackend
from poolbench_data.players import oracle
from poolbench_data.protocol.prompts import format_action


@pytest.fixture(scope="module")
def boards():
    from poolbench_data.boards.generate import generate

    return generate(3)


def test_every_malformed_response_is_scored_with_its_kind_and_the_run_continues(boards):
    s = boards[0]
    own = s.own()[0].id
    good = format_action(oracle(s).shot, s)
    bad = {
        "no-json": "I would aim at the 3 ball with medium speed.",
        "multiple-json": good + "\n" + good,
        "not-object": "[1, 2, 3]",
        "non-finite": '{"target_ball": "%s", "target_pocket": [0, 0], "aim_angle_deg": NaN, "cue_speed": 8}' % own,
        "non-numeric": '{"target_ball": "%s", "target_pocket": [0, 0], "aim_angle_deg": "74.2 deg", "cue_speed": 8}' % own,
        "out-of-range": '{"target_ball": "%s", "target_pocket": [0, 0], "aim_angle_deg": 74.2, "cue_speed": 1e9}' % own,
        "unknown-ball": '{"target_ball": "16", "target_pocket": [0, 0], "aim_angle_deg": 74.2, "cue_speed": 8}',
        "empty": "",
    }
    responses = [list(bad.values()) + [None, good]]
    backend = ReplayBackend(responses)
    settings = EvalSettings(model="replay", backend="replay", samples=len(responses[0]))
    recs, _ = evaluate_model([s], backend, settings, progress=False)
    statuses = [r.parse_status for r in recs]
    assert statuses == list(bad) + ["request-failed", "ok"]
    for r in recs[:-2]:
        assert r.shot is None and r.result is None and r.metrics.foul
        assert r.metrics.foul_reasons == ("not-fired", r.parse_status)
    assert recs[-1].metrics.clean_pot  # the Oracle's own answer, in the protocol format, pots


def test_a_shot_without_a_response_is_no_foul_of_the_models(boards):
    # "" is the model answering nothing (a foul); None is a request that got no response.
    s = boards[0]
    good = format_action(oracle(s).shot, s)
    settings = EvalSettings(model="m", backend="replay", samples=3)
    recs, gen = evaluate_model([s], ReplayBackend([[None, "", good]]), settings, progress=False)
    failed, empty, ok = recs
    assert (failed.parse_status, empty.parse_status, ok.parse_status) == ("request-failed", "empty", "ok")
    assert not failed.metrics.foul and not failed.metrics.fired and failed.raw_response is None
    assert failed.parse_message == "missing: no stored response"
    assert empty.metrics.foul and empty.raw_response == ""
    assert gen.failed_by_kind() == {"missing": 1}
    (row,) = llm_trace_rows([failed], {}, settings)
    assert row["parse_status"] == "request-failed" and not row["foul"] and row["sim_status"] == "not-fired"


def test_failed_slots_name_which_samples_got_no_response():
    from poolbench_data.llm.backend import GenerationFailure, GenerationResult

    short = GenerationFailure(0, "short_response", "asked for 3 choices, got 1", 1, missing=2)
    timeout = GenerationFailure(1, "timeout", "Request timed out.", 3, missing=3)
    gen = GenerationResult([["a", "", ""], ["", "", ""], ["b", "c", "d"]], (short, timeout))
    assert gen.failed_slots() == {(0, 1): short, (0, 2): short, (1, 0): timeout, (1, 1): timeout, (1, 2): timeout}
    assert gen.failed_by_kind() == {"short_response": 2, "timeout": 3}
    assert ReplayBackend([["x", None, "y"]]).generate([[{"role": "user", "content": "q"}]], n=3).failed_slots() \
        .keys() == {(0, 1)}


def test_trace_rows_carry_diagnostics_and_settings(boards):
    s = boards[1]
    o = oracle(s).shot
    shifted = o.__class__(phi=o.phi + 3.0, V0=o.V0, target_ball=o.target_ball, target_pocket=o.target_pocket)
    backend = ReplayBackend([[format_action(shifted, s)]])
    settings = EvalSettings(model="m", backend="replay", temperature=0.2, seed=7)
    recs, _ = evaluate_model([s], backend, settings, progress=False)
    (row,) = llm_trace_rows(recs, {s.id: o}, settings)
    assert row["player_kind"] == "llm" and row["model"] == "m" and row["seed"] == 7
    assert row["target_matches_oracle"] and row["pocket_matches_oracle"]
    assert row["angle_error_deg"] == pytest.approx(3.0, abs=0.01)  # 2-decimal rounding in the format
    assert json.loads(row["raw_response"])["target_ball"] == o.target_ball
    d = decomposition(recs, {s.id: o})
    assert d["target_matches_oracle"] == 1 and d["within_5deg"] == 1 and d["within_1deg"] == 0


def test_decomposition_counts_what_the_trace_rows_say(boards):
    # The report's decomposition and the traces' per-shot columns must agree,
    # over fired shots, unparseable ones and boards without an Oracle shot.
    from poolbench_data.players.play import run_baselines

    runs = list(run_baselines(boards, ("oracle", "heuristic-centre", "random"), label=False, progress=False))
    oracle_shots = {r.scenario_id: r.shot for run in runs for r in run.records if r.player == "oracle"}
    texts = [[format_action(oracle_shots[b.id], b), "no json here"] for b in boards]
    settings = EvalSettings(model="m", backend="replay", samples=2)
    llm, _ = evaluate_model(boards, ReplayBackend(texts), settings, progress=False)
    partial = {k: v for k, v in oracle_shots.items() if k != boards[-1].id}
    for player in ("heuristic-centre", "random", "m"):
        recs = [r for run in runs for r in run.records if r.player == player] if player != "m" else llm
        rows = llm_trace_rows(recs, partial, settings)
        fired = [row for row in rows if row["sim_status"] not in ("not-fired", "error")]
        errors = [abs(row["angle_error_deg"]) for row in fired if row["angle_error_deg"] is not None]
        d = decomposition(recs, partial)
        assert d["shots"] == len(rows) and d["fired"] == len(fired)
        assert d["target_matches_oracle"] == sum(bool(row["target_matches_oracle"]) for row in fired)
        assert d["within_5deg"] == sum(e <= 5.0 for e in errors)
        assert d["pot_given_target_match"] == sum(row["own_potted"] for row in fired if row["target_matches_oracle"])
    assert decomposition(llm, partial)["fired"] == len(boards)  # the "no json here" samples never fire


def test_replay_from_traces_round_trip(boards):
    rows = [{"player": "m", "scenario_id": b.id, "sample": 0, "raw_response": "x"} for b in boards]
    assert ReplayBackend.from_traces(rows, [b.id for b in boards], "m").responses == [["x"]] * 3
    with pytest.raises(ValueError, match="no 'm' responses for scenario"):
        ReplayBackend.from_traces(rows[:1], [b.id for b in boards], "m")


def test_few_shot_examples_are_oracle_pots_from_another_seed():
    ex = few_shot_examples(3)
    assert len(ex) == 3 and all(s.id.startswith("pb99-") for s, _ in ex)
    assert few_shot_examples(0) == []
