"""Tool-track preference pairs (the `pairs_tools` config) from a tool-using
model's own samples.

The samples come from the real `poolbench eval --tools --samples 4` on a
dataset's train boards, against a loopback OpenAI-compatible server whose
scripted "model" answers the four samples differently: the Oracle's ball and
pocket; the same call worded differently, then a soft shot; the same ball at
another pocket; prose. The tool, the parser and the simulator are the
project's own; the pairs are built by `builders/build_pairs.py --tool_eval_dir`
and read back with `load_dataset`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from poolbench_data.cli import main as poolbench
from poolbench_data.core.records import Scenario, Shot
from poolbench_data.core.table import POCKET_IDS
from poolbench_data.llm.tools import MAX_CALLS, TOOL_NOTE, TOOL_VERSION, tool_answer, tool_calls, turn_result
from poolbench_data.demos.tools import call_text, clear
from poolbench_data.protocol.prompts import format_action
from test_experiments import _Recorder, recording_server
from test_tool_sft import _load, stop_every_simulation

REPO = Path(__file__).resolve().parents[1]
SOFT = 2.0  # the second sample's speed


build_pairs = _load("builders/build_pairs")


class _Sampler(_Recorder):
    """Answers a request for n samples with n different messages: server.reply(messages, i)."""

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        self.server.requests.append(body)
        choices = [{"index": i, "message": self.server.reply(body["messages"], i), "finish_reason": "stop"}
                   for i in range(body.get("n", 1))]
        self._send(200, {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": choices,
                         "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})


def _structured(ball: str, pocket: str | None) -> dict:
    """A structured call; pocket None asks for the ball's report."""
    args = {"target_ball": ball} if pocket is None else {"target_ball": ball, "pocket": pocket}
    return {"role": "assistant", "content": None, "tool_calls": [{"id": "x", "type": "function", "function": {
        "name": "ghost_ball", "arguments": json.dumps(args)}}]}


def scripted_model(rows: list[dict]):
    boards = {r["prompt"][1]["content"]: r for r in rows}

    def reply(messages: list[dict], i: int) -> dict:
        row = boards[messages[1]["content"]]
        s, oracle = Scenario.from_row(row), Shot.from_row(row["oracle_shot"])
        ball, pocket = oracle.target_ball, oracle.target_pocket
        if messages[-1]["role"] == "user":  # the first turn: four different samples
            others = [p for p in POCKET_IDS if p != pocket]
            other = next((p for p in others if not clear(tool_answer(s, ball, p))), others[0])
            return [_structured(ball, pocket), {"role": "assistant", "content": "Checking. " + call_text(ball, pocket)},
                    _structured(ball, other), {"role": "assistant", "content": "no idea"}][i % 4]
        result = json.loads(messages[-1]["content"])
        speed = SOFT if messages[2]["content"].startswith("Checking.") else oracle.V0
        shot = Shot(phi=result["potting_point_aim_angle_deg"], V0=speed, target_ball=result["target_ball"],
                    target_pocket=result["pocket"])
        return {"role": "assistant", "content": format_action(shot, s)}

    return reply


@pytest.fixture(scope="module")
def sampled(tmp_path_factory):
    """(dataset folder, eval --out folder): 8 train boards, 4 tool-using samples on each."""
    from poolbench_data.hub.build import build_benchmark
    from poolbench_data.hub.folder import read_rows

    root = tmp_path_factory.mktemp("pbpairs") / "poolbench"
    build_benchmark(root, eval_n=1, train_n=8, train_seed=3, players=("oracle",), progress=False)
    out = tmp_path_factory.mktemp("samples")
    with recording_server(scripted_model(read_rows(root, "scenarios", "train")), _Sampler) as (url, _):
        assert poolbench(["eval", "--backend", "openai", "--base_url", url, "--model", "m", "--tools", "--seed", "3",
                          "--n", "8", "--samples", "4", "--temperature", "0.8", "--baselines", "random",
                          "--boards", "0", "--out", str(out), "--quiet"]) == 0
    return root, out


@pytest.fixture(scope="module")
def pairs(sampled) -> list[dict]:
    from datasets import load_dataset

    root, out = sampled
    # The builder's default sources: all four (the scripted model never calls at the cap)
    assert build_pairs.main(["--dataset_dir", str(root), "--tool_eval_dir", str(out)]) == 0
    return list(load_dataset(str(root), "pairs_tools", split="train"))


def test_threads_record_every_word_the_model_wrote(sampled):
    _, out = sampled
    threads = [json.loads(x) for x in (out / "tool_calls.jsonl").read_text().splitlines()]
    assert len(threads) == 32
    worded = [t for t in threads if t["sample"] == 1]
    assert all(t["turns"][0].startswith("Checking. <tool_call>") for t in worded)
    assert all(t["turns"] == [] and t["final_response"] == "no idea" for t in threads if t["sample"] == 3)


def test_pairs_part_where_the_choices_do_and_the_physics_orders_them(pairs):
    assert pairs and {p["source"] for p in pairs} == {"tool-on-policy", "tool-recovery", "tool-answer"}
    on_policy = [p for p in pairs if p["source"] == "tool-on-policy"]
    assert {p["turn"] for p in on_policy} == {0, 1}  # a different pocket called; the same call, a softer answer
    for p in on_policy:
        assert p["chosen_score"] > p["rejected_score"] and p["margin"] > 0
        assert p["chosen_outcome"]["score"] == p["chosen_score"]
        assert p["prompt"][0]["role"] == "system" and p["prompt"][0]["content"].endswith(TOOL_NOTE)
        (chosen,), (rejected,) = p["chosen"], p["rejected"]
        assert chosen["role"] == rejected["role"] == "assistant" and "no idea" not in (chosen["content"],
                                                                                         rejected["content"])
        assert p["chosen_decision"] != p["rejected_decision"]
        if p["turn"] == 0:  # the first call: the prompt is the board, both sides call the tool
            assert [m["role"] for m in p["prompt"]] == ["system", "user"]
            assert tool_calls(chosen["content"]) and tool_calls(rejected["content"])
        else:  # the answer after the tool's result: the same call before it, a different speed
            assert [m["role"] for m in p["prompt"]][-2:] == ["assistant", "tool"]
            speeds = {json.loads(side["content"])["cue_speed"] for side in (chosen, rejected)}
            assert SOFT in speeds and len(speeds) == 2


def test_recovery_pairs_call_again_where_the_model_answered_a_blocked_shot(pairs, sampled):
    from poolbench_data.hub.folder import read_rows

    rows = {r["id"]: r for r in read_rows(sampled[0], "scenarios", "train")}
    recovery = [p for p in pairs if p["source"] == "tool-recovery"]
    assert recovery
    for p in recovery:
        s = Scenario.from_row(rows[p["scenario_id"]])
        assert [m["role"] for m in p["prompt"]][-2:] == ["assistant", "tool"] and p["turn"] == 1
        assert not clear(json.loads(p["prompt"][-1]["content"]))  # the model had been told the shot is blocked
        (chosen,), (rejected,) = p["chosen"], p["rejected"]
        (call,) = tool_calls(chosen["content"])
        assert clear(tool_answer(s, call["arguments"]["target_ball"], call["arguments"].get("pocket")))
        assert tool_calls(rejected["content"]) == [] and "target_ball" in json.loads(rejected["content"])
        assert p["chosen_outcome"]["clean_pot"] and not p["rejected_outcome"]["clean_pot"]
        assert p["chosen_model"] == "tool_oracle" and p["margin"] > 0
    # one pair per distinct conversation: the scripted samples 2 are alike on a board, and pair once
    assert len({(p["scenario_id"], p["rejected"][0]["content"]) for p in recovery}) == len(recovery)


def test_answer_pairs_answer_where_the_tool_showed_a_clear_shot(pairs, sampled):
    from poolbench_data.hub.folder import read_rows

    rows = {r["id"]: r for r in read_rows(sampled[0], "scenarios", "train")}
    answers = [p for p in pairs if p["source"] == "tool-answer"]
    # the mirror of the recovery pairs, as many of each: a call is as often chosen as rejected
    assert answers and len(answers) == sum(p["source"] == "tool-recovery" for p in pairs)
    for p in answers:
        s = Scenario.from_row(rows[p["scenario_id"]])
        assert [m["role"] for m in p["prompt"]][-2:] == ["assistant", "tool"]
        assert clear(json.loads(p["prompt"][-1]["content"]))  # the model had been told the shot is open
        (chosen,), (rejected,) = p["chosen"], p["rejected"]
        assert tool_calls(chosen["content"]) == [] and p["chosen_outcome"]["legal_contact"]
        (call,) = tool_calls(rejected["content"])
        assert not clear(tool_answer(s, call["arguments"]["target_ball"], call["arguments"].get("pocket")))
        assert p["margin"] > 0 and p["rejected_model"] == "further_call"


def test_recovery_respects_the_sources_and_the_call_cap(sampled):
    from poolbench_data.hub.folder import read_rows
    from poolbench_data.players.traces import load_traces
    from poolbench_data.pairs.tools import tool_pairs

    root, out = sampled
    scenarios = read_rows(root, "scenarios", "train")
    threads, traces = (load_traces(out / f, "") for f in ("tool_calls.jsonl", "llm_traces.jsonl"))
    assert {p["source"] for p in tool_pairs(scenarios, threads, traces, ["tool-on-policy"])} == {"tool-on-policy"}
    # The same threads as an eval with --max_tool_calls 1 records them: the one result says no calls are left.
    capped_threads = [{**t, "calls": [{**c, "result": {**c["result"], "calls_left": 0}} for c in t["calls"]]}
                      for t in threads]
    # at the eval's cap the model's next turn is read as its answer: a call taught there could never run
    capped = tool_pairs(scenarios, capped_threads, traces, ["tool-recovery"])
    alone = tool_pairs(scenarios, threads, traces, ["tool-recovery"])
    assert capped == [] and alone
    # at the cap a further call is read as the action: nothing is fired, the answer wins by more
    answers = tool_pairs(scenarios, threads, traces, ["tool-answer"])
    at_cap = tool_pairs(scenarios, capped_threads, traces, ["tool-answer"])
    assert len(at_cap) == len(answers) and all(p["rejected_outcome"]["parse_status"] != "ok" for p in at_cap)
    assert all(a["margin"] <= c["margin"] for a, c in zip(answers, at_cap))
    with pytest.raises(ValueError, match="unknown tool pair source"):
        tool_pairs(scenarios, threads, traces, ["on-policy"])


def test_a_level_gap_keeps_only_pairs_whose_outcomes_differ_in_kind(sampled, capsys):
    from poolbench_data.hub.folder import read_rows
    from poolbench_data.players.traces import load_traces
    from poolbench_data.pairs.text import TARGET_BONUS, AIM_BONUS
    from poolbench_data.pairs.tools import tool_pairs

    root, out = sampled
    scenarios = read_rows(root, "scenarios", "train")
    threads, traces = (load_traces(out / f, "") for f in ("tool_calls.jsonl", "llm_traces.jsonl"))
    assert TARGET_BONUS + AIM_BONUS < 1  # so a fine score's integer part is its level
    every = tool_pairs(scenarios, threads, traces, ["tool-on-policy"])
    gap = {g: tool_pairs(scenarios, threads, traces, ["tool-on-policy"], min_level_gap=g) for g in (1, 2, 4)}
    assert every == tool_pairs(scenarios, threads, traces, ["tool-on-policy"], min_level_gap=0)
    for g, kept in gap.items():
        assert kept == [p for p in every if int(p["chosen_score"]) - int(p["rejected_score"]) >= g]
    assert gap[1] and gap[4] == []
    with pytest.raises(ValueError, match="min_level_gap"):
        tool_pairs(scenarios, threads, traces, min_level_gap=-1)
    err = _fails(capsys, "--dataset_dir", str(root), "--tool_eval_dir", str(out), "--tool_min_level_gap", "5")
    assert "--tool_min_level_gap" in err


@pytest.mark.parametrize("pocket", ["rt", None])
def test_at_the_cap_the_action_is_chosen_over_another_call(sampled, tmp_path, pocket):
    from poolbench_data.hub.folder import read_rows
    from poolbench_data.players.traces import load_traces
    from poolbench_data.pairs.tools import tool_pairs
    from poolbench_data.protocol.parsing import parse_action

    root, _ = sampled
    scenarios = read_rows(root, "scenarios", "train")
    boards = {r["prompt"][1]["content"]: Scenario.from_row(r) for r in scenarios}

    def reply(messages: list[dict], i: int) -> dict:  # a model that only ever calls, another own ball each turn
        own = [b.id for b in boards[messages[1]["content"]].own()]
        return _structured(own[sum(m["role"] == "tool" for m in messages) % len(own)], pocket)

    out = tmp_path / "capped"
    with recording_server(reply, _Sampler) as (url, _):
        assert poolbench(["eval", "--backend", "openai", "--base_url", url, "--model", "m", "--tools", "--seed", "3",
                          "--n", "8", "--samples", "2", "--max_tool_calls", "2", "--baselines", "random",
                          "--boards", "0", "--out", str(out), "--quiet"]) == 0
    threads, traces = (load_traces(out / f, "") for f in ("tool_calls.jsonl", "llm_traces.jsonl"))
    assert tool_pairs(scenarios, threads, traces, ["tool-on-policy"]) == []  # no answer parsed: nothing to compare
    pairs = tool_pairs(scenarios, threads, traces, ["tool-at-cap"])
    # both samples are the same conversation: one pair a board, where the action beat the call at all
    assert pairs and len({p["scenario_id"] for p in pairs}) == len(pairs)
    for p in pairs:
        s = Scenario.from_row(next(r for r in scenarios if r["id"] == p["scenario_id"]))
        results = [json.loads(m["content"]) for m in p["prompt"] if m["role"] == "tool"]
        assert [r["calls_left"] for r in results] == [1, 0] and p["turn"] == 2
        (chosen,), (rejected,) = p["chosen"], p["rejected"]
        assert tool_calls(rejected["content"]) and p["rejected_outcome"]["parse_status"] != "ok"
        shot = parse_action(chosen["content"], s).shot
        shown = [(r["target_ball"], x) for r in results if "error" not in r
                 for x in ([r["pocket"]] if pocket else [x["pocket"] for x in r["shots"]])]
        shown += [(r["target_ball"], r["kick"]["pocket"]) for r in results if r.get("kick")]  # a report's kick
        assert (shot.target_ball, shot.target_pocket) in shown and p["chosen_model"] == "tool_oracle"
        assert p["chosen_outcome"]["parse_status"] == "ok" and p["margin"] > 0
        assert p["chosen_decision"].startswith("answer") and p["rejected_decision"].startswith("call")
        # a report's call is described by its ball alone (its decision: which ball), one pocket's by both
        assert p["rejected_decision"].endswith(")" if pocket is None else ", rt)") and "None" not in \
            p["rejected_decision"]


def test_at_the_cap_after_a_blocked_report_the_action_is_chosen_over_a_call(sampled, pairs):
    from poolbench_data.hub.folder import read_rows
    from poolbench_data.players.traces import load_traces
    from poolbench_data.pairs.tools import tool_pairs
    from poolbench_data.protocol.parsing import parse_action

    root, out = sampled
    scenarios = read_rows(root, "scenarios", "train")
    boards = {r["id"]: Scenario.from_row(r) for r in scenarios}
    threads, traces = (load_traces(out / f, "") for f in ("tool_calls.jsonl", "llm_traces.jsonl"))
    cap = tool_pairs(scenarios, threads, traces, ["tool-cap-answer"])
    assert cap and not any(p["source"] == "tool-cap-answer" for p in pairs)  # not a default source
    assert len({json.dumps(p["prompt"]) for p in cap}) == len(cap)
    for p in cap:
        s = boards[p["scenario_id"]]
        tools = [json.loads(m["content"]) for m in p["prompt"] if m["role"] == "tool"]
        assert len(tools) == MAX_CALLS == p["turn"] and tools[-1]["calls_left"] == 0 and not clear(tools[-1])
        for k, m in enumerate(p["prompt"]):  # every answer in the prompt is the tool's, counting down to the cap
            if m["role"] == "tool":
                (call,) = tool_calls(p["prompt"][k - 1]["content"])
                made = sum(1 for x in p["prompt"][:k] if x["role"] == "assistant" and tool_calls(x["content"]))
                assert json.loads(m["content"]) == turn_result(s, call, MAX_CALLS - made)
        called = {t["target_ball"] for t in tools if "error" not in t}
        (chosen,), (rejected,) = p["chosen"], p["rejected"]
        (further,) = tool_calls(rejected["content"])
        assert further["arguments"]["target_ball"] not in called and p["rejected_outcome"]["parse_status"] != "ok"
        assert parse_action(chosen["content"], s).status == "ok" and p["margin"] > 0
        assert p["chosen_decision"].startswith("answer") and p["rejected_decision"].startswith("call")


def test_a_thread_that_answered_at_the_cap_keeps_its_own_conversation(sampled, tmp_path):
    from poolbench_data.hub.folder import read_rows
    from poolbench_data.players.traces import load_traces
    from poolbench_data.pairs.text import fine_score
    from poolbench_data.pairs.tools import tool_pairs
    from poolbench_data.demos.tools import cap_answer

    root, _ = sampled
    scenarios = read_rows(root, "scenarios", "train")
    boards = {r["prompt"][1]["content"]: Scenario.from_row(r) for r in scenarios}

    def reply(messages: list[dict], i: int) -> dict:
        """Calls own balls to the cap, then on half the boards the demonstrations' action there, on the others a
        soft shot from the last report."""
        s = boards[messages[1]["content"]]
        tools = [json.loads(m["content"]) for m in messages if m["role"] == "tool"]
        own_ids = [b.id for b in s.own()]
        if not tools or tools[-1]["calls_left"] > 0:
            return _structured(own_ids[len(tools) % len(own_ids)], None)
        if len(messages[1]["content"]) % 2:
            return {"role": "assistant", "content": cap_answer(s, [(b, None) for b in own_ids[:MAX_CALLS]])[0]}
        last = next(t for t in reversed(tools) if "error" not in t)
        shot = Shot(phi=last["shots"][0]["potting_point_aim_angle_deg"], V0=SOFT, target_ball=last["target_ball"],
                    target_pocket=last["shots"][0]["pocket"])
        return {"role": "assistant", "content": format_action(shot, s)}

    out = tmp_path / "at_cap"
    with recording_server(reply, _Sampler) as (url, _):
        assert poolbench(["eval", "--backend", "openai", "--base_url", url, "--model", "m", "--tools", "--seed", "3",
                          "--n", "8", "--samples", "1", "--baselines", "random", "--boards", "0", "--out", str(out),
                          "--quiet"]) == 0
    threads, traces = (load_traces(out / f, "") for f in ("tool_calls.jsonl", "llm_traces.jsonl"))
    own = {t["scenario_id"]: (th, t) for th in threads for t in traces if t["scenario_id"] == th["scenario_id"]}
    cap = tool_pairs(scenarios, threads, traces, ["tool-cap-answer"])
    assert {p["chosen_model"] for p in cap} == {"tool_oracle", "m"}  # both cases happen
    for p in cap:
        thread, trace = own[p["scenario_id"]]
        # the prompt is the model's own three calls, nothing added; the chosen action is its own unless the
        # demonstrations' action at the cap scores higher
        assert [m["content"] for m in p["prompt"] if m["role"] == "assistant"] == thread["turns"]
        assert p["turn"] == MAX_CALLS and not clear(thread["calls"][-1]["result"])
        if p["chosen_model"] == "tool_oracle":
            assert p["chosen_score"] > fine_score(trace)
        else:
            assert p["chosen"][0]["content"] == thread["final_response"] and p["chosen_score"] == fine_score(trace)


def test_every_tool_turn_in_a_prompt_is_the_tools_answer(pairs, sampled):
    from poolbench_data.hub.folder import read_rows

    boards = {r["id"]: Scenario.from_row(r) for r in read_rows(sampled[0], "scenarios", "train")}
    for p in pairs:
        msgs = p["prompt"]
        for k, m in enumerate(msgs):
            if m["role"] == "tool":
                (call,) = tool_calls(msgs[k - 1]["content"])
                made = sum(1 for x in msgs[:k] if x["role"] == "assistant" and tool_calls(x["content"]))
                assert json.loads(m["content"]) == turn_result(boards[p["scenario_id"]], call, MAX_CALLS - made)


def _rewritten(out: Path, dest: Path, edit) -> Path:
    shutil.copytree(out, dest)
    path = dest / "tool_calls.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(edit(r)) + "\n" for r in rows))
    return dest


def _fails(capsys, *argv) -> str:
    assert build_pairs.main(list(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1
    return err


def test_bad_sample_folders_are_refused_in_one_line(sampled, tmp_path, capsys):
    root, out = sampled
    err = _fails(capsys, "--dataset_dir", str(root), "--tool_eval_dir", str(tmp_path / "nowhere"))
    assert "--tool_eval_dir" in err and "tool_calls.jsonl" in err

    def tamper(r):  # a tool answer the tool does not give (another tool version)
        for c in r["calls"]:
            if "aim_angle_deg" in c["result"]:
                c["result"]["aim_angle_deg"] += 1
        return r

    err = _fails(capsys, "--dataset_dir", str(root), "--tool_eval_dir", str(_rewritten(out, tmp_path / "t", tamper)))
    assert "recorded tool answer differs" in err

    def without_calls_left(r):  # a tool that does not say calls_left: the model saw other turns
        return {**r, "calls": [{**c, "result": {k: v for k, v in c["result"].items() if k != "calls_left"}}
                               for c in r["calls"]]}

    err = _fails(capsys, "--dataset_dir", str(root), "--tool_eval_dir",
                 str(_rewritten(out, tmp_path / "n", without_calls_left)))
    assert "recorded tool answer differs" in err
    # threads of another tool version (the model read other answers), and threads that record none (v1's)
    err = _fails(capsys, "--dataset_dir", str(root), "--tool_eval_dir",
                 str(_rewritten(out, tmp_path / "v", lambda r: {**r, "tool_version": "ghost_ball-v2"})))
    assert "recorded with tool ghost_ball-v2" in err and TOOL_VERSION in err
    unversioned = _rewritten(out, tmp_path / "u", lambda r: {k: v for k, v in r.items() if k != "tool_version"})
    # a thread that records no version is read as v1's (no kicks): refused as v1's
    assert TOOL_VERSION != "ghost_ball-v1"
    err = _fails(capsys, "--dataset_dir", str(root), "--tool_eval_dir", str(unversioned))
    assert "recorded with tool ghost_ball-v1" in err
    err = _fails(capsys, "--dataset_dir", str(root), "--tool_eval_dir",
                 str(_rewritten(out, tmp_path / "f", lambda r: {**r, "scenario_id": "pb0-000000"})))
    assert "not in" in err and "pb0-000000" in err
    old = _rewritten(out, tmp_path / "o", lambda r: {k: v for k, v in r.items() if k != "turns"})
    assert "no `turns`" in _fails(capsys, "--dataset_dir", str(root), "--tool_eval_dir", str(old))
    for bad in ("on-policy", ","):
        err = _fails(capsys, "--dataset_dir", str(root), "--tool_eval_dir", str(out), "--tool_sources", bad)
        assert "--tool_sources" in err and "tool-recovery" in err


# --- DPO on the pairs: the tools recipe, the tiny model -------------------------


@pytest.fixture(scope="module")
def datasets_cache(tmp_path_factory):
    """An empty `datasets` cache: a folder named `poolbench` built by another run would be read from it."""
    import datasets

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path_factory.mktemp("hf_datasets_cache"))
        yield


@pytest.mark.slow
def test_dpo_recipe_trains_on_the_model_turn_only(pairs, sampled, datasets_cache, tiny_model, tmp_path):
    pytest.importorskip("trl")
    dpo = _load("training/dpo")
    model = tiny_model
    argv = ["--config", str(REPO / "training" / "recipes" / "dpo-tools-smollm2-135m-cpu.yaml"),
            "--model_name_or_path", str(model), "--dataset_name", str(sampled[0]), "--output_dir",
            str(tmp_path / "dpo"), "--max_steps", "2", "--gradient_accumulation_steps", "1", "--save_steps", "100",
            "--disable_tqdm", "true"]
    parsed = dpo.make_parser().parse_args_and_config(argv)
    trainer, tokenizer, setup = dpo.make_trainer(*parsed)
    assert setup["kept"] == len(pairs)
    for row, raw in zip(trainer.train_dataset, pairs):
        prompt = tokenizer.apply_chat_template(raw["prompt"], tokenize=False, add_generation_prompt=True)
        assert tokenizer.decode(row["prompt_ids"]) == prompt  # the tool's answers sit in the prompt, unscored
        for side in ("chosen", "rejected"):
            assert tokenizer.decode(row[f"{side}_ids"]) == raw[side][0]["content"] + "<|im_end|>\n"
        assert "ref_chosen_logps" in row  # precomputed once, no reference model held
    result = dpo.main(argv)
    assert result.metrics["train_pairs"] == len(pairs) and (tmp_path / "dpo" / "merged").is_dir()


def test_the_builder_trims_call_against_answer_pairs_to_the_dpo_checks_share(sampled):
    from poolbench_data.hub.folder import read_rows
    from poolbench_data.players.traces import load_traces
    from poolbench_data.checks.pairs import MAX_TURN_KIND_SHARE, turn_kinds
    from poolbench_data.pairs.turn_kinds import balance_kinds
    from poolbench_data.pairs.tools import tool_pairs

    root, out = sampled
    scenarios = read_rows(root, "scenarios", "train")
    threads, traces = (load_traces(out / f, "") for f in ("tool_calls.jsonl", "llm_traces.jsonl"))
    recovery = tool_pairs(scenarios, threads, traces, ["tool-recovery"])
    assert recovery and turn_kinds(recovery)["answer"] == 0  # every chosen side a call
    assert balance_kinds(recovery) == []  # nothing to balance them with: none kept
    mixed = recovery + tool_pairs(scenarios, threads, traces, ["tool-answer"])[:1]
    kept = balance_kinds(mixed)
    counts = turn_kinds(kept)
    assert counts["answer"] == 1 and counts["call"] == int(MAX_TURN_KIND_SHARE / (1 - MAX_TURN_KIND_SHARE))
    assert [p for p in mixed if p in kept] == kept  # order kept, nothing added
    dropped = [p for p in mixed if p not in kept]
    assert max(p["margin"] for p in dropped) <= min(p["margin"] for p in kept if p["source"] == "tool-recovery")


def test_robust_scores_average_the_physics_over_the_jitter_grid(sampled):
    from poolbench_data.core.scoring import physics_score
    from poolbench_data.core.vocab import V0_RANGE
    from poolbench_data.hub.folder import read_rows
    from poolbench_data.players.play import play_shot
    from poolbench_data.pairs.noise import AIM_JITTER, SPEED_JITTER, jittered, robust_score

    shot = Shot(phi=359.95, V0=8.0, b=0.25, target_ball="3", target_pocket="lb")
    grid = jittered(shot)
    assert len(grid) == 9 and shot in grid
    assert {round(s.phi, 6) for s in grid} == {round(359.95 - AIM_JITTER, 6), 359.95, round(0.05, 6)}
    assert {s.V0 for s in grid} == {8.0 - SPEED_JITTER, 8.0, 8.0 + SPEED_JITTER}
    assert {(s.b, s.target_ball, s.target_pocket) for s in grid} == {(0.25, "3", "lb")}
    top = jittered(Shot(phi=10.0, V0=V0_RANGE[1]))  # never past the protocol's range: the grid narrows
    assert len(top) == 6 and max(s.V0 for s in top) == V0_RANGE[1]

    root, _ = sampled
    row = read_rows(root, "scenarios", "train")[0]
    s, oracle = Scenario.from_row(row), Shot.from_row(row["oracle_shot"])
    want = sum(physics_score(play_shot(s, x, player="p", kind="llm").metrics) for x in jittered(oracle)) / 9
    assert robust_score(s, {"action": oracle.to_row()}) == pytest.approx(want)
    assert robust_score(s, {"action": None}) == 0.0  # never fired


@pytest.mark.slow
def test_robust_pairs_keep_only_choices_better_on_average(sampled, monkeypatch, capsys):
    import poolbench_data.pairs.tools as tp
    from poolbench_data.hub.folder import read_rows
    from poolbench_data.pairs.turn_kinds import balance_kinds
    from poolbench_data.players.traces import load_traces
    from poolbench_data.pairs.noise import MIN_MARGIN

    root, out = sampled
    scenarios = read_rows(root, "scenarios", "train")
    threads, traces = (load_traces(out / f, "") for f in ("tool_calls.jsonl", "llm_traces.jsonl"))
    sources = build_pairs.ScriptArguments.tool_sources.split(",")  # the builder's, so its run below is comparable
    every = tp.tool_pairs(scenarios, threads, traces, sources)
    robust = tp.tool_pairs(scenarios, threads, traces, sources, robust=True)
    on_policy = [sum(p["source"] == tp.SOURCE for p in found) for found in (robust, every)]
    assert 0 < on_policy[0] < on_policy[1]  # some outcomes do not hold up under the jitter
    others = [p for p in every if p["source"] != tp.SOURCE]
    assert [p for p in every if p in robust] == robust and [p for p in robust if p["source"] != tp.SOURCE] == others
    # The filter reads robust_score: level scores that agree with the outcome keep every pair, flat ones none.
    seen = []
    monkeypatch.setattr(tp, "robust_score", lambda s, trace: seen.append(trace) or 3.0)
    assert tp.tool_pairs(scenarios, threads, traces, sources, robust=True) == others and seen
    monkeypatch.setattr(tp, "robust_score", lambda s, trace: tp.fine_score(trace) * MIN_MARGIN / 1e-7)  # any gap
    assert tp.tool_pairs(scenarios, threads, traces, sources, robust=True) == every
    monkeypatch.undo()
    assert build_pairs.main(["--dataset_dir", str(root), "--tool_eval_dir", str(out), "--tool_robust"]) == 0
    provenance = json.loads((root / "provenance.json").read_text())
    assert provenance["pairs_tools"]["settings"]["robust"] is True
    assert f"{len(balance_kinds(robust))} pairs" in capsys.readouterr().out


def test_same_kind_leaves_out_on_policy_calls_set_against_answers(sampled, capsys):
    from poolbench_data.hub.folder import read_rows
    from poolbench_data.players.traces import load_traces
    from poolbench_data.pairs.turn_kinds import balance_kinds, same_kind
    from poolbench_data.pairs.tools import ANSWER, RECOVERY, SOURCE, tool_pairs

    root, out = sampled
    row = read_rows(root, "scenarios", "train")[0]
    s, oracle = Scenario.from_row(row), Shot.from_row(row["oracle_shot"])
    call, answer = call_text(oracle.target_ball), format_action(oracle, s)

    def pair(source, chosen, rejected):
        return {"source": source, "chosen": [{"role": "assistant", "content": chosen}],
                "rejected": [{"role": "assistant", "content": rejected}]}

    rows = [pair(SOURCE, call, answer), pair(SOURCE, answer, answer), pair(RECOVERY, call, answer),
            pair(SOURCE, answer, call), pair(SOURCE, call, call), pair(ANSWER, answer, call)]
    assert same_kind(rows) == [rows[k] for k in (1, 2, 4, 5)]  # on-policy call-vs-answer out, order kept
    # The scripted samples part at a call's pocket or an answer's speed, never at a call against an answer.
    scenarios = read_rows(root, "scenarios", "train")
    threads, traces = (load_traces(out / f, "") for f in ("tool_calls.jsonl", "llm_traces.jsonl"))
    every = tool_pairs(scenarios, threads, traces, build_pairs.ScriptArguments.tool_sources.split(","))
    assert same_kind(every) == every
    assert build_pairs.main(["--dataset_dir", str(root), "--tool_eval_dir", str(out), "--tool_same_kind"]) == 0
    assert f"{len(balance_kinds(every))} pairs" in capsys.readouterr().out
    assert json.loads((root / "provenance.json").read_text())["pairs_tools"]["settings"]["same_kind"] is True


def test_with_speed_rewrites_only_the_cue_speed():
    from poolbench_data.pairs.speed import with_speed

    answer = '{"target_ball": "2", "target_pocket": [0.1, 0.2], "aim_angle_deg": 348.1, "cue_speed": 8.0}'
    assert json.loads(with_speed(answer, 5.0)) == {**json.loads(answer), "cue_speed": 5.0}
    assert [with_speed(a, 5.0) for a in ("no idea", "[8.0]", '{"aim_angle_deg": 1.0}')] == [None] * 3


def _speed(p: dict, side: str) -> float:
    return json.loads(p[side][0]["content"])["cue_speed"]


def test_speed_pairs_hold_the_answer_and_let_the_physics_pick_the_speed(sampled, monkeypatch):
    import poolbench_data.pairs.speed as ts
    from poolbench_data.hub.folder import read_rows
    from poolbench_data.players.traces import load_traces
    from poolbench_data.pairs.noise import MIN_MARGIN

    root, out = sampled
    scenarios = read_rows(root, "scenarios", "train")[:2]
    threads, traces = (load_traces(out / f, "") for f in ("tool_calls.jsonl", "llm_traces.jsonl"))
    # distinct answers after an open report ("no idea" never enters a pair; an answer after a closed one neither)
    answers = {t["final_response"]: t for t in threads if t["scenario_id"] in {s["id"] for s in scenarios}
               and t["final_response"].startswith("{") and clear(t["calls"][-1]["result"])}
    assert any(t["final_response"].startswith("{") and not clear(t["calls"][-1]["result"]) for t in threads)
    found = ts.speed_pairs(scenarios, threads, traces)
    assert found and {p["source"] for p in found} == {ts.SPEED} and len(found) <= len(answers)
    for p in found:
        chosen, rejected = (json.loads(p[side][0]["content"]) for side in ("chosen", "rejected"))
        assert {**chosen, "cue_speed": 0} == {**rejected, "cue_speed": 0}  # only the speed differs
        own = [side for side in ("chosen", "rejected") if p[side][0]["content"] in answers]
        assert len(own) == 1 and p[f"{'rejected' if own == ['chosen'] else 'chosen'}_model"] == ts.EDIT
        assert _speed(p, "chosen" if own == ["rejected"] else "rejected") in ts.SPEEDS
        assert p["chosen_robust"] - p["rejected_robust"] >= MIN_MARGIN and clear(json.loads(p["prompt"][-1]["content"]))
    # The side chosen is the one robust_score prefers, the model's own speed or the other; flat scores: no pair.
    monkeypatch.setattr(ts, "robust_score", lambda s, trace: -trace["action"]["V0"])
    slower = ts.speed_pairs(scenarios, threads, traces)
    assert len(slower) == len(answers) and all(_speed(p, "chosen") < _speed(p, "rejected") for p in slower)
    assert any(p["chosen_model"] != ts.EDIT for p in slower) and any(p["chosen_model"] == ts.EDIT for p in slower)
    assert slower == ts.speed_pairs(scenarios, threads, traces)  # the other speed's draw is seeded
    monkeypatch.setattr(ts, "robust_score", lambda s, trace: trace["action"]["V0"])
    assert all(_speed(p, "chosen") > _speed(p, "rejected") for p in ts.speed_pairs(scenarios, threads, traces))
    five = ts.speed_pairs(scenarios, threads, traces, speeds=(5.0,))
    assert five and all(5.0 in (_speed(p, "chosen"), _speed(p, "rejected")) for p in five)
    with pytest.raises(ValueError, match="speeds"):
        ts.speed_pairs(scenarios, threads, traces, speeds=(13.0,))
    monkeypatch.setattr(ts, "robust_score", lambda s, trace: 1.0)
    assert ts.speed_pairs(scenarios, threads, traces) == []


@pytest.mark.slow
def test_speed_pairs_from_worker_processes_are_the_same_pairs_in_the_same_order(sampled, capsys):
    import poolbench_data.pairs.speed as ts
    from poolbench_data.hub.folder import read_rows
    from poolbench_data.players.traces import load_traces

    root, out = sampled
    scenarios = read_rows(root, "scenarios", "train")[-2:]  # two boards with speed pairs: 9 simulations an answer
    ids = {r["id"] for r in scenarios}
    threads, traces = ([r for r in load_traces(out / f, "") if r["scenario_id"] in ids]
                       for f in ("tool_calls.jsonl", "llm_traces.jsonl"))
    one = ts.speed_pairs(scenarios, threads, traces)
    assert len({p["prompt"][1]["content"] for p in one}) > 1  # several boards, so the order is tested
    assert ts.speed_pairs(scenarios, threads, traces, workers=2) == one
    assert build_pairs.main(["--dataset_dir", str(root), "--tool_eval_dir", str(out), "--tool_sources", "tool-speed",
                             "--workers", "-1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --workers must be >= 0") and len(err.splitlines()) == 1


def test_builder_writes_speed_pairs_beside_the_others(sampled, monkeypatch, capsys):
    import poolbench_data.pairs.speed as ts
    from poolbench_data.hub.folder import read_rows

    root, out = sampled
    monkeypatch.setattr(ts, "robust_score", lambda s, trace: -trace["action"]["V0"])  # slower is better
    assert build_pairs.main(["--dataset_dir", str(root), "--tool_eval_dir", str(out), "--tool_sources",
                             "tool-on-policy,tool-speed", "--workers", "1"]) == 0  # the patch holds in this process
    rows = read_rows(root, "pairs_tools", "train")
    speeds = [p for p in rows if p["source"] == ts.SPEED]
    assert speeds and all(p["chosen_robust"] is not None for p in speeds)
    assert all(p["chosen_robust"] is None for p in rows if p["source"] != ts.SPEED)
    assert f"tool-speed: the slower side chosen in {len(speeds)} of {len(speeds)}" in capsys.readouterr().out
    # The cap source is one of the choices (these samples never answer at the cap: none of its pairs here)
    assert build_pairs.main(["--dataset_dir", str(root), "--tool_eval_dir", str(out), "--tool_sources",
                             "tool-on-policy,tool-cap-speed"]) == 0
    assert {p["source"] for p in read_rows(root, "pairs_tools", "train")} == {"tool-on-policy"}
    capsys.readouterr()
    assert build_pairs.main(["--dataset_dir", str(root), "--tool_eval_dir", str(out), "--tool_sources",
                             "tool-speeds"]) == 2  # a misspelt source names the flag and the choices
    assert "--tool_sources 'tool-speeds'" in capsys.readouterr().err
    for bad in ("13", "fast", "1.5,5", ""):  # refused before any work, in one line naming the flag
        assert build_pairs.main(["--dataset_dir", str(root), "--tool_eval_dir", str(out), "--tool_sources",
                                 "tool-speed", "--tool_speeds", bad]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"error: --tool_speeds {bad!r}") and len(err.splitlines()) == 1
    assert build_pairs.main(["--dataset_dir", str(root), "--tool_eval_dir", str(out), "--tool_sources", "tool-speed",
                             "--tool_speeds", "5", "--workers", "1"]) == 0
    assert json.loads((root / "provenance.json").read_text())["pairs_tools"]["settings"]["speeds"] == [5.0]
    assert {5.0} <= {_speed(p, side) for p in read_rows(root, "pairs_tools", "train") for side in ("chosen",
                                                                                                   "rejected")}


def _kicked_at_the_cap(row: dict, speed: float = 5.0) -> tuple[dict, dict] | None:
    """A thread on `row` that calls the own balls listed to the cap, every report closed, then writes the last
    report's kick at `speed`, and its trace; None where a report is open or the last shows no kick."""
    from poolbench_data.llm.tools import call_of
    from poolbench_data.pairs.tools import _played_row
    from poolbench_data.demos.tools import listed_own

    s = Scenario.from_row(row)
    listed = listed_own(s)[:MAX_CALLS]
    balls = [listed[k % len(listed)] for k in range(MAX_CALLS)]
    calls = [{"arguments": {"target_ball": b}, "result": turn_result(s, call_of(b), MAX_CALLS - 1 - k)}
             for k, b in enumerate(balls)]
    kick = calls[-1]["result"].get("kick")
    if any(clear(c["result"]) for c in calls) or not kick:
        return None
    final = format_action(Shot(phi=kick["aim_angle_deg"], V0=speed, target_ball=balls[-1],
                               target_pocket=kick["pocket"]), s)
    trace = _played_row(row, s, final, "m")
    thread = {"scenario_id": s.id, "player": trace["player"], "sample": 0, "request_failed": False, "calls": calls,
              "turns": [call_text(b) for b in balls], "final_response": final, "tool_version": TOOL_VERSION}
    return thread, trace


def test_cap_speed_pairs_set_the_kick_at_the_cap_against_other_speeds(sampled, monkeypatch):
    import poolbench_data.pairs.speed as ts
    from poolbench_data.hub.folder import read_rows
    from poolbench_data.players.traces import load_traces

    root, out = sampled
    rows = read_rows(root, "scenarios", "train")
    kicked = [(row, *k) for row in rows if (k := _kicked_at_the_cap(row)) is not None]
    assert kicked, "no train board of the fixture has every report closed and a kick"
    threads, traces = [t for _, t, _ in kicked], [tr for _, _, tr in kicked]
    scenarios = [row for row, _, _ in kicked]
    monkeypatch.setattr(ts, "robust_score", lambda s, trace: trace["action"]["V0"])  # faster is better
    found = ts.speed_pairs(scenarios, threads, traces, speeds=(8.0,), at_cap=True)
    assert len(found) == len(kicked) and {p["source"] for p in found} == {ts.CAP_SPEED}
    for p, thread in zip(found, threads):
        chosen, rejected = (json.loads(p[side][0]["content"]) for side in ("chosen", "rejected"))
        assert {**chosen, "cue_speed": 0} == {**rejected, "cue_speed": 0}
        assert (chosen["cue_speed"], rejected["cue_speed"]) == (8.0, 5.0)  # the kick at 8 m/s over the model's 5
        assert p["rejected"][0]["content"] == thread["final_response"] and p["chosen_model"] == ts.EDIT
        last = json.loads(p["prompt"][-1]["content"])
        assert last["calls_left"] == 0 and not clear(last) and last["kick"]
    # The open-report source leaves these answers alone, and the cap source leaves the open-report ones.
    assert ts.speed_pairs(scenarios, threads, traces) == []
    sampled_threads, sampled_traces = (load_traces(out / f, "") for f in ("tool_calls.jsonl", "llm_traces.jsonl"))
    assert ts.speed_pairs(rows[:2], sampled_threads, sampled_traces)  # open-report answers there
    assert ts.speed_pairs(rows[:2], sampled_threads, sampled_traces, at_cap=True) == []


def _called_twice(row: dict, final_speed: float | None = None) -> tuple[dict, dict] | None:
    """A thread on `row` that calls a closed own ball, then an open one, then writes that report's first open shot
    (at the first of 8, 10, 12, 5 m/s that pots legally, or at `final_speed`), and its trace; None where the
    board has no closed and open own ball or no such pot."""
    from poolbench_data.llm.tools import call_of
    from poolbench_data.pairs.text import physics_score
    from poolbench_data.pairs.tools import _played_row

    s = Scenario.from_row(row)
    closed = [b.id for b in s.own() if not clear(tool_answer(s, b.id, None))]
    opened = [b.id for b in s.own() if clear(tool_answer(s, b.id, None))]
    if not closed or not opened:
        return None
    calls = [{"arguments": {"target_ball": b}, "result": turn_result(s, call_of(b), MAX_CALLS - 1 - k)}
             for k, b in enumerate((closed[0], opened[0]))]
    shot = next(x for x in calls[1]["result"]["shots"] if x["open"])
    for speed in (final_speed,) if final_speed else (8.0, 10.0, 12.0, 5.0):
        final = format_action(Shot(phi=shot["potting_point_aim_angle_deg"], V0=speed, target_ball=opened[0],
                                   target_pocket=shot["pocket"]), s)
        trace = _played_row(row, s, final, "m")
        if final_speed or physics_score(trace) >= 3:
            thread = {"scenario_id": s.id, "player": trace["player"], "sample": trace["sample"],
                      "request_failed": False, "calls": calls, "turns": [call_text(closed[0]), call_text(opened[0])],
                      "final_response": final, "tool_version": TOOL_VERSION}
            return thread, trace
    return None


def test_call_again_pairs_prefer_the_further_call_where_calls_are_left(sampled):
    from poolbench_data.hub.folder import read_rows
    from poolbench_data.pairs.text import fine_score, physics_score
    from poolbench_data.pairs.further_call import ANSWER_NOW, CALL_AGAIN, call_again_pairs
    from poolbench_data.pairs.tools import _played_row
    from poolbench_data.demos.tools import cap_answer

    root, _ = sampled
    made = 0
    for row in read_rows(root, "scenarios", "train"):
        if (two := _called_twice(row)) is None:
            continue
        thread, trace = two
        s = Scenario.from_row(row)
        now = cap_answer(s, [(thread["calls"][0]["arguments"]["target_ball"], None)])
        found = call_again_pairs([row], [thread], [trace])
        if fine_score(_played_row(row, s, now[0], ANSWER_NOW)) >= fine_score(trace):
            assert found == []  # answering at once would have done as well: no preference
            continue
        made += 1
        (p,) = found
        assert p["source"] == CALL_AGAIN and p["turn"] == 1 and p["rejected_model"] == ANSWER_NOW
        assert p["chosen"][0]["content"] == thread["turns"][1] and p["rejected"][0]["content"] == now[0]
        last = json.loads(p["prompt"][-1]["content"])
        assert not clear(last) and last["calls_left"] > 0 and p["chosen_score"] > p["rejected_score"]
        assert call_again_pairs([row], [thread, {**thread, "sample": 1}], [trace, {**trace, "sample": 1}]) == found
        soft, played = _called_twice(row, final_speed=2.0)  # the same calls, then a soft shot
        if physics_score(played) < 3:  # it did not pot: the call earned nothing
            assert call_again_pairs([row], [soft], [played]) == []
    assert made > 0


def test_builder_takes_call_again_pairs(sampled, capsys):
    root, out = sampled
    assert build_pairs.main(["--dataset_dir", str(root), "--tool_eval_dir", str(out), "--tool_sources",
                             "tool-on-policy,tool-call-again"]) == 0
    assert "tool-call-again': 0" in capsys.readouterr().out  # the scripted model never calls twice


def _at_the_cap(row: dict) -> tuple[dict, dict]:
    """A thread on `row` that calls own balls to the cap, then calls once more (read as its action: no shot), and
    its trace."""
    from poolbench_data.llm.tools import call_of
    from poolbench_data.pairs.tools import _played_row

    s = Scenario.from_row(row)
    own = [b.id for b in s.own()]
    balls = [own[k % len(own)] for k in range(MAX_CALLS + 1)]
    calls = [{"arguments": {"target_ball": b}, "result": turn_result(s, call_of(b), MAX_CALLS - 1 - k)}
             for k, b in enumerate(balls[:-1])]
    trace = _played_row(row, s, call_text(balls[-1]), "m")
    thread = {"scenario_id": s.id, "player": trace["player"], "sample": 0, "request_failed": False, "calls": calls,
              "turns": [call_text(b) for b in balls[:-1]], "final_response": call_text(balls[-1]),
              "tool_version": TOOL_VERSION}
    return thread, trace


def _inputs(sampled) -> tuple[list, list, list]:
    """(scenarios, threads, traces) of the first two boards: every source gives pairs on these."""
    from poolbench_data.hub.folder import read_rows
    from poolbench_data.players.traces import load_traces

    root, out = sampled
    threads, traces = (load_traces(out / f, "") for f in ("tool_calls.jsonl", "llm_traces.jsonl"))
    return read_rows(root, "scenarios", "train")[:2], threads, traces


def test_tool_pairs_never_have_a_side_whose_simulation_stopped_early(sampled, monkeypatch):
    """Every tool_pairs source that simulates a side (or, with `robust`, the grid around one) gives no pair once
    every simulation stops early; on-policy pairs, both sides the model's recorded rows, stay."""
    from poolbench_data.pairs.noise import robust_score
    from poolbench_data.pairs.tools import CAP_ANSWER, SOURCE, tool_pairs

    scenarios, threads, traces = _inputs(sampled)

    def built() -> dict[str, list]:
        out = {x: tool_pairs(scenarios, threads, traces, [x]) for x in ("tool-recovery", "tool-answer", CAP_ANSWER)}
        return {**out, "robust": tool_pairs(scenarios, threads, traces, [SOURCE], robust=True)}

    own, before = tool_pairs(scenarios, threads, traces, [SOURCE]), built()
    assert own and all(before.values()), {k: len(v) for k, v in before.items()}
    s, action = Scenario.from_row(scenarios[0]), Shot.from_row(scenarios[0]["oracle_shot"]).to_row()
    stop_every_simulation(monkeypatch)
    assert built() == dict.fromkeys(before, [])
    assert tool_pairs(scenarios, threads, traces, [SOURCE]) == own  # nothing simulated: the recorded outcomes
    assert robust_score(s, {"action": action}) is None  # no average over shots scored where they stopped
    assert robust_score(s, {"action": None}) == 0.0  # never fired: nothing simulated


def test_at_cap_call_again_and_speed_pairs_never_have_a_side_whose_simulation_stopped_early(sampled, monkeypatch):
    from poolbench_data.pairs.further_call import call_again_pairs
    from poolbench_data.pairs.tools import AT_CAP, tool_pairs
    from poolbench_data.pairs.speed import speed_pairs

    scenarios, threads, traces = _inputs(sampled)
    twice = [(row, *two) for row in scenarios if (two := _called_twice(row)) is not None]
    capped = [_at_the_cap(row) for row in scenarios]

    def built() -> dict[str, list]:
        return {AT_CAP: tool_pairs(scenarios, [t for t, _ in capped], [tr for _, tr in capped], [AT_CAP]),
                "tool-call-again": call_again_pairs(*map(list, zip(*twice))),
                "tool-speed": speed_pairs(scenarios, threads, traces, speeds=(5.0,))}

    before = built()
    assert all(before.values()), {k: len(v) for k, v in before.items()}
    stop_every_simulation(monkeypatch)
    assert built() == dict.fromkeys(before, [])
