import pytest

from poolbench_data.hub.rows import baseline_trace_rows, scenario_row
from poolbench_data.pairs import build_pairs, on_policy_pairs, oracle_pairs, physics_score
from poolbench_data.reward import physics_reward
from poolbench_data.runs import play_baselines


@pytest.fixture(scope="module")
def rows():
    from poolbench_data.scenarios import generate

    runs = [play_baselines(s, ("oracle", "heuristic-centre")) for s in generate(4, base_seed=3)]
    scen = [scenario_row(r, 3, i) for i, r in enumerate(runs)]
    traces = [t for r in runs for t in baseline_trace_rows(r)]
    return scen, traces


def _llm(trace, text, sample, **metrics):
    base = {k: False for k in ("legal_contact", "own_potted", "foul", "opp_or_8_potted", "clean_pot")}
    return {**trace, "player": "m", "player_kind": "llm", "model": "m", "sample": sample, "raw_response": text,
            "parse_status": "ok", "sim_status": "ok", **base, **metrics}


def test_score_order():
    base = {"parse_status": "ok", "sim_status": "ok", "legal_contact": False, "foul": False, "clean_pot": False}
    assert physics_score({**base, "parse_status": "no-json", "sim_status": "not-fired", "foul": True}) == 0
    assert physics_score({**base, "foul": True}) == 1
    assert physics_score({**base, "foul": True, "legal_contact": True, "own_potted": True}) == 1  # foul pot
    assert physics_score({**base, "legal_contact": True}) == 2
    assert physics_score({**base, "legal_contact": True, "clean_pot": True}) == 3


def test_oracle_pairs_only_where_physics_prefers_the_oracle(rows):
    scen, traces = rows
    s = scen[0]
    o = next(t for t in traces if t["scenario_id"] == s["id"] and t["player"] == "oracle")
    assert o["clean_pot"]
    llm = [_llm(o, "garbage", 0, foul=True, parse_status="no-json", sim_status="not-fired"),
           _llm(o, s["oracle_action"], 1, legal_contact=True, own_potted=True, clean_pot=True)]  # a tie: no pair
    pairs = oracle_pairs([s], traces + llm)
    assert len(pairs) == 1
    p = pairs[0]
    assert p["chosen"] == [{"role": "assistant", "content": s["oracle_action"]}]
    assert p["rejected"][0]["content"] == "garbage" and p["margin"] == 3.0
    assert p["prompt"] == s["prompt"] and p["source"] == "oracle-vs-llm" and p["rejected_model"] == "m"


def test_on_policy_best_against_worst(rows):
    scen, traces = rows
    s = scen[1]
    t = next(t for t in traces if t["scenario_id"] == s["id"])
    llm = [_llm(t, "a", 0, foul=True), _llm(t, "b", 1, legal_contact=True), _llm(t, "c", 2, foul=True)]
    (p,) = on_policy_pairs([s], llm)
    assert (p["chosen"][0]["content"], p["rejected"][0]["content"], p["margin"]) == ("b", "a", 1.0)
    same = [_llm(t, "a", 0, foul=True), _llm(t, "c", 1, foul=True)]
    assert on_policy_pairs([s], same) == []
    with pytest.raises(ValueError, match="unknown pair source"):
        build_pairs([s], llm, sources=("human",))


def test_physics_reward_has_trl_signature_and_scores_by_simulation(rows):
    scen, _ = rows
    s = scen[0]
    cols = {k: [s[k]] * 3 for k in ("id", "category", "seed", "cue_ball", "balls")}
    completions = [[{"role": "assistant", "content": s["oracle_action"]}],
                   [{"role": "assistant", "content": "no idea"}],
                   s["oracle_action"].replace('"cue_speed": ', '"cue_speed": -')]
    rewards = physics_reward(completions=completions, prompts=[s["prompt"]] * 3, **cols)
    assert rewards == [3.0, 0.0, 0.0]
