"""On-policy preference pairs for the tool track (the `pairs_tools` config).

Input: `poolbench eval --tools --samples k` on train boards. Each (board, sample) thread is the model's own
conversation: its turns (tool_calls.jsonl, `turns` + `final_response`), the tool's answers (recomputed, and
checked against the recorded ones), its final action scored by the simulator (llm_traces.jsonl). Per board, every
two samples whose `pairs.text.fine_score` differ, the better against the worse (best against worst alone would
give one pair a board; both sides are the model's own words, so the supervised term falls on what it already
writes); with `robust`, only where the better also plays better on average around its action (`pairs.noise`).

The pair is the first turn where the two threads' decisions part: a call's
(ball, pocket), or an answer's (ball, aim, speed), the parts of the action the
physics uses. Its prompt is the conversation up to that turn (the chosen
thread's), its completions one model turn each, so DPO's loss falls on what
the model wrote there and never on the tool's answers. A thread whose answer
did not parse, or that never called the tool, differs from the others in
format, not in choice: it is left out.

A second source, `tool-recovery`, pairs the decision the tool-SFT model gets
most wrong: answering after a tool answer that was not clear (a ball in a
path, a ghost ball not free, an error). Where a thread did that and its shot
was not a legal pot, the prompt is the model's own conversation up to that
answer, `rejected` is the answer it wrote, and `chosen` is a call for the
board's demonstrated open shot (`demos.tools.find_pot`: clear in the tool, and
written with the tool's aim a legal pot in the simulator), scored by playing
that continuation. The state is on-policy; the chosen turn is the recovery
the demonstrations show.

Alone, recovery pairs teach the turn type, not the condition: every chosen
side is a call, so DPO learns to call whatever the tool says and never
answers (docs/results.md#the-preference-pairs). Their mirror, `tool-answer`: where a thread
answered after a clear tool answer and potted legally, its answer is chosen
over a further call for an own shot the tool reports blocked, scored by
playing what follows it (that shot written with the tool's aim at the
thread's speed; at the eval's call cap the call itself, read as the action:
no shot). With both sources on, each keeps as many pairs as the other has.

`tool-at-cap`: where a thread's last tool result said `calls_left` 0 and the
model wrote yet another call (read as its action: no shot, unparseable), the
action the demonstrations write there (`demos.tools.cap_answer`: a called shot
with the tool's aim) is chosen over that call. These threads never enter
on-policy pairs (their answer did not parse), so nothing else teaches the cap,
where a tool-SFT model writes such calls (docs/results.md#tool-track).

`tool-cap-answer`, its mirror (not a default: DPO with it pots fewer balls cleanly than without): the
action at the cap after a closed report over a call. From each thread that answered after such a report: at the
cap, its own answer (or `cap_answer`'s, where that scores higher); where calls were left, its conversation
continued with calls for own balls the tool reports blocked until none are left, then `cap_answer`. The rejected
side is a call for an own ball not yet called (read at the cap as the action: no shot). Recovery pairs teach
"call after a blocked report" where calls are left; with them alone, DPO's model writes a fourth call at the cap.

Whatever the sources, the builder keeps `turn_kinds.balance_kinds`: of the pairs whose
two sides differ in kind (a call against an answer) at most
`checks.pairs.MAX_TURN_KIND_SHARE` choose the same kind (the smallest physics
margins of the larger kind are dropped): DPO on a set that mostly chooses the
call learns to call whatever the tool says.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from poolbench_data.boards.splits import SplitLeakError, leak_problem
from poolbench_data.core.records import Scenario, Shot
from poolbench_data.llm.tools import (TOOL_VERSION, UNRECORDED_VERSION, call_of, replayed_result, tool_calls,
                                      turn_result, with_tool_note)
from poolbench_data.players.play import play_shot
from poolbench_data.players.traces import trace_row
from poolbench_data.pairs.text import _pair, answered, fine_score, physics_score
from poolbench_data.pairs.noise import MIN_MARGIN, robust_score
from poolbench_data.demos.tools import AIM_FIELD, blocked_calls, call_text, cap_answer, clear, find_pot, shown
from poolbench_data.protocol.parsing import parse_action
from poolbench_data.protocol.prompts import format_action, messages

SOURCE = "tool-on-policy"
RECOVERY = "tool-recovery"
ANSWER = "tool-answer"
AT_CAP = "tool-at-cap"
CAP_ANSWER = "tool-cap-answer"
TOOL_SOURCES = (SOURCE, RECOVERY, ANSWER, AT_CAP, CAP_ANSWER)


class ThreadMismatch(ValueError):
    """A recorded thread the tool does not reproduce (another tool version, another board)."""


def thread_messages(scenario: Scenario, thread: Mapping) -> list[dict]:
    """The conversation the model had: prompt with the tool's paragraph, each turn, the tool's answers, the final
    answer. Raise ThreadMismatch when a recorded result is not what the tool answers now (`replayed_result`)."""
    version = thread.get("tool_version", UNRECORDED_VERSION)
    if version != TOOL_VERSION:
        raise ThreadMismatch(f"board {scenario.id!r} sample {thread['sample']}: recorded with tool {version}, "
                             f"this is {TOOL_VERSION}; re-run the eval")
    conv = [{"role": m["role"], "content": m["content"]} for m in with_tool_note([messages(scenario)])[0]]
    recorded = iter(thread["calls"])
    for text in thread["turns"]:
        conv.append({"role": "assistant", "content": text})
        for call in tool_calls(text):
            was = next(recorded, {}).get("result") or {}
            result = replayed_result(scenario, call, was)
            if was != result:
                raise ThreadMismatch(f"board {scenario.id!r} sample {thread['sample']}: the recorded tool answer "
                                     "differs from the tool's (a run with another tool version?); re-run the eval")
            conv.append({"role": "tool", "content": json.dumps(result)})
    conv.append({"role": "assistant", "content": thread["final_response"]})
    return conv


def decisions(thread: Mapping, trace: Mapping) -> list[tuple]:
    """Per model turn, what it chose: ("call", ball, pocket or None) or ("answer", ball, aim, speed)."""
    out: list[tuple] = []
    for text in thread["turns"]:
        out.append(("call", *_called((tool_calls(text) or [{}])[0])))
    a = trace.get("action") or {}
    out.append(("answer", a.get("target_ball"), a.get("phi"), a.get("V0")))
    return out


def usable(thread: Mapping, trace: Mapping | None) -> bool:
    """A thread that called the tool and ended in a parsed answer: one that differs in choice, not format."""
    return (trace is not None and not thread["request_failed"] and bool(thread["calls"]) and answered(trace)
            and trace["parse_status"] == "ok")


def _described(d: tuple) -> str:
    if d[0] == "call":
        return f"call ghost_ball({d[1]})" if d[2] is None else f"call ghost_ball({d[1]}, {d[2]})"
    return f"answer ball {d[1]} aim {d[2]} speed {d[3]}"


def _threads(threads: Sequence[Mapping], traces: Sequence[Mapping]) -> tuple[dict, dict]:
    """(board -> player -> [(thread, trace)] of the usable threads, board -> [(thread, trace)] of the threads that
    wrote a call where their action was due), each in sample order."""
    old = next((t for t in threads if "turns" not in t), None)
    if old is not None:
        raise ThreadMismatch(f"thread {old['scenario_id']!r} sample {old['sample']} has no `turns` (written by an "
                             "older poolbench eval); run `poolbench eval --tools` again")
    by_thread = {(t["scenario_id"], t["player"], t["sample"]): t for t in traces if t.get("player_kind") == "llm"}
    usable_ones: dict[str, dict[str, list[tuple[Mapping, Mapping]]]] = {}
    capped: dict[str, list[tuple[Mapping, Mapping]]] = {}
    for th in sorted(threads, key=lambda t: (t["player"], t["sample"])):
        tr = by_thread.get((th["scenario_id"], th["player"], th["sample"]))
        if usable(th, tr):
            usable_ones.setdefault(th["scenario_id"], {}).setdefault(th["player"], []).append((th, tr))
        elif (tr is not None and not th["request_failed"] and th["calls"] and at_cap(th["calls"])
              and tool_calls(th["final_response"])):
            capped.setdefault(th["scenario_id"], []).append((th, tr))
    return usable_ones, capped


def usable_samples(scenarios: Sequence[dict], threads: Sequence[Mapping], traces: Sequence[Mapping]):
    """(row, scenario, player, [(thread, trace)] of its usable threads) per board and player, in board order, for
    the sources built outside `tool_pairs` (pairs.speed, pairs.further_call); a test board raises."""
    grouped, _ = _threads(threads, traces)
    for row in scenarios:
        if leak := leak_problem(row, None, id_key="id"):
            raise SplitLeakError(f"scenario {row['id']!r}: {leak}; pairs come from train boards")
        for player, samples in sorted(grouped.get(row["id"], {}).items()):
            yield row, Scenario.from_row(row), player, samples


def _at_cap(row: dict, scenario: Scenario, samples: list) -> list[dict]:
    """For each distinct conversation that called again at the cap: the demonstrations' action there against
    that call."""
    out, seen = [], set()
    for thread, trace in samples:
        conv = thread_messages(scenario, thread)
        key = json.dumps(conv)
        if key in seen:
            continue
        seen.add(key)
        answer = cap_answer(scenario, [_called(c) for c in thread["calls"]])  # simulates: once a conversation
        if answer is None:
            continue
        chosen = _played_row(row, scenario, answer[0], "tool_oracle")
        if chosen is None or fine_score(chosen) <= fine_score(trace):
            continue
        model = trace.get("model") or thread["player"]
        pair = _pair(row, answer[0], thread["final_response"], chosen, trace, AT_CAP, "tool_oracle", model,
                     prompt=conv[:-1])
        shot = answer[1]
        out.append({**pair, "turn": len(thread["turns"]),
                    "chosen_decision": _described(("answer", shot.target_ball, shot.phi, shot.V0)),
                    "rejected_decision": _described(("call", *_called(tool_calls(thread["final_response"])[0])))})
    return out


def tool_pairs(scenarios: Sequence[dict], threads: Sequence[Mapping], traces: Sequence[Mapping],
               sources: Sequence[str] = TOOL_SOURCES, min_level_gap: int = 0, robust: bool = False) -> list[dict]:
    """The pairs of `sources`, board by board (module docstring). A thread whose last tool result said
    `calls_left` 0 was at the eval's cap: a recovery call is never taught where the evaluator would not run it.
    `min_level_gap`: on-policy pairs whose sides' physics levels (`pairs.text.physics_score`: foul, legal contact,
    legal pot) differ by at least this much; 0 keeps every pair whose fine scores differ (two fouls included).
    `robust`: on-policy pairs whose chosen side also leads by `noise.MIN_MARGIN` in `noise.robust_score`."""
    unknown = [x for x in sources if x not in TOOL_SOURCES]
    if unknown:
        raise ValueError(f"unknown tool pair source(s) {unknown}; available: {', '.join(TOOL_SOURCES)}")
    if min_level_gap < 0:
        raise ValueError(f"min_level_gap must be >= 0 (got {min_level_gap})")
    grouped, capped = _threads(threads, traces)
    if AT_CAP not in sources:
        capped = {}
    out: list[dict] = []
    by_source: dict[str, list[dict]] = {RECOVERY: [], ANSWER: []}
    for row in scenarios:
        if leak := leak_problem(row, None, id_key="id"):
            raise SplitLeakError(f"scenario {row['id']!r}: {leak}; pairs come from train boards")
        if row["id"] not in grouped and row["id"] not in capped:
            continue
        scenario = Scenario.from_row(row)
        out += _at_cap(row, scenario, capped.get(row["id"], []))
        for player, samples in sorted(grouped.get(row["id"], {}).items()):
            if SOURCE in sources:
                out += _on_policy(row, scenario, player, samples, min_level_gap, robust)
            if RECOVERY in sources:
                by_source[RECOVERY] += _recoveries(row, scenario, samples)
            if ANSWER in sources:
                by_source[ANSWER] += _answers_now(row, scenario, samples)
            if CAP_ANSWER in sources:
                out += _cap_answers(row, scenario, samples)
    if RECOVERY in sources and ANSWER in sources:  # as many answers chosen as calls: the condition decides
        n = min(map(len, by_source.values()))
        by_source = {k: v[:n] for k, v in by_source.items()}
    return out + by_source[RECOVERY] + by_source[ANSWER]


def _on_policy(row: dict, scenario: Scenario, player: str, samples: list, min_level_gap: int = 0,
               robust: bool = False) -> list[dict]:
    """Every two samples that score differently (their levels by at least `min_level_gap`; with `robust`, the
    better also by `noise.MIN_MARGIN` in `noise.robust_score`), the better against the worse, at the first turn where
    their decisions part; one pair per distinct (prompt, chosen, rejected)."""
    out, seen = [], set()
    convs = [thread_messages(scenario, thread) for thread, _ in samples]
    scores = [fine_score(trace) for _, trace in samples]
    levels = [physics_score(trace) for _, trace in samples]
    steady = [robust_score(scenario, trace) for _, trace in samples] if robust else None
    decided = [decisions(*sample) for sample in samples]
    for i, j in ((i, j) for i in range(len(samples)) for j in range(i + 1, len(samples))):
        if scores[i] == scores[j] or abs(levels[i] - levels[j]) < min_level_gap:
            continue
        b, w = (i, j) if scores[i] > scores[j] else (j, i)
        # The outcome did not hold up under the jitter, or a grid stopped early (robust_score None): no label.
        if steady and (None in (steady[b], steady[w]) or steady[b] - steady[w] < MIN_MARGIN):
            continue
        db, dw = decided[b], decided[w]
        turn = next((k for k, (x, y) in enumerate(zip(db, dw)) if x != y), None)
        if turn is None:  # same choices, different wording: no preference about play
            continue
        at_b, at_w = _assistant_index(convs[b], turn), _assistant_index(convs[w], turn)
        key = (json.dumps(convs[b][:at_b]), convs[b][at_b]["content"], convs[w][at_w]["content"])
        if key in seen:
            continue
        seen.add(key)
        model = samples[b][1].get("model") or player
        pair = _pair(row, key[1], key[2], samples[b][1], samples[w][1], SOURCE, model, model,
                     prompt=convs[b][:at_b])
        out.append({**pair, "turn": turn, "chosen_decision": _described(db[turn]),
                    "rejected_decision": _described(dw[turn])})
    return out


def _recoveries(row: dict, scenario: Scenario, samples: list) -> list[dict]:
    """A recovery pair for each distinct thread that answered after an unclear tool answer and did not pot."""
    out, seen, demo = [], set(), None
    for thread, trace in samples:
        calls = thread["calls"]
        if clear(calls[-1]["result"]) or at_cap(calls) or physics_score(trace) >= 3:
            continue
        if demo is None:  # once a board, and only for a board that needs it: the search simulates
            demo = _demonstrated(row, scenario)
        if not demo:
            return out  # the tool's geometry gives this board no legal pot to recover to
        ball, pocket, chosen = demo
        conv = thread_messages(scenario, thread)
        key = (json.dumps(conv[:-1]), thread["final_response"])
        if (ball, None) in {_called(c) for c in calls} or key in seen:  # its report was shown already
            continue
        seen.add(key)
        model = trace.get("model") or thread["player"]
        pair = _pair(row, call_text(ball), thread["final_response"], chosen, trace, RECOVERY,
                     "tool_oracle", model, prompt=conv[:-1])
        turn = len(thread["turns"])
        out.append({**pair, "turn": turn, "chosen_decision": _described(("call", ball, None)),
                    "rejected_decision": _described(decisions(thread, trace)[-1])})
    return out


def _answers_now(row: dict, scenario: Scenario, samples: list) -> list[dict]:
    """A pair for each distinct thread that answered after a clear tool answer and potted legally: its answer
    against a further call for a blocked own shot (module docstring)."""
    out, seen = [], set()
    for thread, trace in samples:
        calls = thread["calls"]
        if not clear(calls[-1]["result"]) or physics_score(trace) < 3:
            continue
        called = {_called(c)[0] for c in calls}
        blocked = [b for b, _ in blocked_calls(scenario, _called(calls[-1])[0]) if b not in called]
        conv = thread_messages(scenario, thread)
        key = json.dumps(conv)
        if not blocked or key in seen:
            continue
        seen.add(key)
        ball = blocked[0]
        further = call_text(ball)
        if at_cap(calls):  # the evaluator reads the turn after the last call as the action
            follows = further
        elif options := shown(scenario, [(ball, None)]):  # the report's first shot (none open: its best)
            _, pocket, result = options[0]
            follows = format_action(Shot(phi=result[AIM_FIELD], V0=trace["action"]["V0"], target_ball=ball,
                                         target_pocket=pocket), scenario)
        else:  # the ball cannot be cut into any pocket: its report shows no aim to write
            continue
        model = trace.get("model") or thread["player"]
        rejected = _played_row(row, scenario, follows, "further_call")
        if rejected is None or fine_score(rejected) >= fine_score(trace):  # stopped, or went in anyway
            continue
        pair = _pair(row, thread["final_response"], further, trace, rejected, ANSWER, model, "further_call",
                     prompt=conv[:-1])
        out.append({**pair, "turn": len(thread["turns"]), "chosen_decision": _described(decisions(thread, trace)[-1]),
                    "rejected_decision": _described(("call", ball, None))})
    return out


def _cap_answers(row: dict, scenario: Scenario, samples: list) -> list[dict]:
    """For each distinct thread that answered after a report with no open shot: the action at the cap against a
    further call (module docstring)."""
    out, seen = [], set()
    for thread, trace in samples:
        calls = thread["calls"]
        if clear(calls[-1]["result"]):
            continue
        conv = thread_messages(scenario, thread)[:-1]
        made = [_called(c) for c in calls]
        left = calls[-1]["result"].get("calls_left", 0)
        more = [b for b, _ in blocked_calls(scenario, made[-1][0]) if b not in {m[0] for m in made}][:left]
        if len(more) < left:  # too few blocked own balls to reach the cap with
            continue
        for k, ball in enumerate(more, 1):
            conv += [{"role": "assistant", "content": call_text(ball)},
                     {"role": "tool", "content": json.dumps(turn_result(scenario, call_of(ball), left - k))}]
        made += [(b, None) for b in more]
        uncalled = [b.id for b in scenario.own() if b.id not in {m[0] for m in made}]
        key = json.dumps(conv)
        if not uncalled or key in seen:
            continue
        seen.add(key)
        answer = cap_answer(scenario, made)
        best = (thread["final_response"], trace, trace.get("model") or thread["player"]) if not more else None
        if answer is not None:
            played = _played_row(row, scenario, answer[0], "tool_oracle")
            if played is not None and (best is None or fine_score(played) > fine_score(trace)):
                best = (answer[0], played, "tool_oracle")
        further = call_text(uncalled[0])
        rejected = None if best is None else _played_row(row, scenario, further, "further_call")
        if rejected is None:  # no side to choose, or the call's shot stopped early
            continue
        a = best[1].get("action") or {}
        pair = _pair(row, best[0], further, best[1], rejected, CAP_ANSWER, best[2], "further_call", prompt=conv)
        out.append({**pair, "turn": len(calls) + len(more),
                    "chosen_decision": _described(("answer", a.get("target_ball"), a.get("phi"), a.get("V0"))),
                    "rejected_decision": _described(("call", uncalled[0], None))})
    return out


def at_cap(calls: Sequence[Mapping]) -> bool:
    """The thread's last tool result said no calls were left: its next turn is read as the action."""
    return calls[-1]["result"].get("calls_left", 1) <= 0


def _called(call: Mapping) -> tuple[str, str | None]:
    """(ball, pocket) a call named; pocket None for a ball's report."""
    args = call.get("arguments") or {}
    return str(args.get("target_ball")), None if args.get("pocket") is None else str(args.get("pocket"))


def _played_row(row: dict, scenario: Scenario, answer: str, model: str) -> dict | None:
    """The trace row of `answer` parsed and played exactly as the evaluator does; None where its simulation stopped
    early (`pairs.answered`, as for the model's rows): no side is scored from where the balls happened to be."""
    oracle = Shot.from_row(row["oracle_shot"]) if row.get("oracle_shot") else None
    p = parse_action(answer, scenario)
    record = play_shot(scenario, p.shot, player=model, kind="llm", raw_response=answer, parse_status=p.status)
    played = trace_row(record, oracle, model=model)
    return played if answered(played) else None


def _demonstrated(row: dict, scenario: Scenario) -> tuple:
    """The board's demonstrated open shot, (ball, pocket, the trace row of its written action), or () where
    there is none."""
    oracle = Shot.from_row(row["oracle_shot"]) if row.get("oracle_shot") else None
    found = find_pot(scenario, oracle)
    if found is None:
        return ()
    ball, pocket, answer, _, _ = found
    played = _played_row(row, scenario, answer, "tool_oracle")  # None: this replay hit the wall clock
    return () if played is None else (ball, pocket, played)


def _assistant_index(conv: list[dict], turn: int) -> int:
    """Index in `conv` of the model's `turn`-th message (0-based)."""
    return [i for i, m in enumerate(conv) if m["role"] == "assistant"][turn]
