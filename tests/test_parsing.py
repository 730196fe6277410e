"""parse_action: every failure kind on a concrete input, and the tolerated wrappings."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from poolbench_data.protocol.parsing import PARSE_FAILURES, PARSE_STATUSES, POCKET_TOLERANCE, ParseResult, parse_action
from poolbench_data.core.records import Scenario, Shot
from poolbench_data.core.table import geometry

REPO = Path(__file__).resolve().parents[1]
GOOD = '{"target_ball": "1", "target_pocket": [1.07, 2.13], "aim_angle_deg": 74.2, "cue_speed": 9.0}'


def s000() -> Scenario:
    return Scenario.create("s000", "open", 0, {"cue": (0.5, 0.3), "1": (0.7, 1.0), "9": (0.3, 1.5), "8": (0.8, 1.8)})


def action(**changes) -> str:
    obj = json.loads(GOOD)
    obj.update(changes)
    return json.dumps(obj)


def status(text) -> str:
    return parse_action(text, s000()).status


def documented_failure_kinds() -> tuple[str, ...]:
    """The failure kinds docs/parsing.md lists, in its order: the first column of its table of statuses."""
    text = (REPO / "docs" / "parsing.md").read_text(encoding="utf-8")
    section = text[text.index("## What fails"):]
    return tuple(re.findall(r"^\| `([a-z-]+)` \|", section, re.MULTILINE))


def generated_responses() -> list[str]:
    """Responses made mechanically from GOOD, not picked per kind: every prefix,
    each field dropped or replaced by junk, repeats and wrappers."""
    obj = json.loads(GOOD)
    junk = ["", "fast", "9 m/s", None, True, [], {}, "3", "8", "cue", 3, float("nan"), float("inf"), -1.0, 1e9,
            [0.5, 1.0], [1.07], "top right", "rt"]
    texts = [GOOD[:i] for i in range(len(GOOD) + 1)]
    texts += [json.dumps({k: v for k, v in obj.items() if k != f}) for f in obj]
    texts += [json.dumps({**obj, f: v}) for f in obj for v in junk]
    texts += [GOOD + GOOD, f"[{GOOD}]", "74.2", "null", "I would aim at 74.2 degrees.", "<think>hm</think>"]
    return texts


def test_failure_kinds_are_the_documented_set():
    documented = documented_failure_kinds()
    assert len(documented) == 11, documented
    assert PARSE_FAILURES == documented
    assert PARSE_STATUSES == ("ok",) + documented
    # What the parser really answers: every status it returns is documented, and
    # every documented status is returned on these generated responses.
    seen = {parse_action(t, s000()).status for t in generated_responses()}
    assert seen == set(PARSE_STATUSES), (sorted(seen - set(PARSE_STATUSES)), sorted(set(PARSE_STATUSES) - seen))


# --- ok ------------------------------------------------------------------------

def test_plain_action_parses_to_a_validated_shot():
    r = parse_action(GOOD, s000())
    assert r == ParseResult("ok", Shot(74.2, 9.0, target_ball="1", target_pocket="rt"), "")
    assert (r.shot.a, r.shot.b, r.shot.theta) == (Shot(0, 0).a, Shot(0, 0).b, Shot(0, 0).theta)


def test_the_papers_sample_response_parses():
    # Appendix D, Claude Sonnet 4 on s000: the object spans two lines; [0, 0] is pocket lb's corner.
    text = '{"target_ball": "1", "target_pocket": [0.0, 0.0], "aim_angle_deg": 218.4,\n"cue_speed": 9.0}'
    r = parse_action(text, s000())
    assert r.status == "ok"
    assert (r.shot.target_ball, r.shot.target_pocket, r.shot.phi, r.shot.V0) == ("1", "lb", 218.4, 9.0)


@pytest.mark.parametrize("wrapped", [
    f"```json\n{GOOD}\n```",
    f"```\n{GOOD}\n```",
    f"Here is my shot:\n{GOOD}\nGood luck!",
    f"Ball 1 to pocket [1.07, 2.13] looks best. {GOOD}",
    f"<think>Ghost ball G = (0.68, 0.95); maybe {{\"target_ball\": \"9\"}}?</think>\n{GOOD}",
    f"<THINK>upper-case tags</THINK>{GOOD}",
    f"the chat template opened the thought ... </think>\n\n{GOOD}",
    f"{GOOD}\n<think>an unclosed afterthought {GOOD}",
    f"   \n\t{GOOD}\n\n",
])
def test_tolerated_wrappings(wrapped):
    r = parse_action(wrapped, s000())
    assert r.status == "ok", r
    assert r.shot == parse_action(GOOD, s000()).shot


def test_angle_is_normalised_through_shot_validated():
    r = parse_action(action(aim_angle_deg=-90), s000())
    assert r.status == "ok" and r.shot.phi == 270.0


def test_pure_numeric_strings_are_accepted():
    r = parse_action(action(aim_angle_deg="74.2", cue_speed="9", target_pocket=["1.07", "2.13"]), s000())
    assert r.status == "ok" and (r.shot.phi, r.shot.V0, r.shot.target_pocket) == (74.2, 9.0, "rt")


def test_integer_ball_id_and_pocket_id_string_are_accepted():
    r = parse_action(action(target_ball=1, target_pocket="rt"), s000())
    assert r.status == "ok" and (r.shot.target_ball, r.shot.target_pocket) == ("1", "rt")
    assert parse_action(action(target_pocket=" LC "), s000()).shot.target_pocket == "lc"


def test_any_ball_on_the_table_is_a_parseable_target():
    # Naming a stripe or the 8-ball is a strategic error for the simulator to score, not a parse failure.
    assert parse_action(action(target_ball="9"), s000()).shot.target_ball == "9"
    assert parse_action(action(target_ball="8"), s000()).shot.target_ball == "8"


@pytest.mark.parametrize("xy, pocket", [
    ([0.0, 0.0], "lb"), ([0.0, 1.0668], "lc"), ([0.0, 2.1336], "lt"),
    ([1.0668, 0.0], "rb"), ([1.0668, 1.0668], "rc"), ([1.0668, 2.1336], "rt"),
])
def test_table_corners_and_rail_midpoints_name_the_pockets(xy, pocket):
    assert parse_action(action(target_pocket=xy), s000()).shot.target_pocket == pocket


def test_pocket_tolerance_boundary():
    rt = geometry().pocket("rt")
    inside = [rt.x - POCKET_TOLERANCE + 1e-6, rt.y]
    outside = [rt.x - POCKET_TOLERANCE - 1e-3, rt.y]
    assert parse_action(action(target_pocket=inside), s000()).shot.target_pocket == "rt"
    assert status(action(target_pocket=outside)) == "unknown-pocket"


def test_extra_keys_are_ignored_and_named():
    r = parse_action(action(reasoning="straight-ish cut"), s000())
    assert r.status == "ok" and "reasoning" in r.message


# --- each failure kind -----------------------------------------------------------

@pytest.mark.parametrize("text", ["", "   \n\t ", None])
def test_empty(text):
    r = parse_action(text, s000())
    assert (r.status, r.shot) == ("empty", None)


@pytest.mark.parametrize("text", [
    "Sure! Let me think through this step by step.\nFirst, I need to pick the best ball. Looking at the layout, "
    "ball 1 is closest to\nmy cue...[continues for 200 tokens with no JSON]",  # the paper's Gemma 2 9B sample
    "I would aim at 74.2 degrees with speed 9.",
    "<think>I will answer {\"target_ball\": \"1\"} once I am done",  # unclosed: nothing after the thought
    "<think>done</think>",
])
def test_no_json(text):
    assert status(text) == "no-json"


@pytest.mark.parametrize("text", [
    GOOD[:-1],  # truncated by max_tokens
    GOOD[:40],
    "{'target_ball': '1', 'target_pocket': [1.07, 2.13], 'aim_angle_deg': 74.2, 'cue_speed': 9.0}",
    GOOD[:-1] + ",}",  # trailing comma
    GOOD.replace('"cue_speed": 9.0', '"cue_speed": 9.0, "cue_speed": 11.0'),  # duplicate key: ambiguous
    GOOD.replace("74.2", "+74.2"),
    "[" * 40 + "]" * 40,
])
def test_invalid_json(text):
    assert status(text) == "invalid-json"


@pytest.mark.parametrize("text", [
    GOOD + "\n" + GOOD,  # even identical copies: the protocol asks for one
    GOOD + "\n" + action(target_ball="9"),
    f"```json\n{GOOD}\n```\nor maybe\n```json\n{action(target_pocket=[0, 0])}\n```",
    GOOD + " {}",
])
def test_multiple_json(text):
    assert status(text) == "multiple-json"


@pytest.mark.parametrize("text", [
    f"[{GOOD}]",
    f"[{GOOD}, {GOOD}]",
    "[74.2, 9.0]",
    "74.2",
    '"74.2"',
    "null",
])
def test_not_object(text):
    assert status(text) == "not-object"


@pytest.mark.parametrize("text", [
    '{"target_ball": "1", "target_pocket": [1.07, 2.13], "aim_angle_deg": 74.2}',
    json.dumps({"action": json.loads(GOOD)}),  # wrapped: the object must be the action itself
    GOOD.replace('"cue_speed"', '"Cue_Speed"'),
    "{}",
])
def test_missing_field(text):
    r = parse_action(text, s000())
    assert r.status == "missing-field"


def test_missing_field_message_names_the_field():
    assert "cue_speed" in parse_action(GOOD.replace('"cue_speed"', '"speed"'), s000()).message


@pytest.mark.parametrize("text", [
    action(aim_angle_deg="74.2 deg"),
    action(aim_angle_deg="74.2°"),
    action(cue_speed="fast"),
    action(cue_speed=True),
    action(cue_speed=None),
    action(aim_angle_deg=[74.2]),
    action(aim_angle_deg={"value": 74.2}),
    action(aim_angle_deg=" 74.2"),
    action(target_pocket=["1.07m", 2.13]),
    action(aim_angle_deg="NaN"),
])
def test_non_numeric(text):
    assert status(text) == "non-numeric"


@pytest.mark.parametrize("text", [
    GOOD.replace("74.2", "NaN"),
    GOOD.replace("9.0", "Infinity"),
    GOOD.replace("9.0", "-Infinity"),
    GOOD.replace("9.0", "1e999"),
    GOOD.replace("2.13", "NaN"),
])
def test_non_finite(text):
    assert status(text) == "non-finite"


@pytest.mark.parametrize("text", [
    action(cue_speed=1e9),
    action(cue_speed=0.5),
    action(cue_speed=-9.0),
    action(aim_angle_deg=400.0),
    GOOD.replace("9.0", "9" + "0" * 400),  # a finite integer too large for a float
    GOOD.replace("9.0", "9" + "0" * 5000),  # past Python's int-digit limit
    action(cue_speed="9" + "0" * 5000),  # the same as a numeric string
])
def test_out_of_range(text):
    r = parse_action(text, s000())
    assert (r.status, r.shot) == ("out-of-range", None)


def test_out_of_range_message_names_the_range():
    assert "[2.0, 12.0]" in parse_action(action(cue_speed=1e9), s000()).message


@pytest.mark.parametrize("ball", ["3", "cue", "16", "0", "ball 1", "01", 1.0, True, ["1"], None, "８"])
def test_unknown_ball(ball):
    assert status(action(target_ball=ball)) == "unknown-ball"


def test_ball_not_on_this_table_names_the_scenario():
    r = parse_action(action(target_ball="3"), s000())
    assert r.status == "unknown-ball" and "s000" in r.message


@pytest.mark.parametrize("pocket", [[0.5, 2.13], [0.53, 0.0], [1.07], [1.07, 2.13, 0.0], "top right", "",
                                    {"x": 1.07, "y": 2.13}, 3, [1e308 * 10 ** 0, 0.0]])
def test_unknown_pocket(pocket):
    assert status(action(target_pocket=pocket)) == "unknown-pocket"


def test_every_failure_kind_is_reachable():
    examples = {
        "empty": "", "no-json": "no", "invalid-json": GOOD[:-1], "multiple-json": GOOD + GOOD,
        "not-object": f"[{GOOD}]", "missing-field": "{}", "non-numeric": action(cue_speed="9 m/s"),
        "non-finite": GOOD.replace("9.0", "NaN"), "out-of-range": action(cue_speed=1e9),
        "unknown-ball": action(target_ball="3"), "unknown-pocket": action(target_pocket=[0.5, 1.0]),
    }
    assert set(examples) == set(PARSE_FAILURES)
    for kind, text in examples.items():
        r = parse_action(text, s000())
        assert (r.status, r.shot) == (kind, None), (kind, r)
        assert r.message, kind


# --- result record ---------------------------------------------------------------

def test_parse_result_is_frozen_and_serialises():
    r = parse_action(GOOD, s000())
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.status = "empty"
    row = r.to_row()
    assert row["parse_status"] == "ok" and row["shot"]["phi"] == 74.2 and row["shot"]["target_pocket"] == "rt"
    json.dumps(row)
    fail = parse_action("no", s000()).to_row()
    assert fail == {"parse_status": "no-json", "parse_message": fail["parse_message"], "shot": None}


def test_non_string_inputs_do_not_raise():
    assert parse_action(GOOD.encode(), s000()).status == "ok"
    assert parse_action(42, s000()).status == "no-json"


@pytest.mark.parametrize("text, thought, answer", [
    ("<think>ghost ball first</think>{}", "ghost ball first", " {}"),
    ("opened by the template ... </think> {}", "opened by the template ... ", " {}"),
    ("a <think>one</think> b <think>two", "one two", "a   b "),
    ("no thinking at all", "", "no thinking at all"),
])
def test_reasoning_text_is_what_strip_think_removes(text, thought, answer):
    from poolbench_data.protocol.parsing import reasoning_text, strip_think

    assert reasoning_text(text) == thought and strip_think(text) == answer
