import json

import pytest

from poolbench_data.hub.rows import baseline_trace_rows, scenario_row
from poolbench_data.pairs.text import build_pairs, fine_score, on_policy_pairs, oracle_pairs, physics_score
from poolbench_data.rl.reward import physics_reward
from poolbench_data.players.play import play_scenario


@pytest.fixture(scope="module")
def rows():
    from poolbench_data.boards.generate import generate

    runs = [play_scenario(s, ("oracle", "heuristic-centre")) for s in generate(4, base_seed=3)]
    scen = [scenario_row(r, 3, i) for i, r in enumerate(runs)]
    traces = [t for r in runs for t in baseline_trace_rows(r)]
    return scen, traces


def _llm(scen: dict, traces: list[dict], texts: list[str]) -> list[dict]:
    """Trace rows of a model that answered `texts` on one board, written by the
    real writer (replay backend -> parser -> simulator -> trace rows)."""
    from poolbench_data.core.records import Scenario, Shot
    from poolbench_data.llm.player import EvalSettings, evaluate_model, llm_trace_rows
    from poolbench_data.llm.replay import ReplayBackend

    settings = EvalSettings(model="m", backend="replay", samples=len(texts))
    recs, _ = evaluate_model([Scenario.from_row(scen)], ReplayBackend([texts]), settings, player="m", progress=False)
    return llm_trace_rows(recs, {scen["id"]: Shot.from_row(scen["oracle_shot"])}, settings)


def _action(scen: dict, **change) -> str:
    """The Oracle's action text with some fields changed."""
    return json.dumps({**json.loads(scen["oracle_action"]), **change})


def test_score_order():
    from poolbench_data.core.records import Metrics
    from poolbench_data.core.scoring import physics_score as score_of
    from poolbench_data.core.scoring import score_not_fired

    assert score_of(score_not_fired("no-json")) == 0
    assert score_of(Metrics(False, False, True, False, ("no-contact",))) == 1
    assert score_of(Metrics(True, True, True, False, ("scratch",))) == 1  # a foul pot
    assert score_of(Metrics(True, False, False, False)) == 2
    assert score_of(Metrics(True, True, False, False)) == 3


def test_row_score_reads_the_writers_columns(rows):
    scen, traces = rows
    garbage, pot = _llm(scen[0], traces, ["garbage", scen[0]["oracle_action"]])
    assert garbage["parse_status"] == "no-json" and physics_score(garbage) == 0
    assert pot["clean_pot"] and physics_score(pot) == 3


def test_oracle_pairs_only_where_physics_prefers_the_oracle(rows):
    scen, traces = rows
    s = scen[0]
    o = next(t for t in traces if t["scenario_id"] == s["id"] and t["player"] == "oracle")
    assert o["clean_pot"]
    llm = _llm(s, traces, ["garbage", s["oracle_action"]])  # the second ties with the Oracle: no pair
    pairs = oracle_pairs([s], traces + llm)
    assert len(pairs) == 1
    p = pairs[0]
    assert p["chosen"] == [{"role": "assistant", "content": s["oracle_action"]}]
    # The Oracle hits its declared ball with its own aim: 3 + 0.5 + 0.49; garbage: 0.
    assert p["rejected"][0]["content"] == "garbage" and p["margin"] == pytest.approx(3.99)
    assert p["prompt"] == s["prompt"] and p["source"] == "oracle-vs-llm" and p["rejected_model"] == "m"


def test_on_policy_best_against_worst(rows):
    scen, traces = rows
    s = scen[0]
    aim = float(json.loads(s["oracle_action"])["aim_angle_deg"])
    miss = _action(s, aim_angle_deg=round((aim + 180.0) % 360.0, 2))  # straight away from the target
    llm = _llm(s, traces, [miss, s["oracle_action"], miss])
    assert physics_score(llm[1]) == 3.0 and physics_score(llm[0]) < 3.0
    (p,) = on_policy_pairs([s], llm)
    assert (p["chosen"][0]["content"], p["rejected"][0]["content"]) == (s["oracle_action"], miss)
    assert p["margin"] == pytest.approx(fine_score(llm[1]) - fine_score(llm[0]))
    assert fine_score(llm[0]) == pytest.approx(physics_score(llm[0]), abs=1e-3)  # ~180 degrees off: no aim bonus
    assert on_policy_pairs([s], _llm(s, traces, ["garbage", "more garbage"])) == []
    with pytest.raises(ValueError, match="unknown pair source"):
        build_pairs([s], llm, sources=("human",))


def test_fine_score_orders_within_a_level_and_never_across(rows):
    scen, traces = rows
    s = scen[0]
    aim = float(json.loads(s["oracle_action"])["aim_angle_deg"])
    texts = [_action(s, aim_angle_deg=round((aim + d) % 360.0, 2)) for d in (0.0, 3.0, 20.0, 180.0)]
    scored = _llm(s, traces, texts + ["no json"])
    fine = [fine_score(r) for r in scored]
    levels = [physics_score(r) for r in scored]
    for a, b in zip(range(len(scored)), range(1, len(scored))):
        if levels[a] == levels[b]:
            # same level: the aim nearer the Oracle's scores higher
            assert fine[a] > fine[b] or abs(scored[a]["angle_error_deg"]) >= abs(scored[b]["angle_error_deg"])
    assert all(int(f) == lv for f, lv in zip(fine, levels))  # the refinement stays inside its level
    assert fine[-1] == 0.0 and fine[0] > 3.9  # the Oracle's own answer: pot, declared ball, 0 deg
    # A pair is made between two legal contacts that differ only in aim.
    same_level = [r for r in scored[:4] if physics_score(r) == levels[1]]
    assert len({fine_score(r) for r in same_level}) == len(same_level)


def test_failed_requests_never_become_pairs(rows):
    scen, traces = rows
    s = scen[0]
    llm = _llm(s, traces, ["garbage", s["oracle_action"]])
    failed = [{**llm[0], "raw_response": "", "parse_status": "request-failed"}, llm[1]]
    assert not any(p["rejected"][0]["content"] == "" for p in build_pairs([s], traces + failed))
    assert on_policy_pairs([s], failed) == []


def test_shots_whose_simulation_stopped_early_never_become_pairs(rows):
    scen, traces = rows
    s = scen[0]
    llm = _llm(s, traces, ["garbage", s["oracle_action"]])
    assert on_policy_pairs([s], llm)  # as played: the pot over the unparseable answer
    assert "on-policy" in {p["source"] for p in build_pairs([s], traces + llm)}
    stopped = [{**r, "sim_status": "event-limit"} if r["parse_status"] == "ok" else r for r in llm]
    assert on_policy_pairs([s], stopped) == []
    assert "on-policy" not in {p["source"] for p in build_pairs([s], traces + stopped)}
    oracle_stopped = [{**r, "sim_status": "timeout"} if r["player"] == "oracle" else r for r in traces]
    assert oracle_pairs([s], oracle_stopped + llm) == []


def test_physics_reward_has_trl_signature_and_scores_by_simulation(rows):
    scen, _ = rows
    s = scen[0]
    cols = {k: [s[k]] * 3 for k in ("id", "category", "seed", "cue_ball", "balls")}
    completions = [[{"role": "assistant", "content": s["oracle_action"]}],
                   [{"role": "assistant", "content": "no idea"}],
                   s["oracle_action"].replace('"cue_speed": ', '"cue_speed": -')]
    rewards = physics_reward(completions=completions, prompts=[s["prompt"]] * 3, **cols)
    assert rewards == [3.0, 0.0, 0.0]
