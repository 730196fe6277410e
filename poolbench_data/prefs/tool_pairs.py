"""On-policy preference pairs for the tool track (the `pairs_tools` config).

Input: `poolbench eval --tools --samples k` on train boards. Each (board,
sample) thread is the model's own conversation: its turns (tool_calls.jsonl,
`turns` + `final_response`), the tool's answers (recomputed, and checked
against the recorded ones), its final action scored by the simulator
(llm_traces.jsonl). Per board, the best sample against the worst by
`pairs.fine_score`, where the scores differ.

The pair is the first turn where the two threads' decisions part: a call's
(ball, pocket), or an answer's (ball, aim, speed), the parts of the action the
physics uses. Its prompt is the conversation up to that turn (the chosen
thread's), its completions one model turn each, so DPO's loss falls on what
the model wrote there and never on the tool's answers. A thread whose answer
did not parse, or that never called the tool, differs from the others in
format, not in choice: it is left out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from poolbench_data.boards.splits import SplitLeakError, leak_problem
from poolbench_data.core.records import Scenario
from poolbench_data.llm.tools import run_call, tool_calls, with_tool_note
from poolbench_data.prefs.pairs import _pair, answered, fine_score
from poolbench_data.protocol.prompts import messages

SOURCE = "tool-on-policy"


class ThreadMismatch(ValueError):
    """A recorded thread the tool does not reproduce (another tool version, another board)."""


def thread_messages(scenario: Scenario, thread: Mapping) -> list[dict]:
    """The conversation the model had: prompt with the tool's paragraph, each turn, the tool's answers, the final
    answer. Raise ThreadMismatch when a recorded result is not what the tool answers now."""
    conv = [{"role": m["role"], "content": m["content"]} for m in with_tool_note([messages(scenario)])[0]]
    recorded = iter(thread["calls"])
    for text in thread["turns"]:
        conv.append({"role": "assistant", "content": text})
        for call in tool_calls(text):
            result = run_call(scenario, call)
            if next(recorded, {}).get("result") != result:
                raise ThreadMismatch(f"board {scenario.id!r} sample {thread['sample']}: the recorded tool answer "
                                     "differs from the tool's (a run with another tool version?); re-run the eval")
            conv.append({"role": "tool", "content": json.dumps(result)})
    conv.append({"role": "assistant", "content": thread["final_response"]})
    return conv


def decisions(thread: Mapping, trace: Mapping) -> list[tuple]:
    """Per model turn, what it chose: ("call", ball, pocket) or ("answer", ball, aim, speed)."""
    out: list[tuple] = []
    for text in thread["turns"]:
        call = (tool_calls(text) or [{}])[0]
        args = call.get("arguments") or {}
        out.append(("call", str(args.get("target_ball")), str(args.get("pocket"))))
    a = trace.get("action") or {}
    out.append(("answer", a.get("target_ball"), a.get("phi"), a.get("V0")))
    return out


def usable(thread: Mapping, trace: Mapping | None) -> bool:
    """A thread that called the tool and ended in a parsed answer: one that differs in choice, not format."""
    return (trace is not None and not thread["request_failed"] and bool(thread["calls"]) and answered(trace)
            and trace["parse_status"] == "ok")


def _described(d: tuple) -> str:
    if d[0] == "call":
        return f"call ghost_ball({d[1]}, {d[2]})"
    return f"answer ball {d[1]} aim {d[2]} speed {d[3]}"


def tool_pairs(scenarios: Sequence[dict], threads: Sequence[Mapping], traces: Sequence[Mapping]) -> list[dict]:
    """One pair per board and player where the best usable thread outscores the worst (module docstring)."""
    old = next((t for t in threads if "turns" not in t), None)
    if old is not None:
        raise ThreadMismatch(f"thread {old['scenario_id']!r} sample {old['sample']} has no `turns` (written by an "
                             "older poolbench eval); run `poolbench eval --tools` again")
    by_thread = {(t["scenario_id"], t["player"], t["sample"]): t for t in traces if t.get("player_kind") == "llm"}
    grouped: dict[str, dict[str, list[tuple[Mapping, Mapping]]]] = {}  # board -> player -> (thread, trace)
    for th in threads:
        tr = by_thread.get((th["scenario_id"], th["player"], th["sample"]))
        if usable(th, tr):
            grouped.setdefault(th["scenario_id"], {}).setdefault(th["player"], []).append((th, tr))
    out = []
    for row in scenarios:
        if leak := leak_problem(row, None, id_key="id"):
            raise SplitLeakError(f"scenario {row['id']!r}: {leak}; pairs come from train boards")
        scenario = None
        for player, samples in sorted(grouped.get(row["id"], {}).items()):
            both = sorted(samples, key=lambda x: x[0]["sample"])
            best = max(both, key=lambda x: fine_score(x[1]))  # first of the best, by sample order
            worst = min(both, key=lambda x: fine_score(x[1]))
            if fine_score(best[1]) <= fine_score(worst[1]):
                continue
            db, dw = decisions(*best), decisions(*worst)
            turn = next((k for k, (x, y) in enumerate(zip(db, dw)) if x != y), None)
            if turn is None:  # same choices, different wording: no preference about play
                continue
            scenario = scenario or Scenario.from_row(row)
            conv_b, conv_w = thread_messages(scenario, best[0]), thread_messages(scenario, worst[0])
            at_b, at_w = _assistant_index(conv_b, turn), _assistant_index(conv_w, turn)
            model = best[1].get("model") or player
            pair = _pair(row, conv_b[at_b]["content"], conv_w[at_w]["content"], best[1], worst[1], SOURCE,
                         model, model, prompt=conv_b[:at_b])
            out.append({**pair, "turn": turn, "chosen_decision": _described(db[turn]),
                        "rejected_decision": _described(dw[turn])})
    return out


def _assistant_index(conv: list[dict], turn: int) -> int:
    """Index in `conv` of the model's `turn`-th message (0-based)."""
    return [i for i, m in enumerate(conv) if m["role"] == "assistant"][turn]
