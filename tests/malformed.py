"""One corpus of model outputs that are not what the protocol asks for, shared by every test of a path from a
model's text to a record: the free-text parser, the tool-call loop, refinement rounds, the lm-eval and inspect
scorers and the TRL environment. Each path must turn every case into a score or an error the model reads.

Wrong JSON types at every level (the whole answer, the action's fields, a pocket's coordinates, a tool call's
body, its name, its arguments as an object or as a string, the arguments' fields) and deep nesting (5,000 and
60,000 brackets, outside and inside a call), plus text that is no JSON at all."""

from __future__ import annotations

import json

ACTION = {"target_ball": "1", "target_pocket": "rt", "aim_angle_deg": 45.0, "cue_speed": 8.0}
# A JSON value of every type, and the shapes models get wrong: a number as a string, an empty or nested container.
WRONG = {"null": None, "true": True, "int": 5, "float": -1.5, "huge": 1e308, "word": "x", "numeric-string": "8",
         "empty-list": [], "pair": [1, 2], "empty-object": {}, "nested": {"a": {"b": [None]}}}
DEEP = "[" * 5000
WIDE_DEEP = "[" * 60_000  # about 60 KB: past any recursion limit, under any body limit
DEEP_OBJECT = '{"a": ' * 5000


def call(name, arguments) -> str:
    """A Hermes-form call block around any JSON name and arguments."""
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def _texts() -> dict[str, str]:
    out = {
        "empty": "", "blank": "  \n ", "prose": "I would aim at the 1 ball.", "nul": "\x00", "bom": "\ufeff{}",
        "lone-surrogate": "\ud800", "only-think": "<think>the 1 ball", "closing-tags": "</think></tool_call>",
        "deep-array": DEEP, "deep-array-60k": WIDE_DEEP, "deep-object": DEEP_OBJECT, "closing-brackets": "]}" * 3000,
        "balanced-deep": "[" * 400 + "]" * 400, "many-objects": "{}" * 3000,
        "action-in-list": json.dumps([ACTION]), "action-wrapped": json.dumps({"action": ACTION}),
        "two-actions": json.dumps(ACTION) + json.dumps(ACTION),
        "deep-field": json.dumps(ACTION)[:-1] + ', "extra": ' + DEEP + "}",
        "pocket-wrong-pair": json.dumps({**ACTION, "target_pocket": ["a", None]}),
        "pocket-deep-pair": json.dumps({**ACTION, "target_pocket": [[[1.0]], [[2.0]]]}),
        "pocket-huge": json.dumps({**ACTION, "target_pocket": [1e308, -1e308]}),
        "pocket-infinite": json.dumps({**ACTION, "target_pocket": [float("inf"), 0]}),
        "ball-huge-int": json.dumps(ACTION).replace('"1"', "1" * 5000, 1),
    }
    for kind, value in {"whole": None, **WRONG}.items():
        if kind != "whole":
            out[f"answer-is-{kind}"] = json.dumps(value)
    for field in ACTION:
        for kind, value in WRONG.items():
            out[f"{field}-{kind}"] = json.dumps({**ACTION, field: value})
        out[f"{field}-missing"] = json.dumps({k: v for k, v in ACTION.items() if k != field})
    # Tool calls: the block's body, the name, the arguments (object or string), the arguments' fields.
    for body, text in {"empty": "", "word": "x", "number": "5", "string": '"ghost_ball"', "list": "[1, 2]",
                       "null": "null", "deep": DEEP, "deep-60k": WIDE_DEEP, "deep-object": DEEP_OBJECT,
                       "unclosed-object": '{"name": "ghost_ball", "arguments": {"target_ball": "1"}'}.items():
        out[f"call-body-{body}"] = f"<tool_call>{text}</tool_call>"
    for kind, value in WRONG.items():
        out[f"call-name-{kind}"] = call(value, {"target_ball": "1"})
        out[f"call-arguments-{kind}"] = call("ghost_ball", value)
        out[f"call-target-{kind}"] = call("ghost_ball", {"target_ball": value})
        out[f"call-pocket-{kind}"] = call("ghost_ball", {"target_ball": "1", "pocket": value})
    for kind, text in {"list": "[1, 2]", "number": "5", "string": '"1"', "null": "null", "word": "target 1",
                       "deep": DEEP, "deep-inside": '{"target_ball": ' + DEEP, "deep-60k": WIDE_DEEP}.items():
        out[f"call-arguments-text-{kind}"] = call("ghost_ball", text)
    out.update({
        "call-name-long": call("g" * 50_000, {"target_ball": "1"}),
        "call-unknown-tool": call("shoot", ACTION),
        "call-extra-argument": call("ghost_ball", {"target_ball": "1", "speed": 9}),
        "call-unclosed": '<tool_call>{"name": "ghost_ball", "arguments": {"target_ball": "1"}}',
        "call-nested-tags": "<tool_call><tool_call>" + json.dumps({"name": "ghost_ball"}) + "</tool_call></tool_call>",
        "calls-sixty": "".join(call("ghost_ball", {"target_ball": str(1 + k % 15)}) for k in range(60)),
        "calls-sixty-empty": "<tool_call></tool_call>" * 60,
        "call-then-action": call("ghost_ball", {"target_ball": "1"}) + json.dumps(ACTION),
    })
    return out


CORPUS: dict[str, str] = _texts()
# A structured call's `arguments` as a server sends them (a string the backend decodes): every kind above.
STRUCTURED_ARGUMENTS: dict[str, str] = {
    "list": "[1, 2]", "number": "5", "string": '"1"', "null": "null", "word": "target 1", "empty": "",
    "deep": DEEP, "deep-inside": '{"target_ball": ' + DEEP, "deep-60k": WIDE_DEEP, "deep-object": DEEP_OBJECT,
    "target-list": json.dumps({"target_ball": [1, 2]}), "pocket-object": json.dumps({"target_ball": "1", "pocket": {}}),
}
