"""The tool-augmented condition (the paper's section 6.3): before it answers,
the model may call a `ghost_ball` geometry tool, executed here.

The tool is described twice, so any model can use it: as an OpenAI function
(`TOOLS`, sent to the server and to chat templates that render tools) and in
one paragraph appended to the system prompt (`TOOL_NOTE`; SmolLM2's template,
like many, ignores `tools`). A call is read from the text in the Hermes form
`<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, which is what
tool-trained open models write and what the OpenAI backend turns a
structured `tool_calls` answer into, so both backends share one loop. Only
calls outside the model's reasoning count (`tool_calls`): a call written
inside <think> ... </think> or in a server's `reasoning_content` is not run.
A vLLM server with a reasoning parser looks for structured calls in the
content only; one without cuts the content at the first call it parses,
so a call inside an open <think> leaves the thought unclosed and every call
after it is read as reasoning too.

A shot makes at most `max_calls` calls, counted call by call (a turn may
hold several; a malformed one counts too): each call past the cap is refused
with an error instead of run, and the turn after the cap is the answer. A
thread continues until an answer holds no call or its calls are spent; the
last answer is parsed and played like any other. Every result tells the
model its `calls_left`. Any text is read: a block that is not a call gets an
error the model reads (`read_call`), never an exception. Calls and results
are kept per shot (`ToolThread`) for the run's `tool_calls.jsonl`.
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
from poolbench_data.protocol.parsing import decode_json, read_ball, read_target, strip_think

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
# Added to TOOL_NOTE where the reports show the cue ball's lines (`lines`: the run-out game's position play).
LINES_NOTE = (
    " Each open shot also has cue_after_deg: the direction the cue ball travels after it hits the ball, in the "
    "aim's degrees, once its spin has taken: stun (b = 0), follow (b > 0) and draw (b < 0); null where it stops."
)
# The tool as the model reads it (TOOL_NOTE, `turn_result`), recorded in every thread and results.json; preference
# pairs refuse threads of another version. This version shows closed shots' aims while calls are left (hiding
# them costs DPO clean pots), and a ball's report with nothing open adds a one-cushion kick, the way to a legal
# contact where no straight shot pots (docs/results.md#the-tool-report; what the kicks reach:
# docs/results.md#what-the-tool-lets-a-player-reach, analysis/tool_reach.py).
TOOL_VERSION = "ghost_ball-v3"
LINES_VERSION = TOOL_VERSION + "+lines"  # the same tool with `lines`: its reports show cue_after_deg
UNRECORDED_VERSION = "ghost_ball-v1"  # the version of threads and results.json that record none (no kicks)
MAX_CALLS = 3  # tool calls a shot may make by default, counted call by call; the answer is the turn after the last
# What a call past the cap gets instead of a result. No number in it: a recorded thread replays it as it was
# (pairs.tools), whatever cap the run had.
OVER_CAP = "no calls left: this call was not run; the next turn must be the JSON action"
CALL_FORM = '<tool_call>{"name": "ghost_ball", "arguments": {"target_ball": "3"}}</tool_call>'
# Tokens a tool result adds to the conversation, an upper bound used to check the context before work: with
# SmolLM2's digit-by-digit tokenizer one pocket's answer is ~131 and a ball's report at most 218 (held-out own balls).
RESULT_TOKENS = 260  # a kick adds ~30 tokens to a report with nothing open
LINE_TOKENS = 40  # what cue_after_deg adds to each open shot of a report (`lines`)
_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)


def tool_version(lines: bool = False) -> str:
    return LINES_VERSION if lines else TOOL_VERSION


def result_tokens(lines: bool = False) -> int:
    """An upper bound on the tokens one call's result adds (every shot of a report open, with `lines`)."""
    return RESULT_TOKENS + (len(POCKET_IDS) * LINE_TOKENS if lines else 0)


def with_tool_note(convs: list[list[dict]], lines: bool = False) -> list[list[dict]]:
    """Each conversation with the tool's paragraph (and with `lines` the lines' sentence) after its system
    prompt."""
    note = TOOL_NOTE + (LINES_NOTE if lines else "")
    out = []
    for conv in convs:
        first, *rest = conv
        if first["role"] != "system":
            raise ValueError("tool conversations start with the protocol's system prompt")
        out.append([{**first, "content": first["content"] + note}, *rest])
    return out


def tool_calls(text: str) -> list[dict]:
    """The calls written in `text` outside its reasoning: [{"name", "arguments"}], each read by `read_call`.
    Reasoning is no action: a call inside <think> ... </think> (where every backend puts the reasoning a server
    returns apart, `reasoning_content`) is a thought about calling, as `parse_action` reads past it."""
    return [read_call(body) for body in _CALL.findall(strip_think(text or ""))]


def read_call(body: str) -> dict:
    """One <tool_call> block's body as {"name": str, "arguments": dict}: the one place a call is checked. The
    arguments may be an object or a string holding one (the OpenAI form). Anything else, wrong JSON types at
    any level or brackets nested past what a call needs included, is {"name": None, "arguments": {}, "error"}
    with what was wrong and the form to write, so the model hears it and the run goes on."""
    try:
        obj = decode_json(body, "the call")
        if not isinstance(obj, dict):
            raise ValueError(f"the call is a JSON {_kind(obj)}, not an object")
        name, args = obj.get("name"), obj.get("arguments", {})
        if not isinstance(name, str):
            raise ValueError(f"its name is a JSON {_kind(name)}, not a string")
        if isinstance(args, str):
            args = decode_json(args, "its arguments string")
        if not isinstance(args, dict):
            raise ValueError(f"its arguments are a JSON {_kind(args)}, not an object")
    except ValueError as exc:
        return {"name": None, "arguments": {}, "error": f"not a tool call: {exc}; write {CALL_FORM}"}
    return {"name": name, "arguments": args}


def _kind(value) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number",
            type(None): "null"}.get(type(value), type(value).__name__)


def _shown(value, limit: int = 40) -> str:
    r = repr(value)
    return r if len(r) <= limit else r[:limit - 3] + "..."


def ghost_ball(scenario: Scenario, target_ball, pocket=None, lines: bool = False) -> dict:
    """The paper's ghost-ball construction for one ball and pocket (aimed at
    the pocket centre, any cut), as the tool answers it, plus the aim at
    pooltool's potting point between the jaws, which pots more of the shots
    the demonstration search tries with a clear answer than the centre aim
    (docs/results.md#the-tool-report, analysis/tool_aims.py). Without a
    pocket: the ball's report (`ball_report`). With `lines`, an open shot adds
    `cue_after_deg` (core.cue_paths.departure_lines)."""
    if pocket is None:
        return ball_report(scenario, read_ball(target_ball, scenario), lines)
    ball, pid = read_target(target_ball, pocket, scenario)
    c = candidate(scenario, ball, pid, aim="centre")
    pp = candidate(scenario, ball, pid, aim="potting-point")
    # `open` first: the one field a player acts on (answer, or call for another shot), before the numbers.
    out = {"open": c.open, "target_ball": c.ball, "pocket": c.pocket,
           "ghost_ball": [round(c.ghost[0], 4), round(c.ghost[1], 4)],
           "aim_angle_deg": round(c.phi, 2), "potting_point_aim_angle_deg": round(pp.phi, 2),
           "cut_angle_deg": round(c.cut, 1),
           "cue_path_blocked_by": list(c.cue_blockers), "target_path_blocked_by": list(c.pocket_blockers),
           "ghost_ball_free": c.ghost_ok}
    return {**out, "cue_after_deg": cue_lines(scenario, ball, pid)} if lines and c.open else out


def cue_lines(scenario: Scenario, ball: str, pocket: str) -> dict:
    """The cue ball's headings after contact by spin, as a report shows them (0.1 degree)."""
    from poolbench_data.core.cue_paths import departure_lines

    return {k: None if v is None else round(v, 1) for k, v in departure_lines(scenario, ball, pocket).items()}


def ball_report(scenario: Scenario, ball: str, lines: bool = False) -> dict:
    """Every pocket of one ball at once: `open` (any shot open), then `shots`, the pockets with a cut below 90
    degrees (the ball can be sent there), open ones first, then those with the cue ball's path free, each by cut;
    `no_shot`, the others. Each shot is the single-pocket answer's open, cut and potting-point aim. A model that
    calls one pocket at a time seldom finds the open one; this report, ~133 tokens (SmolLM2's tokenizer, median
    over held-out own balls) against ~131 for one pocket, shows them all, and the leading `open` is the one field
    a player acts on (both: docs/results.md#the-tool-report). A report with nothing open ends with `kick`
    (`kick_shot`): the way to a legal contact where no straight shot pots, the only one on indirect boards. With
    `lines` each open shot adds the cue ball's headings after contact (`cue_after_deg`)."""
    answers = {pid: ghost_ball(scenario, ball, pid, lines) for pid in POCKET_IDS}
    reachable = sorted((pid for pid, r in answers.items() if r["cut_angle_deg"] < 90.0), key=lambda pid: (
        not answers[pid]["open"], bool(answers[pid]["cue_path_blocked_by"]), answers[pid]["cut_angle_deg"]))
    shown = ("pocket", "open", "cut_angle_deg", "potting_point_aim_angle_deg", "cue_after_deg")
    shots = [{k: answers[pid][k] for k in shown if k in answers[pid]} for pid in reachable]
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


def turn_result(scenario: Scenario, call: dict, calls_left: int, lines: bool = False) -> dict:
    """A call's result as the model reads it in the conversation: `calls_left` (the calls the shot may still
    make; at 0 the next turn is read as the action) before the tool's own answer: a model not told the cap writes a
    fourth call where the action is due, which is no action."""
    return {"calls_left": calls_left, **run_call(scenario, call, lines)}


def answer_call(scenario: Scenario, call: dict, made: int, max_calls: int, lines: bool = False) -> dict:
    """What a shot's call gets when `made` calls came before it under a cap of `max_calls`: its result with the
    calls left after it, or, once the cap is spent, the refusal (`OVER_CAP`) in its place."""
    if made >= max_calls:
        return {"calls_left": 0, "error": OVER_CAP}
    return turn_result(scenario, call, max_calls - made - 1, lines)


def replayed_result(scenario: Scenario, call: dict, recorded: dict) -> dict:
    """What the tool answers now to a call whose result a run recorded: the result with the recorded `calls_left`
    (the cap is a setting of the run). A call refused past the cap, or one that is no call (`read_call`), got an
    error that holds no answer of the tool's to check: the recorded one is what the model read."""
    refused = recorded == {"calls_left": 0, "error": OVER_CAP}
    unreadable = bool(call.get("error")) and set(recorded) == {"calls_left", "error"}
    return recorded if refused or unreadable else turn_result(scenario, call, recorded.get("calls_left"))


def run_call(scenario: Scenario, call: dict, lines: bool = False) -> dict:
    """One call's result; a bad call gets an error the model can read."""
    if call.get("error"):
        return {"error": call["error"]}
    if call.get("name") != TOOL_NAME:
        return {"error": f"unknown tool {_shown(call.get('name'))}; the only tool is {TOOL_NAME}"}
    args = call.get("arguments") or {}
    return tool_answer(scenario, args.get("target_ball"), args.get("pocket"), lines)


def tool_answer(scenario: Scenario, target_ball, pocket, lines: bool = False) -> dict:
    """What ghost_ball(target_ball[, pocket]) answers on this board; a ball or pocket that is not there gets an
    error the model can read."""
    try:
        return ghost_ball(scenario, target_ball, pocket, lines)
    except ValueError as exc:
        return {"error": str(exc)}


def answer_calls(scenario: Scenario, conv: list[dict], text: str, max_calls: int, log: list[dict],
                 lines: bool = False) -> None:
    """Append a turn that called the tool to `conv`: the model's text (with its calls as OpenAI `tool_calls`),
    then one `tool` message per call with its result (`answer_call`: counted call by call against `max_calls`,
    the shot's earlier calls being `log`); each call and result also goes to `log`. The one way a conversation
    grows past a call (the evaluator's threads, the verifiers environment)."""
    made = tool_calls(text)
    ids = [f"call_{len(log) + k}" for k in range(len(made))]
    conv.append({"role": "assistant", "content": text, "tool_calls": [
        {"id": cid, "type": "function", "function": {"name": str(c.get("name")),
                                                      "arguments": json.dumps(c.get("arguments") or {})}}
        for cid, c in zip(ids, made)]})
    for cid, c in zip(ids, made):
        result = answer_call(scenario, c, len(log), max_calls, lines)
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
        # conversation from them (pairs.tools).
        return {"scenario_id": scenario_id, "player": player, "sample": self.sample, "calls": self.calls,
                "turns": self.turns, "final_response": self.text, "request_failed": self.failure is not None,
                "tool_version": TOOL_VERSION}


def play_with_tools(scenarios: Sequence[Scenario], convs: list[list[dict]], backend, settings: EvalSettings, *,
                    player: str, max_calls: int) -> tuple[list[ShotRecord], list, list[ToolThread]]:
    """Every board's `settings.samples` threads, each calling the tool up to
    `max_calls` times (calls past it refused, `answer_call`); returns the records
    (board by board, as evaluate_model), each turn's GenerationResult and the threads."""
    convs = with_tool_note(convs)
    gen = backend.generate(convs, n=settings.samples, temperature=settings.temperature,
                           max_tokens=settings.max_tokens, seed=settings.seed, tools=TOOLS)
    gens, failed = [gen], gen.failed_slots()
    threads = []
    for i, texts in enumerate(gen.texts):
        for j, text in enumerate(texts):
            threads.append(ToolThread(i, j, list(convs[i]), text, failure=failed.get((i, j))))

    def ask(convs, live, turn):
        return backend.generate(convs, n=1, temperature=settings.temperature, max_tokens=settings.max_tokens,
                                seed=settings.seed + 1000 * turn, tools=TOOLS)

    gens += continue_threads(threads, lambda t: scenarios[t.board], max_calls, ask)
    records = [answer_record(scenarios[t.board], t.text, t.failure, player=player, sample=t.sample) for t in threads]
    return records, gens, threads


def continue_threads(threads: Sequence[ToolThread], scenario_of, max_calls: int, generate,
                     lines: bool = False) -> list:
    """The tool loop: while a thread's last answer calls the tool and its calls are not spent, its calls are answered
    on its board (`scenario_of(thread)`) and it is asked again; `generate(conversations, threads, turn)` asks the
    live threads of call turn 1, 2, ... at once (one answer each). Returns each turn's GenerationResult."""
    gens = []
    for turn in range(1, max_calls + 1):
        stop_if_requested()  # a SIGTERM the engine's generate swallows still ends the run between turns
        live = [t for t in threads if t.failure is None and len(t.calls) < max_calls and tool_calls(t.text)]
        if not live:
            break
        for t in live:
            t.turns.append(t.text)
            answer_calls(scenario_of(t), t.conv, t.text, max_calls, t.calls, lines)
        gen = generate([t.conv for t in live], live, turn)
        gens.append(gen)
        failed = gen.failed_slots()
        for k, t in enumerate(live):
            t.failure, t.text = failed.get((k, 0)), gen.texts[k][0]
    return gens


def tool_summary(threads: Sequence[ToolThread]) -> dict:
    """How much the tool was used: calls, shots that called it, bad calls."""
    calls = [c for t in threads for c in t.calls]
    return {"shots": len(threads), "shots_with_calls": sum(1 for t in threads if t.calls), "calls": len(calls),
            "calls_with_error": sum(1 for c in calls if "error" in c["result"]),
            "failed_requests": sum(1 for t in threads if t.failure is not None), "tool_version": TOOL_VERSION}
