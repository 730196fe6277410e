"""Tools and reasoning (section 6.3): the ghost_ball tool, calls read
from text, and the whole loop through `poolbench eval` against a loopback
OpenAI-compatible server that answers with structured tool calls; reasoning
budgets sent and reasoning tokens reported."""

from __future__ import annotations

import json
import math

import pytest

from poolbench_data.boards.generate import generate
from poolbench_data.cli import main
from poolbench_data.core.candidates import MAX_CUT, candidates
from poolbench_data.core.records import CUE
from poolbench_data.core.table import POCKET_IDS, geometry
from poolbench_data.llm.backend import tool_call_text
from poolbench_data.llm.tools import MAX_CALLS, TOOL_NOTE, TOOL_VERSION, TOOLS, ghost_ball, run_call, tool_calls
from poolbench_data.protocol.prompts import SYSTEM_PROMPT
from test_experiments import _Recorder, _board, recording_server

BOARDS = generate(2)


def test_the_tool_is_the_paper_ghost_ball_construction():
    # G = T + (T - P)/|T - P| * D for the pocket centre P; the aim is C -> G;
    # steep cuts are answered too (the Heuristic drops cuts over 80 degrees).
    D = geometry().ball_diameter
    steep = 0
    for s in BOARDS:
        cx, cy = s.ball(CUE).x, s.ball(CUE).y
        for t in s.object_balls:
            for pid in POCKET_IDS:
                r = ghost_ball(s, t.id, pid)
                p = geometry().pocket(pid)
                n = math.hypot(t.x - p.x, t.y - p.y)
                gx, gy = t.x + (t.x - p.x) / n * D, t.y + (t.y - p.y) / n * D
                assert r["ghost_ball"] == [round(gx, 4), round(gy, 4)]
                assert r["aim_angle_deg"] == round(math.degrees(math.atan2(gy - cy, gx - cx)) % 360, 2)
                steep += r["cut_angle_deg"] > MAX_CUT
        for c in candidates(s, aim="centre"):  # what the centre-aim Heuristic sees, the tool says
            r = ghost_ball(s, c.ball, c.pocket)
            assert (r["aim_angle_deg"], tuple(r["cue_path_blocked_by"]), tuple(r["target_path_blocked_by"]),
                    r["ghost_ball_free"]) == (round(c.phi, 2), c.cue_blockers, c.pocket_blockers, c.ghost_ok)
        for c in candidates(s, aim="potting-point"):  # and the potting-point aim is the (default) Heuristic's
            assert ghost_ball(s, c.ball, c.pocket)["potting_point_aim_angle_deg"] == round(c.phi, 2)
    assert steep > 0


def test_without_a_pocket_the_tool_reports_every_pocket_of_the_ball():
    seen_closed = seen_open = 0
    for s in BOARDS:
        for t in s.object_balls:
            r = run_call(s, {"name": "ghost_ball", "arguments": {"target_ball": t.id}})
            assert r == ghost_ball(s, t.id) and r["target_ball"] == t.id
            # `open` leads, as in one pocket's answer: whether any shot is open
            assert next(iter(r)) == "open" and r["open"] == any(x["open"] for x in r["shots"])
            shots = [x["pocket"] for x in r["shots"]]
            assert sorted(shots + r["no_shot"]) == sorted(POCKET_IDS) and not set(shots) & set(r["no_shot"])
            one = {pid: ghost_ball(s, t.id, pid) for pid in POCKET_IDS}
            assert all(one[pid]["cut_angle_deg"] >= 90.0 for pid in r["no_shot"])
            for x in r["shots"]:  # each shot is the single-pocket answer's open, cut and potting-point aim
                d = one[x["pocket"]]
                assert x == {"pocket": x["pocket"], "open": d["open"], "cut_angle_deg": d["cut_angle_deg"],
                             "potting_point_aim_angle_deg": d["potting_point_aim_angle_deg"]}
                assert d["cut_angle_deg"] < 90.0
            # open first, then a free cue path, then the smaller cut: the first shot is geometry's best
            keys = [(not x["open"], bool(one[x["pocket"]]["cue_path_blocked_by"]), x["cut_angle_deg"])
                    for x in r["shots"]]
            assert keys == sorted(keys)
            seen_open += any(x["open"] for x in r["shots"])
            seen_closed += any(not x["open"] for x in r["shots"])
    assert seen_open and seen_closed
    s = BOARDS[0]
    absent = next(str(k) for k in range(1, 16) if str(k) not in {b.id for b in s.balls})
    assert "not on the table" in run_call(s, {"name": "ghost_ball", "arguments": {"target_ball": absent}})["error"]
    assert "ball id" in run_call(s, {"name": "ghost_ball", "arguments": {"pocket": "rt"}})["error"]
    assert TOOLS[0]["function"]["parameters"]["required"] == ["target_ball"]
    # the call TOOL_NOTE shows is the per-ball form, and it reads back as that call
    (shown,) = tool_calls(TOOL_NOTE)
    assert shown == {"name": "ghost_ball", "arguments": {"target_ball": "3"}}


def test_a_report_with_nothing_open_adds_a_one_cushion_kick():
    from poolbench_data.boards.categories import is_indirect
    from poolbench_data.boards.generate import generate_scenario
    from poolbench_data.core.kicks import kick_candidates
    from poolbench_data.core.records import Shot
    from poolbench_data.demos.tools import played
    from poolbench_data.protocol.prompts import format_action

    indirect = [generate_scenario("indirect", 200 + i, f"pb1-{i:06d}") for i in range(8)]
    assert all(is_indirect(s) for s in indirect)  # no straight shot reaches an own ball: only kicks can
    kicks = legal = 0
    for s in indirect + list(BOARDS):
        for b in s.own():
            r = ghost_ball(s, b.id)
            if r["open"]:
                assert "kick" not in r  # no kick where a shot is open
                continue
            mine = [k for k in kick_candidates(s) if k.ball == b.id]  # geometry: cheapest clear kick first
            if not mine:
                assert r["kick"] is None
                continue
            k = mine[0]
            assert list(r)[-1] == "kick" and r["kick"] == {"rail": k.rail, "pocket": k.pocket, "pot": k.pot,
                                                           "aim_angle_deg": round(k.phi, 2)}
            if s in indirect:  # written as the model would, played in the simulator
                kicks += 1
                legal += played(s, format_action(Shot(phi=r["kick"]["aim_angle_deg"], V0=8.0, target_ball=b.id,
                                                      target_pocket=r["kick"]["pocket"]), s))[1].legal_contact
    # the centre Heuristic makes legal contact on none of the 32 indirect held-out boards
    assert kicks >= 10 and legal >= kicks // 2
    assert "kick" in TOOL_NOTE and "kick" in TOOLS[0]["function"]["description"]
    assert TOOL_VERSION == "ghost_ball-v3"


def test_bad_calls_get_an_error_the_model_can_read():
    s = BOARDS[0]
    absent = next(str(k) for k in range(1, 16) if str(k) not in {b.id for b in s.balls})
    assert "not on the table" in run_call(s, {"name": "ghost_ball", "arguments": {"target_ball": absent,
                                                                                 "pocket": "rt"}})["error"]
    assert "pocket id" in run_call(s, {"name": "ghost_ball", "arguments": {"target_ball": s.object_balls[0].id,
                                                                          "pocket": "xx"}})["error"]
    assert "unknown tool" in run_call(s, {"name": "shoot", "arguments": {}})["error"]
    (bad,) = tool_calls("<tool_call>{not json}</tool_call>")
    assert "not a tool call" in run_call(s, bad)["error"]


def test_calls_are_read_from_text_in_the_hermes_form():
    text = 'Let me check. <tool_call>{"name": "ghost_ball", "arguments": {"target_ball": "3", "pocket": "rt"}}' \
           '</tool_call>\n<tool_call>{"name": "ghost_ball", "arguments": "{\\"target_ball\\": 5, \\"pocket\\": ' \
           '\\"lb\\"}"}</tool_call>'
    assert tool_calls(text) == [{"name": "ghost_ball", "arguments": {"target_ball": "3", "pocket": "rt"}},
                                {"name": "ghost_ball", "arguments": {"target_ball": 5, "pocket": "lb"}}]
    assert tool_calls('{"target_ball": "3"}') == []  # an answer, not a call
    # What the OpenAI backend writes for a structured call reads back the same.
    assert tool_calls(tool_call_text("ghost_ball", '{"target_ball": "2", "pocket": "lc"}')) == [
        {"name": "ghost_ball", "arguments": {"target_ball": "2", "pocket": "lc"}}]


CALL = '<tool_call>{"name": "ghost_ball", "arguments": {"target_ball": "3"}}</tool_call>'


def test_a_call_inside_the_reasoning_is_no_call():
    """Reasoning is no action: a call the model writes while it thinks (inside <think> ... </think>, before a stray
    </think> whose opening tag was the chat template's, in an unclosed <think>, or in the reasoning_content a
    server returns apart) is not read; one after the reasoning is."""
    from types import SimpleNamespace

    from poolbench_data.llm.openai_backend import message_text

    for text in (f"<think>maybe {CALL}</think>{{}}", f"maybe {CALL}</think>{{}}", f"<think>maybe {CALL}",
                 message_text(SimpleNamespace(reasoning_content=f"maybe {CALL}", content="{}", tool_calls=None))):
        assert tool_calls(text) == [], text
    assert len(tool_calls(f"<think>maybe {CALL}</think>{CALL}")) == 1
    assert len(tool_calls(message_text(SimpleNamespace(reasoning_content="call it", content=CALL,
                                                       tool_calls=None)))) == 1


class _MessageRecorder(_Recorder):
    """Answers with the whole assistant message `server.reply(messages)` gives (reasoning_content, tool_calls)."""

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        self.server.requests.append(body)
        message = {"role": "assistant", **self.server.reply(body["messages"])}
        self._send(200, {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                         "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})


def test_eval_runs_no_call_written_inside_the_reasoning(tmp_path):
    """`poolbench eval --tools` against a server whose model thinks about calling the tool (a Hermes call in
    reasoning_content on one board, inside <think> in the content on the other) and then answers: no call is
    run, no second turn is asked for, and the answer after the reasoning is the shot."""
    from poolbench_data.players.baselines import oracle
    from poolbench_data.protocol.prompts import format_action

    def reply(messages):
        s = _board(messages)
        answer = format_action(oracle(s).shot, s)
        if s.id == BOARDS[0].id:
            return {"reasoning_content": f"I could ask: {CALL}", "content": answer}
        return {"content": f"<think>I could ask: {CALL}</think>{answer}"}

    with recording_server(reply, _MessageRecorder) as (url, server):
        assert main(["eval", "--backend", "openai", "--base_url", url, "--model", "m", "--n", "2", "--tools",
                     "--baselines", "random", "--boards", "0", "--out", str(tmp_path), "--quiet"]) == 0
    assert len(server.requests) == 2  # one turn a board: nothing was called
    calls = [json.loads(x) for x in (tmp_path / "tool_calls.jsonl").read_text().splitlines()]
    assert [c["calls"] for c in calls] == [[], []]
    rows = [json.loads(x) for x in (tmp_path / "llm_traces.jsonl").read_text().splitlines()]
    assert [r["parse_status"] for r in rows] == ["ok", "ok"] and all(CALL in r["raw_response"] for r in rows)


class _ToolRecorder(_Recorder):
    """Answers with structured tool_calls when the reply is a dict."""

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        self.server.requests.append(body)
        self.answer(body)

    def answer(self, body: dict) -> None:
        reply = self.server.reply(body["messages"])
        message = {"role": "assistant", "content": reply} if isinstance(reply, str) else {
            "role": "assistant", "content": None, "tool_calls": [
                {"id": "x1", "type": "function", "function": {"name": "ghost_ball", "arguments": json.dumps(reply)}}]}
        self._send(200, {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                         "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})


def _eval(tmp_path, reply, *flags):
    with recording_server(reply, _ToolRecorder) as (url, server):
        code = main(["eval", "--backend", "openai", "--base_url", url, "--model", "m", "--n", "2", "--tools",
                     "--baselines", "random", "--boards", "0", "--out", str(tmp_path), "--quiet", *flags])
    return code, server


@pytest.mark.slow
def test_tool_loop_through_eval(tmp_path):
    def reply(messages):  # a "model" that asks the tool once, then shoots the aim it was given
        s = _board(messages)
        if messages[-1]["role"] != "tool":
            return {"target_ball": s.object_balls[0].id, "pocket": "rt"}
        r = json.loads(messages[-1]["content"])
        return json.dumps({"target_ball": r["target_ball"], "target_pocket": r["pocket"],
                           "aim_angle_deg": r["aim_angle_deg"], "cue_speed": 9.0})

    code, server = _eval(tmp_path, reply)
    assert code == 0
    first = [r for r in server.requests if len(r["messages"]) == 2]
    second = [r for r in server.requests if len(r["messages"]) == 4]
    assert len(first) == 2 and len(second) == 2
    assert first[0]["tools"] == TOOLS and first[0]["messages"][0]["content"] == SYSTEM_PROMPT + TOOL_NOTE
    asked, answer = second[0]["messages"][2:]
    assert asked["role"] == "assistant" and asked["tool_calls"][0]["function"]["name"] == "ghost_ball"
    assert answer["role"] == "tool" and answer["tool_call_id"] == asked["tool_calls"][0]["id"]
    s = _board(second[0]["messages"])
    # the model is told how many calls are left (the default cap less this one), then the tool's answer
    assert json.loads(answer["content"]) == {"calls_left": MAX_CALLS - 1, **ghost_ball(s, s.object_balls[0].id, "rt")}
    rows = [json.loads(x) for x in (tmp_path / "llm_traces.jsonl").read_text().splitlines()]
    assert [r["parse_status"] for r in rows] == ["ok", "ok"] and all(r["sim_status"] == "ok" for r in rows)
    calls = [json.loads(x) for x in (tmp_path / "tool_calls.jsonl").read_text().splitlines()]
    assert [len(c["calls"]) for c in calls] == [1, 1] and calls[0]["final_response"] == rows[0]["raw_response"]
    summary = json.loads((tmp_path / "results.json").read_text())["tools"]
    assert summary == {"shots": 2, "shots_with_calls": 2, "calls": 2, "calls_with_error": 0, "failed_requests": 0,
                       "tool_version": TOOL_VERSION}
    assert all(c["tool_version"] == TOOL_VERSION for c in calls)


@pytest.mark.slow
def test_calls_stop_at_max_tool_calls(tmp_path):
    code, server = _eval(tmp_path, lambda messages: {"target_ball": "99", "pocket": "rt"}, "--max_tool_calls", "2")
    assert code == 0
    assert len(server.requests) == 2 * 3  # the first answer and two more, per board
    rows = [json.loads(x) for x in (tmp_path / "llm_traces.jsonl").read_text().splitlines()]
    assert all(r["parse_status"] != "ok" for r in rows)  # still calling: no action to play
    calls = [json.loads(x) for x in (tmp_path / "tool_calls.jsonl").read_text().splitlines()]
    assert all(len(c["calls"]) == 2 and "not an object ball" in c["calls"][0]["result"]["error"] for c in calls)
    # the count runs down from the run's cap: the last result says the next turn is the action
    assert all([x["result"]["calls_left"] for x in c["calls"]] == [1, 0] for c in calls)
    # The report's title says how the model played (it said `free text` before), with the run's cap.
    assert "ghost_ball tool, <= 2 calls" in (tmp_path / "report.txt").read_text().splitlines()[0]


class _RejectToolTurns(_ToolRecorder):
    """Calls come back; a conversation that holds a tool result is refused."""

    def answer(self, body: dict) -> None:
        if body["messages"][-1]["role"] == "tool":
            return self._send(400, {"error": {"message": "no tools here", "type": "invalid_request_error"}})
        super().answer(body)


@pytest.mark.slow
def test_a_failed_tool_turn_is_a_loud_failure_not_a_miss(tmp_path, capsys):
    with recording_server(lambda m: {"target_ball": "1", "pocket": "rt"}, _RejectToolTurns) as (url, server):
        code = main(["eval", "--backend", "openai", "--base_url", url, "--model", "m", "--n", "2", "--tools",
                     "--baselines", "random", "--boards", "0", "--out", str(tmp_path), "--quiet", "--retries", "0"])
    assert code == 1  # every shot lost its answer: the run is incomplete, not 0%
    failures = json.loads((tmp_path / "results.json").read_text())["request_failures"]
    assert failures["failed"] == 2 and failures["by_kind"] == {"client_error": 2} and failures["incomplete"]
    assert "no tools here" in failures["example"]


@pytest.mark.parametrize("flags, words", [
    (["--tools", "--backend", "replay", "--responses", __file__], "--tools needs a live model"),
    (["--tools", "--max_tool_calls", "0"], "--max_tool_calls must be >= 1"),
    (["--tools", "--rounds", "2"], "--tools and --rounds are separate conditions"),
])
def test_tool_flags_are_checked_before_any_work(tmp_path, capsys, flags, words):
    assert main(["eval", "--out", str(tmp_path / "o"), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1


# --- reasoning budgets ------------------------------------------------------------


class _ReasoningRecorder(_Recorder):
    """A vLLM server with a reasoning parser: the thought comes apart from the
    answer, and the usage counts its tokens."""

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        self.server.requests.append(body)
        message = {"role": "assistant", "reasoning_content": "ghost ball first", "content": self.server.reply(
            body["messages"])}
        self._send(200, {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                         "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": 10, "completion_tokens": 9, "total_tokens": 19,
                                   "completion_tokens_details": {"reasoning_tokens": 4}}})


def test_reasoning_budget_is_sent_and_reasoning_tokens_reported(tmp_path, capsys):
    from poolbench_data.players.baselines import oracle
    from poolbench_data.protocol.prompts import format_action

    def reply(messages):
        s = _board(messages)
        return format_action(oracle(s).shot, s)

    with recording_server(reply, _ReasoningRecorder) as (url, server):
        assert main(["eval", "--backend", "openai", "--base_url", url, "--model", "m", "--n", "2",
                     "--reasoning_budget", "64", "--baselines", "random", "--boards", "0", "--out", str(tmp_path),
                     "--quiet"]) == 0
    assert [r["thinking_token_budget"] for r in server.requests] == [64, 64]
    rows = [json.loads(x) for x in (tmp_path / "llm_traces.jsonl").read_text().splitlines()]
    # The thought is kept with the answer, and the parser reads past it as before.
    assert all(r["raw_response"].startswith("<think>ghost ball first</think>{") and r["parse_status"] == "ok"
               for r in rows)
    result = json.loads((tmp_path / "results.json").read_text())
    assert result["usage"]["reasoning_tokens"] == 8 and result["backend"]["extra_body"] == {
        "thinking_token_budget": 64}
    assert "reasoning: 8 of 18 completion tokens inside <think> (4.0 a response; budget 64)" in capsys.readouterr().out


@pytest.mark.parametrize("flags, words", [
    (["--reasoning_budget", "300"], "--reasoning_budget must be >= 1 and leave room for the answer"),
    (["--reasoning_budget", "0"], "--reasoning_budget must be >= 1"),
    (["--reasoning_budget", "8", "--backend", "replay", "--responses", __file__], "not replay"),
])
def test_reasoning_flags_are_checked_before_any_work(tmp_path, capsys, flags, words):
    assert main(["eval", "--out", str(tmp_path / "o"), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1


def test_a_server_that_does_not_count_reasoning_tokens_is_said_so(tmp_path, capsys):
    with recording_server(lambda messages: "{}") as (url, server):
        assert main(["eval", "--backend", "openai", "--base_url", url, "--model", "m", "--n", "1",
                     "--reasoning_budget", "64", "--baselines", "random", "--boards", "0", "--out", str(tmp_path),
                     "--quiet"]) == 0
    assert "reasoning: tokens not reported by the backend (budget 64)" in capsys.readouterr().out
    assert "reasoning_tokens" not in json.loads((tmp_path / "results.json").read_text())["usage"]
