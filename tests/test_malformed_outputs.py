"""Any text a model writes is an answer to score or a call refused with an error the model reads: no model
output ends a run. Every path from a model's text to a record walks one corpus (tests/malformed.py): the
free-text parser and a refinement round's feedback, the tool-call reader and the tool, the lm-eval and inspect
scorers, the TRL environment and its reward; the tool-call loop and refinement rounds run the whole corpus through
the OpenAI backend against a loopback server standing in for the model; `poolbench eval --tools` runs to its
results with the malformed calls a model wrote."""

from __future__ import annotations

import asyncio
import importlib.util
import json

import pytest

from malformed import ACTION, CORPUS, STRUCTURED_ARGUMENTS, call
from poolbench_data.boards.generate import generate
from poolbench_data.cli import main
from poolbench_data.llm.tools import MAX_CALLS, run_call, tool_calls, turn_result
from poolbench_data.protocol.parsing import PARSE_STATUSES, parse_action
from poolbench_data.protocol.prompts import messages
from test_experiments import _Recorder, recording_server

BOARD = generate(1)[0]
CASES = sorted(CORPUS)
# The corpus's action, on a ball of this board: the one well-formed answer the cases are variations of.
ON_BOARD = BOARD.object_balls[0].id


def _on_board(text: str) -> str:
    return text.replace('"target_ball": "1"', f'"target_ball": "{ON_BOARD}"')


def _jsonable(value) -> None:
    json.dumps(value)  # a result that cannot be written would lose the run when its file is


@pytest.mark.parametrize("case", CASES)
def test_the_parser_and_a_refinement_round_answer_every_output(case):
    from poolbench_data.llm.experiments import feedback
    from poolbench_data.llm.player import answer_record

    text = _on_board(CORPUS[case])
    p = parse_action(text, BOARD)
    assert p.status in PARSE_STATUSES and (p.shot is None) == (p.status != "ok")
    rec = answer_record(BOARD, text, None, player="m", sample=0)
    assert rec.parse_status == p.status and "Shoot again" in feedback(rec)
    assert len(p.message) < 400  # a message the model reads in its next round, not the text sent back


@pytest.mark.parametrize("case", CASES)
def test_every_call_is_run_or_refused_with_an_error_the_model_reads(case):
    for c in tool_calls(_on_board(CORPUS[case])):
        assert set(c) >= {"name", "arguments"} and isinstance(c["arguments"], dict)
        result = turn_result(BOARD, c, MAX_CALLS - 1)
        _jsonable(result)
        assert result["calls_left"] == MAX_CALLS - 1
        if "error" in result:
            assert isinstance(result["error"], str) and 0 < len(result["error"]) < 400
        else:
            assert result == {"calls_left": MAX_CALLS - 1, **run_call(BOARD, c)} and "target_ball" in result


@pytest.fixture(scope="module")
def lm_eval_utils():
    pytest.importorskip("lm_eval")
    from poolbench_data.cli.lm_eval_tasks import PATH

    spec = importlib.util.spec_from_file_location("poolbench_lm_eval_utils", PATH / "utils.py")  # as lm-eval loads it
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("case", CASES)
def test_the_lm_eval_scorer_scores_every_output(case, lm_eval_utils):
    got = lm_eval_utils.process_results({"board": BOARD.to_json()}, [_on_board(CORPUS[case])])
    assert set(got) == set(lm_eval_utils.METRICS) and all(v in (0.0, 1.0) for v in got.values())


@pytest.mark.parametrize("case", CASES)
def test_the_inspect_scorer_scores_every_output(case):
    pytest.importorskip("inspect_ai")
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import Target
    from inspect_ai.solver import TaskState

    from poolbench_data.cli.inspect_task import METRICS, physics, sample

    s = sample(BOARD)
    state = TaskState(model="loopback/m", sample_id=s.id, epoch=1, input=s.input, messages=list(s.input),
                      output=ModelOutput.from_content("loopback/m", _on_board(CORPUS[case])), metadata=s.metadata)
    score = asyncio.run(physics()(state, Target(s.target)))
    assert set(score.value) == set(METRICS) and all(v in (0.0, 1.0) for v in score.value.values())
    assert score.metadata["parse_status"] in PARSE_STATUSES


@pytest.mark.parametrize("case", CASES)
def test_the_trl_environment_answers_every_call_and_scores_every_answer(case):
    from poolbench_data.rl.env import PoolBenchEnv, ends_on_call, tool_physics_reward, weighted_reward

    text = _on_board(CORPUS[case])
    env = PoolBenchEnv()
    env.reset(**BOARD.to_row())
    # TRL parses a call and passes its arguments as keywords; a call without a ball, or with an argument the tool
    # has not, is TRL's to refuse (it answers the TypeError's text).
    for c in tool_calls(text):
        if "error" not in c and "target_ball" in c["arguments"] and set(c["arguments"]) <= {"target_ball", "pocket"}:
            _jsonable(json.loads(env.ghost_ball(**c["arguments"])))
    rollouts = [text, [{"role": "assistant", "content": text}],
                [{"role": "assistant", "content": None, "tool_calls": [{"type": "function", "function": {
                    "name": "ghost_ball", "arguments": {"target_ball": ON_BOARD}}}]},
                 {"role": "tool", "name": "ghost_ball", "content": "{}"}, {"role": "assistant", "content": text}]]
    scores = tool_physics_reward(rollouts, environments=[env] * 3)
    assert all(x in (0.0, 1.0, 2.0, 3.0) for x in scores) and len(set(scores)) == 1
    assert scores[0] == 0.0 or not ends_on_call(text)
    weighted_reward((0, 1, 2, 8), unscored_calls=True)(rollouts, environments=[env] * 3)


class _AnyMessage(_Recorder):
    """A loopback chat server standing in for the model: `server.reply(messages)` is the whole assistant
    message, text or structured tool calls."""

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        self.server.requests.append(body)
        message = self.server.reply(body["messages"])
        self._send(200, {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                         "choices": [{"index": i, "message": message, "finish_reason": "stop"}
                                     for i in range(body.get("n", 1))],
                         "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})


def _structured(arguments: str) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": "x1", "type": "function", "function": {"name": "ghost_ball", "arguments": arguments}}]}


def _case_of(msgs) -> str:
    return msgs[1]["content"].rsplit("case: ", 1)[1]


def _messages_of(case: str) -> dict:
    if case.startswith("structured-"):
        return _structured(STRUCTURED_ARGUMENTS[case.removeprefix("structured-")])
    return {"role": "assistant", "content": _on_board(CORPUS[case])}


@pytest.mark.slow
def test_the_tool_loop_and_refinement_rounds_take_the_whole_corpus():
    """Every case a conversation of its own through the real OpenAI backend: each turn the model writes the
    case again, so a case that calls keeps calling to the cap; every thread ends in a record."""
    from poolbench_data.llm.experiments import refine
    from poolbench_data.llm.openai_backend import OpenAIBackend
    from poolbench_data.llm.player import EvalSettings, evaluate_model
    from poolbench_data.llm.tools import play_with_tools
    from poolbench_data.pairs.tools import thread_messages

    cases = CASES + [f"structured-{k}" for k in sorted(STRUCTURED_ARGUMENTS)]
    system, user = messages(BOARD)
    convs = [[system, {**user, "content": user["content"] + f"\ncase: {k}"}] for k in cases]
    settings = EvalSettings(model="m", backend="openai")
    with recording_server(lambda msgs: _messages_of(_case_of(msgs)), _AnyMessage) as (url, server):
        backend = OpenAIBackend(url, "m", concurrency=4, retries=0)
        records, gens, threads = play_with_tools([BOARD] * len(cases), convs, backend, settings, player="m",
                                                 max_calls=MAX_CALLS)
        assert not any(g.failures for g in gens)  # every request was answered: the loop itself never failed
        assert len(records) == len(cases) and all(r.parse_status in PARSE_STATUSES for r in records)
        for t in threads:
            row = t.to_row(BOARD.id, "m")
            _jsonable(row)
            assert sum(1 for c in row["calls"] if "error" not in c["result"]) <= MAX_CALLS
            assert thread_messages(BOARD, row)[-1]["content"] == row["final_response"]  # pairs replay it as run
        text_cases = [k for k in cases if not k.startswith("structured-")]
        first, _ = evaluate_model([BOARD] * len(text_cases), backend, settings, player="m", progress=False,
                                  convs=[c for c, k in zip(convs, cases) if k in text_cases])
        later, _ = refine([BOARD] * len(text_cases), [c for c, k in zip(convs, cases) if k in text_cases], first,
                          backend, settings, player="m", rounds=2)
        backend.close()
    assert len(later) == len(text_cases) and all(r.parse_status in PARSE_STATUSES for r in later)
    again = [r for r in server.requests if len(r["messages"]) == 4 and r["messages"][2]["role"] == "assistant"
             and not r["messages"][2].get("tool_calls")]
    assert all("Shoot again" in r["messages"][3]["content"] for r in again)


def _eval(tmp_path, reply, *flags) -> tuple[int, object]:
    with recording_server(reply, _AnyMessage) as (url, server):
        code = main(["eval", "--backend", "openai", "--base_url", url, "--model", "m", "--n", "2", "--tools",
                     "--baselines", "random", "--boards", "0", "--out", str(tmp_path), "--quiet", *flags])
    return code, server


@pytest.mark.parametrize("written", [
    '<tool_call>{"name": "ghost_ball", "arguments": "[1, 2]"}</tool_call>',
    '<tool_call>{"name": "ghost_ball", "arguments": "5"}</tool_call>',
    "<tool_call>" + "[" * 5000 + "</tool_call>",
    "structured:" + "[" * 5000,
], ids=["arguments-list", "arguments-number", "deep-call", "structured-deep"])
def test_a_malformed_tool_call_never_loses_the_run(tmp_path, written):
    def reply(msgs):  # the malformed call, then prose once the error is read
        if msgs[-1]["role"] == "tool":
            return {"role": "assistant", "content": "I will not shoot."}
        if written.startswith("structured:"):
            return _structured(written.removeprefix("structured:"))
        return {"role": "assistant", "content": written}

    code, server = _eval(tmp_path, reply)
    assert code == 0 and (tmp_path / "results.json").is_file() and (tmp_path / "report.txt").is_file()
    threads = [json.loads(x) for x in (tmp_path / "tool_calls.jsonl").read_text().splitlines()]
    assert len(threads) == 2
    for t in threads:
        (made,) = t["calls"]
        assert "not a tool call" in made["result"]["error"] and made["result"]["calls_left"] == MAX_CALLS - 1
        assert t["final_response"] == "I will not shoot."
    told = [r["messages"][-1] for r in server.requests if r["messages"][-1]["role"] == "tool"]
    assert len(told) == 2 and all("not a tool call" in json.loads(m["content"])["error"] for m in told)
    rows = [json.loads(x) for x in (tmp_path / "llm_traces.jsonl").read_text().splitlines()]
    assert [r["parse_status"] for r in rows if r["player"] == "m"] == ["no-json", "no-json"]


def test_max_tool_calls_counts_calls_and_refuses_the_rest(tmp_path):
    """--max_tool_calls 3 with five calls in one turn: three run, two are refused with an error the model reads,
    and the next turn is the action."""
    boards = generate(2)

    def reply(msgs):
        s = next(b for b in boards if msgs[1]["content"] == messages(b)[1]["content"])
        if msgs[-1]["role"] == "tool":
            return {"role": "assistant", "content": json.dumps({**ACTION, "target_ball": s.object_balls[0].id})}
        return {"role": "assistant", "content": "".join(call("ghost_ball", {"target_ball": b.id})
                                                        for b in (s.object_balls * 5)[:5])}

    code, server = _eval(tmp_path, reply, "--max_tool_calls", "3")
    assert code == 0
    assert len(server.requests) == 2 * 2  # the calling turn and the action, per board: no third turn
    for t in map(json.loads, (tmp_path / "tool_calls.jsonl").read_text().splitlines()):
        results = [c["result"] for c in t["calls"]]
        assert [r["calls_left"] for r in results] == [2, 1, 0, 0, 0]
        assert all("error" not in r for r in results[:3])
        assert all(r["error"].startswith("no calls left") and "JSON action" in r["error"] for r in results[3:])
    for r in server.requests[2:]:
        tools = [json.loads(m["content"]) for m in r["messages"] if m["role"] == "tool"]
        assert len(tools) == 5 and tools[3]["error"].startswith("no calls left")
    summary = json.loads((tmp_path / "results.json").read_text())["tools"]
    assert summary["calls"] == 10 and summary["calls_with_error"] == 4


def test_the_max_tool_calls_help_says_calls_are_counted_one_by_one(capsys):
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert "tool calls a shot may make (with --tools), counted call by call, however many one turn holds" in said
    assert "a call past the cap gets an error instead of a result" in said


def test_recorded_threads_replay_with_the_errors_their_model_read():
    """Preference pairs rebuild a thread from its record (pairs.tools): a call that is no call, or one
    refused past the cap, replays with the error the run recorded; a real call's answer is still checked."""
    from poolbench_data.llm.tools import OVER_CAP, TOOL_VERSION
    from poolbench_data.pairs.tools import ThreadMismatch, thread_messages

    good = call("ghost_ball", {"target_ball": ON_BOARD})
    answer = turn_result(BOARD, tool_calls(good)[0], 0)
    row = {"sample": 0, "tool_version": TOOL_VERSION, "final_response": "no", "turns": [
        "<tool_call>{x}</tool_call>", good + good],
        "calls": [{"arguments": {}, "result": {"calls_left": 1, "error": "not a tool call: Expecting property name"}},
                  {"arguments": {"target_ball": ON_BOARD}, "result": answer},
                  {"arguments": {"target_ball": ON_BOARD}, "result": {"calls_left": 0, "error": OVER_CAP}}]}
    tools = [json.loads(m["content"]) for m in thread_messages(BOARD, row) if m["role"] == "tool"]
    assert tools == [c["result"] for c in row["calls"]]
    changed = {**row, "calls": [*row["calls"][:1], {**row["calls"][1], "result": {**answer, "open": "?"}},
                                row["calls"][2]]}
    with pytest.raises(ThreadMismatch):
        thread_messages(BOARD, changed)
