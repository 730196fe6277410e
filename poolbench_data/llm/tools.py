"""The tool-augmented condition (the paper's section 6.3): before it answers,
the model may call a `ghost_ball` geometry tool, executed here.

The tool is described twice, so any model can use it: as an OpenAI function
(`TOOLS`, sent to the server and to chat templates that render tools) and in
one paragraph appended to the system prompt (`TOOL_NOTE`; SmolLM2's template,
like many, ignores `tools`). A call is read from the text in the Hermes form
`<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, which is what
tool-trained open models write and what the OpenAI backend turns a
structured `tool_calls` answer into, so both backends share one loop.

Each (board, sample) thread continues until an answer holds no call or
`max_calls` turns called; the last answer is parsed and played like any
other. Every result tells the model its `calls_left`. Calls and results are
kept per shot (`ToolThread`) for the run's `tool_calls.jsonl`.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from poolbench_data.core.candidates import MAX_CUT, candidate
from poolbench_data.core.kicks import kick_candidates
from poolbench_data.core.records import Scenario
from poolbench_data.core.table import POCKET_IDS
from poolbench_data.core.shutdown import stop_if_requested
from poolbench_data.llm.player import EvalSettings, answer_record
from poolbench_data.players.play import ShotRecord
from poolbench_data.protocol.parsing import read_ball, read_target

TOOL_NAME = "ghost_ball"
TOOLS = [{
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": "Ghost-ball geometry for one object ball on this board. With a pocket: the aim angle from "
                       "the cue ball to the ghost ball, the cut angle, and the balls in the way. Without: every "
                       "pocket the ball can be cut into, open shots first, each with its cut and aim; where none is "
                       "open, a one-cushion kick at the ball.",
        "parameters": {
            "type": "object",
            "properties": {
                "target_ball": {"type": "string", "description": "object ball id, '1'..'15'"},
                "pocket": {"type": "string", "description": "pocket id: lb, lc, lt, rb, rc, rt; leave it out "
                                                            "for every pocket of the ball"},
            },
            "required": ["target_ball"],
        },
    },
}]
TOOL_NOTE = (
    "\n\nTOOL. Before you answer you may call ghost_ball(target_ball): it returns shots, the pockets that ball can "
    "be cut into, open ones first (open is true when nothing is in the way, the ghost ball is free and the cut "
    f"is below {MAX_CUT:.0f} degrees: a shot that can pot), each with its cut_angle_deg and "
    "potting_point_aim_angle_deg (cue ball to the ghost ball, aimed at the pocket's potting point between the "
    "jaws). To call it, write only "
    '<tool_call>{"name": "ghost_ball", "arguments": {"target_ball": "3"}}</tool_call> '
    "and wait for the result; add \"pocket\" for one pocket in detail (the balls in the way, and "
    "aim_angle_deg aimed at the pocket centre). When a ball has no open shot its report adds kick: the cue ball "
    "off one cushion (rail) into that ball, aimed to pot it (pot true) or just to hit it, with its aim_angle_deg "
    "(null when no cushion path is free). Each result also says calls_left, how many more calls you may "
    "make: at 0 the next turn must be the JSON action. When you are ready, answer with the JSON action as "
    "instructed."
)
# The tool as the model reads it (TOOL_NOTE, `turn_result`), recorded in every thread and results.json; preference
# pairs refuse threads of another version. A v2 that left out closed shots' aims while calls were left was measured
# and dropped: tool SFT's legal contacts 148 -> 153, but DPO's clean pots 111 -> 100 (docs/training.md). v3: a
# ball's report with nothing open adds a one-cushion kick; on the 38 of 200 held-out boards with no open own shot,
# the first own ball's kick is a legal contact on 29 at the best Oracle speed (benchmarks/bench_tool_choices.py;
# the centre Heuristic: none on the 32 indirect ones), and tool SFT's legal contacts rose 155 -> 177.
TOOL_VERSION = "ghost_ball-v3"
UNRECORDED_VERSION = "ghost_ball-v1"  # what threads and results.json from before the field played with
MAX_CALLS = 3  # tool calls a shot may make by default; the answer is the turn after the last
# Tokens a tool result adds to the conversation, an upper bound used to check the context before work: with
# SmolLM2's digit-by-digit tokenizer one pocket's answer is ~131 and a ball's report at most 218 (held-out own balls).
RESULT_TOKENS = 260  # v3's kick adds ~30 tokens to a report with nothing open
_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)


def with_tool_note(convs: list[list[dict]]) -> list[list[dict]]:
    """Each conversation with the tool's paragraph after its system prompt."""
    out = []
    for conv in convs:
        first, *rest = conv
        if first["role"] != "system":
            raise ValueError("tool conversations start with the protocol's system prompt")
        out.append([{**first, "content": first["content"] + TOOL_NOTE}, *rest])
    return out


def tool_calls(text: str) -> list[dict]:
    """The calls written in `text`: [{"name", "arguments"}]; a block that is
    not a JSON call is returned as {"name": None, "error": ...}, so the model
    hears what was wrong."""
    calls = []
    for body in _CALL.findall(text or ""):
        try:
            obj = json.loads(body)
            if not isinstance(obj, dict) or not isinstance(obj.get("arguments", {}), (dict, str)):
                raise ValueError("a call is {\"name\": ..., \"arguments\": {...}}")
            args = obj.get("arguments", {})
            calls.append({"name": obj.get("name"), "arguments": json.loads(args) if isinstance(args, str) else args})
        except ValueError as exc:
            calls.append({"name": None, "arguments": {}, "error": f"not a tool call: {exc}"})
    return calls


def ghost_ball(scenario: Scenario, target_ball, pocket=None) -> dict:
    """The paper's ghost-ball construction for one ball and pocket (aimed at
    the pocket centre, any cut), as the tool answers it, plus the aim at
    pooltool's potting point between the jaws. Measured on 200 train boards
    (seed 1), over the 1,752 (ball, pocket, speed) shots the demonstration
    search tries with a clear answer: 43.6% legal pots aimed at the centre,
    64.3% at the potting point (docs/training.md). Without a pocket: the
    ball's report (`ball_report`)."""
    if pocket is None:
        return ball_report(scenario, read_ball(target_ball, scenario))
    ball, pid = read_target(target_ball, pocket, scenario)
    c = candidate(scenario, ball, pid, aim="centre")
    pp = candidate(scenario, ball, pid, aim="potting-point")
    # `open` first: the one field a player acts on (answer, or call for another shot), before the numbers.
    return {"open": c.open, "target_ball": c.ball, "pocket": c.pocket,
            "ghost_ball": [round(c.ghost[0], 4), round(c.ghost[1], 4)],
            "aim_angle_deg": round(c.phi, 2), "potting_point_aim_angle_deg": round(pp.phi, 2),
            "cut_angle_deg": round(c.cut, 1),
            "cue_path_blocked_by": list(c.cue_blockers), "target_path_blocked_by": list(c.pocket_blockers),
            "ghost_ball_free": c.ghost_ok}


def ball_report(scenario: Scenario, ball: str) -> dict:
    """Every pocket of one ball at once: `open` (any shot open), then `shots`, the pockets with a cut below 90
    degrees (the ball can be sent there), open ones first, then those with the cue ball's path free, each by cut;
    `no_shot`, the others. Each shot is the single-pocket answer's open, cut and potting-point aim. A call per
    (ball, pocket) found the open pocket on 20 of 200 first calls of the tool-SFT model, whose first-called ball
    had one on 104 (docs/training.md); this report is ~133 tokens (SmolLM2's tokenizer, median over held-out own
    balls) against ~131 for one pocket. Without the leading `open` the tool-SFT model answered after a report with
    nothing open on 99 of 200 held-out shots; with it, 75, and legal contact rose 135 -> 148 (docs/training.md).
    A report with nothing open ends with `kick` (`kick_shot`): the way to a legal contact where no straight shot
    pots, the only one on indirect boards."""
    answers = {pid: ghost_ball(scenario, ball, pid) for pid in POCKET_IDS}
    reachable = sorted((pid for pid, r in answers.items() if r["cut_angle_deg"] < 90.0), key=lambda pid: (
        not answers[pid]["open"], bool(answers[pid]["cue_path_blocked_by"]), answers[pid]["cut_angle_deg"]))
    shots = [{"pocket": pid, "open": answers[pid]["open"], "cut_angle_deg": answers[pid]["cut_angle_deg"],
              "potting_point_aim_angle_deg": answers[pid]["potting_point_aim_angle_deg"]} for pid in reachable]
    # `open` first, as in one pocket's answer: the one thing a player acts on (answer, or call for another ball).
    out = {"open": any(s["open"] for s in shots), "target_ball": ball, "shots": shots,
           "no_shot": [pid for pid in POCKET_IDS if pid not in reachable]}
    return out if out["open"] else {**out, "kick": kick_shot(scenario, ball)}


def kick_shot(scenario: Scenario, ball: str) -> dict | None:
    """The cheapest clear one-cushion kick at `ball` (core.kicks: aimed to pot it where a pocket's path is free,
    else a full hit), geometry only: the cue ball's centre mirrored off the rail's line, no simulation. None
    when no cushion path is free. The pocket of a plain hit is the one nearest the ball (a shot names one)."""
    k = next((k for k in _kicks(scenario) if k.ball == ball), None)
    return None if k is None else {"rail": k.rail, "pocket": k.pocket, "pot": k.pot, "aim_angle_deg": round(k.phi, 2)}


@functools.lru_cache(maxsize=64)
def _kicks(scenario: Scenario) -> tuple:
    # A board's reports ask for every own ball's kicks; the search covers them all at once.
    return tuple(kick_candidates(scenario))


def call_of(target_ball: str, pocket: str | None = None) -> dict:
    """The call ghost_ball(target_ball[, pocket]), as `tool_calls` reads it from a model's text."""
    args = {"target_ball": target_ball} if pocket is None else {"target_ball": target_ball, "pocket": pocket}
    return {"name": TOOL_NAME, "arguments": args}


def turn_result(scenario: Scenario, call: dict, calls_left: int) -> dict:
    """A call's result as the model reads it in the conversation: `calls_left` (the turns that may still call;
    at 0 the next turn is read as the action) before the tool's own answer. The tool-SFT model, never told
    the cap, wrote a fourth call where the action was due on 59 of 200 shots (docs/training.md)."""
    return {"calls_left": calls_left, **run_call(scenario, call)}


def run_call(scenario: Scenario, call: dict) -> dict:
    """One call's result; a bad call gets an error the model can read."""
    if call.get("error"):
        return {"error": call["error"]}
    if call.get("name") != TOOL_NAME:
        return {"error": f"unknown tool {call.get('name')!r}; the only tool is {TOOL_NAME}"}
    args = call.get("arguments") or {}
    return tool_answer(scenario, args.get("target_ball"), args.get("pocket"))


def tool_answer(scenario: Scenario, target_ball, pocket) -> dict:
    """What ghost_ball(target_ball[, pocket]) answers on this board; a ball or pocket that is not there gets an
    error the model can read."""
    try:
        return ghost_ball(scenario, target_ball, pocket)
    except ValueError as exc:
        return {"error": str(exc)}


def answer_calls(scenario: Scenario, conv: list[dict], text: str, calls_left: int, log: list[dict]) -> None:
    """Append a turn that called the tool to `conv`: the model's text (with its calls as OpenAI `tool_calls`),
    then one `tool` message per call with its result (`turn_result`); each call and result also goes to `log`.
    The one way a conversation grows past a call (the evaluator's threads, the verifiers environment)."""
    made = tool_calls(text)
    ids = [f"call_{len(log) + k}" for k in range(len(made))]
    conv.append({"role": "assistant", "content": text, "tool_calls": [
        {"id": cid, "type": "function", "function": {"name": str(c.get("name")),
                                                      "arguments": json.dumps(c.get("arguments") or {})}}
        for cid, c in zip(ids, made)]})
    for cid, c in zip(ids, made):
        result = turn_result(scenario, c, calls_left)
        log.append({"arguments": c.get("arguments"), "result": result})
        conv.append({"role": "tool", "tool_call_id": cid, "content": json.dumps(result)})


@dataclass
class ToolThread:
    """One (board, sample) conversation while it calls tools."""

    board: int
    sample: int
    conv: list[dict]
    text: str = ""
    calls: list[dict] = field(default_factory=list)  # {"arguments", "result"} in order
    failure: object = None  # the GenerationFailure that ended it, if any
    turns: list[str] = field(default_factory=list)  # the model's text of each turn that called, in order

    def to_row(self, scenario_id: str, player: str) -> dict:
        # `turns` + `final_response` are every word the model wrote: preference pairs rebuild the
        # conversation from them (prefs.tool_pairs).
        return {"scenario_id": scenario_id, "player": player, "sample": self.sample, "calls": self.calls,
                "turns": self.turns, "final_response": self.text, "request_failed": self.failure is not None,
                "tool_version": TOOL_VERSION}


def play_with_tools(scenarios: Sequence[Scenario], convs: list[list[dict]], backend, settings: EvalSettings, *,
                    player: str, max_calls: int) -> tuple[list[ShotRecord], list, list[ToolThread]]:
    """Every board's `settings.samples` threads, each calling the tool up to
    `max_calls` times; returns the records (board by board, as evaluate_model),
    each turn's GenerationResult and the threads."""
    convs = with_tool_note(convs)
    gen = backend.generate(convs, n=settings.samples, temperature=settings.temperature,
                           max_tokens=settings.max_tokens, seed=settings.seed, tools=TOOLS)
    gens, failed = [gen], gen.failed_slots()
    threads = []
    for i, texts in enumerate(gen.texts):
        for j, text in enumerate(texts):
            threads.append(ToolThread(i, j, list(convs[i]), text, failure=failed.get((i, j))))
    for turn in range(1, max_calls + 1):
        stop_if_requested()  # a SIGTERM the engine's generate swallowed (seen) still ends the run between turns
        live = [t for t in threads if t.failure is None and tool_calls(t.text)]
        if not live:
            break
        for t in live:
            t.turns.append(t.text)
            answer_calls(scenarios[t.board], t.conv, t.text, max_calls - turn, t.calls)
        gen = backend.generate([t.conv for t in live], n=1, temperature=settings.temperature,
                               max_tokens=settings.max_tokens, seed=settings.seed + 1000 * turn, tools=TOOLS)
        gens.append(gen)
        failed = gen.failed_slots()
        for k, t in enumerate(live):
            t.failure, t.text = failed.get((k, 0)), gen.texts[k][0]
    records = [answer_record(scenarios[t.board], t.text, t.failure, player=player, sample=t.sample) for t in threads]
    return records, gens, threads


def tool_summary(threads: Sequence[ToolThread]) -> dict:
    """How much the tool was used: calls, shots that called it, bad calls."""
    calls = [c for t in threads for c in t.calls]
    return {"shots": len(threads), "shots_with_calls": sum(1 for t in threads if t.calls), "calls": len(calls),
            "calls_with_error": sum(1 for c in calls if "error" in c["result"]),
            "failed_requests": sum(1 for t in threads if t.failure is not None), "tool_version": TOOL_VERSION}
