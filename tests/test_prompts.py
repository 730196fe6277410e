"""The paper's prompts: verbatim text, byte-stable rendering, few-shot turns, action format."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import random
import re
from pathlib import Path

import pytest

from poolbench_data.protocol.parsing import FIELDS, parse_action
from poolbench_data.protocol.prompts import (
    ACTION_JSON_SCHEMA,
    PROMPT_VERSION,
    SYSTEM_PROMPT,
    fmt,
    format_action,
    messages,
    user_prompt,
)
from poolbench_data.core.geometry import angle_deg, ghost_ball
from poolbench_data.core.records import InvalidShot, Scenario, Shot
from poolbench_data.core.table import geometry

# Every prompt text ever shipped, by version. Changing any prompt text changes
# the digest: bump PROMPT_VERSION and add a line here (never edit old lines).
PROMPT_DIGESTS = {
    "poolbench-a1-v1": "2d22863be1c98f4a6a892bbe1cc9a6603b044e6690a16960ac993b5d03dd25a6",
}

# Appendix A of the PoolBench paper, copied verbatim (see the file's first line).
PAPER_APPENDIX_A = Path(__file__).resolve().parent / "fixtures" / "paper_appendix_a.txt"


def s000() -> Scenario:
    return Scenario.create("s000", "open", 0, {"cue": (0.5, 0.3), "1": (0.7, 1.0), "9": (0.3, 1.5), "8": (0.8, 1.8)})


def other(id_: str, dx: float = 0.0) -> Scenario:
    return Scenario.create(id_, "sparse", 1, {"cue": (0.4 + dx, 0.5), "2": (0.6, 1.2), "3": (0.2, 1.7)})


def prompt_digest() -> str:
    shot = Shot(74.24, 9.0, target_ball="1", target_pocket="rt")
    texts = (SYSTEM_PROMPT, user_prompt(s000()), format_action(shot, s000()))
    return hashlib.sha256("\0".join(texts).encode("utf-8")).hexdigest()


def paper_text() -> str:
    """The paper's Appendix A, from the fixture the repository carries (never skipped)."""
    header, text = PAPER_APPENDIX_A.read_text(encoding="utf-8").split("\n", 1)
    assert header.startswith("# ") and text.startswith("A. LLM Prompt\n"), PAPER_APPENDIX_A
    return text


# --- version pin ---------------------------------------------------------------

def test_prompt_version_pins_the_exact_texts():
    assert PROMPT_VERSION in PROMPT_DIGESTS, f"add {PROMPT_VERSION!r} to PROMPT_DIGESTS"
    assert prompt_digest() == PROMPT_DIGESTS[PROMPT_VERSION], (
        "prompt text changed: bump PROMPT_VERSION and record the new digest " + prompt_digest())


# --- system prompt: verbatim Appendix A ----------------------------------------

# Our documented reading of the PDF extraction (see poolbench_data/prompts.py).
PAPER_TO_TEXT = [
    ("$$G = T + (T - P) / |T - P| * BALLDIAMETER$$", "G = T + (T - P) / |T - P| * BALL_DIAMETER"),
    (r"$$\text{aim_angle_deg} = \text{atan2}(G_y - C_y, G_x - C_x) \text{ in degrees.}$$",
     "aim_angle_deg = atan2(G_y - C_y, G_x - C_x) in degrees."),
    (r"$\text{atan2}(T_y - C_y, T_x - C_x)$", "atan2(T_y - C_y, T_x - C_x)"),
    (r"$\text{atan2}(0.6457, 0.1822)$", "atan2(0.6457, 0.1822)"),
    ("BALLDIAMETER", "BALL_DIAMETER"),
    ("-->", "→"),
    ("---", "—"),
    ("--", "–"),
]


def appendix_system_prompt(paper: str) -> str:
    start = paper.index("You are an expert 8-ball pool player AI.")
    end = paper.index("User prompt template", start)
    block = paper[start:end]
    for old, new in PAPER_TO_TEXT:
        block = block.replace(old, new)
    paragraphs = [ln.strip() for ln in block.splitlines() if ln.strip() and ln.strip() != "```"]
    return "\n\n".join(paragraphs)


def test_system_prompt_is_appendix_a_word_for_word():
    assert SYSTEM_PROMPT == appendix_system_prompt(paper_text())


def test_user_template_fixed_lines_are_appendix_a_word_for_word():
    paper = paper_text()
    start = paper.index("User prompt template")
    block = paper[start:paper.index("B. Per-Category Score Table", start)]
    for old, new in PAPER_TO_TEXT:
        block = block.replace(old, new)
    fixed = [ln for ln in block.splitlines()[1:] if ln.strip() and "{" not in ln and "..." not in ln]
    text = user_prompt(s000())
    assert fixed, "the template's fixed lines were not found"
    for line in fixed:
        assert line in text.splitlines(), line


def test_worked_example_appears_verbatim():
    assert ("WORKED EXAMPLE: Cue C = (0.5, 0.3), Target T = (0.7, 1.0), Pocket P = (1.07, 2.13), "
            "BALL_DIAMETER = 0.05715 m.") in SYSTEM_PROMPT
    assert "Step 4: ghost = T + unit * BALL_DIAMETER = (0.6822, 0.9457)." in SYSTEM_PROMPT
    assert "Step 5: aim_angle_deg = atan2(0.6457, 0.1822) = 74.2 degrees." in SYSTEM_PROMPT
    assert "\nG = T + (T - P) / |T - P| * BALL_DIAMETER\n" in SYSTEM_PROMPT
    assert "\naim_angle_deg = atan2(G_y - C_y, G_x - C_x) in degrees.\n" in SYSTEM_PROMPT


def test_worked_example_numbers_are_the_ghost_ball_construction():
    # The example's inputs and results as the prompt states them, recomputed by
    # the package's own ghost-ball geometry (the one every baseline aims with).
    nums = r"\(([-\d.]+), ([-\d.]+)\)"
    m = re.search(rf"Cue C = {nums}, Target T = {nums}, Pocket P = {nums}, BALL_DIAMETER = ([\d.]+) m", SYSTEM_PROMPT)
    cx, cy, tx, ty, px, py, d = map(float, m.groups())
    assert fmt(geometry().ball_diameter, 5) == m.group(7)
    gx, gy = ghost_ball(tx, ty, px, py)
    assert f"ghost = T + unit * BALL_DIAMETER = ({fmt(gx)}, {fmt(gy)})." in SYSTEM_PROMPT
    assert (fmt(gx), fmt(gy)) == ("0.6822", "0.9457")
    phi = angle_deg(cx, cy, gx, gy)
    assert f"aim_angle_deg = atan2({fmt(gy - cy)}, {fmt(gx - cx)}) = {phi:.1f} degrees." in SYSTEM_PROMPT
    # The example's answer is the prompt's worked action: it parses to the same shot.
    r = parse_action(json.dumps({"target_ball": "1", "target_pocket": [px, py], "aim_angle_deg": round(phi, 1),
                                 "cue_speed": 9.0}), s000())
    assert (r.status, r.shot.target_pocket, r.shot.phi) == ("ok", "rt", 74.2)


def test_system_prompt_has_no_typesetting_left():
    for artefact in ("$", "\\text", "---", "--", "```", "BALLDIAMETER"):
        assert artefact not in SYSTEM_PROMPT, artefact
    assert SYSTEM_PROMPT.endswith(
        '{"target_ball": "<id>", "target_pocket": [<x>, <y>], "aim_angle_deg": <float>, "cue_speed": <float>}')


# --- user prompt -----------------------------------------------------------------

S000_USER = """\
Table: width=1.0668m, length=2.1336m. Ball radius=0.02858m, ball diameter=0.05715m

Cue ball C = (0.5000, 0.3000)

Your group: SOLIDS (balls 1–7). You MUST hit one of these first AND ideally pot it.
Ball 1: x=0.7000, y=1.0000 (distance from cue = 0.7280m)

Opponent balls (stripes — DO NOT hit first):
Ball 9: x=0.3000, y=1.5000

8-ball: x=0.8000, y=1.8000 (DO NOT hit first)

Pockets at: lb=(-0.0295, -0.0295), lc=(-0.0685, 1.0668), lt=(-0.0295, 2.1631), \
rb=(1.0963, -0.0295), rc=(1.1353, 1.0668), rt=(1.0963, 2.1631)

Respond with ONLY JSON."""


def test_user_prompt_golden():
    assert user_prompt(s000()) == S000_USER


def test_user_prompt_is_byte_stable_and_fixed_decimals():
    a, b = user_prompt(s000()), user_prompt(s000())
    assert a == b
    body = a.split("\n", 1)[1]  # the header keeps the paper's own precision
    numbers = re.findall(r"-?\d+\.\d+", body)
    assert numbers and all(len(x.split(".")[1]) == 4 for x in numbers), numbers
    assert "-0.0000" not in a


def test_user_prompt_orders_solids_by_id_with_distances():
    sc = Scenario.create("t", "open", 0, {"cue": (0.5, 0.3), "3": (0.2, 1.0), "1": (0.8, 0.9), "10": (0.5, 1.9),
                                          "9": (0.6, 1.5)})
    text = user_prompt(sc)
    assert text.index("Ball 1:") < text.index("Ball 3:")
    assert text.index("Ball 9:") < text.index("Ball 10:")
    d3 = math.hypot(0.2 - 0.5, 1.0 - 0.3)
    assert f"Ball 3: x=0.2000, y=1.0000 (distance from cue = {d3:.4f}m)" in text
    # Opponent balls carry no distance: the template gives distances for the player's own candidates.
    assert "Ball 9: x=0.6000, y=1.5000\n" in text


def test_user_prompt_without_stripes_or_eight():
    sc = Scenario.create("t", "open", 0, {"cue": (0.5, 0.3), "2": (0.7, 1.0)})
    text = user_prompt(sc)
    assert "Opponent balls (stripes — DO NOT hit first):\nnone on the table\n" in text
    assert "\n8-ball: none on the table\n" in text
    assert "Ball 2: x=0.7000" in text


def test_user_prompt_without_solids():
    sc = Scenario.create("t", "open", 0, {"cue": (0.5, 0.3), "12": (0.7, 1.0), "8": (0.4, 1.4)})
    text = user_prompt(sc)
    assert "it.\nnone on the table\n" in text
    assert "Ball 12: x=0.7000, y=1.0000\n" in text
    assert "8-ball: x=0.4000, y=1.4000 (DO NOT hit first)" in text


def test_fmt_rounds_half_up_and_never_negative_zero():
    assert fmt(0.028575, 5) == "0.02858"
    assert fmt(0.05715, 5) == "0.05715"
    assert fmt(-0.00001) == "0.0000"
    assert fmt(-0.029486352775479032) == "-0.0295"
    assert fmt(2.0) == "2.0000"


# --- action format -------------------------------------------------------------

def test_format_action_exact_protocol_line():
    shot = Shot(74.2391, 9.0, target_ball="1", target_pocket="rt")
    assert format_action(shot, s000()) == (
        '{"target_ball": "1", "target_pocket": [1.0963, 2.1631], "aim_angle_deg": 74.24, "cue_speed": 9.0}')


def test_format_action_normalises_the_angle():
    assert json.loads(format_action(Shot(-10.0, 8.0, target_ball="1", target_pocket="lb"), s000()))["aim_angle_deg"] == 350.0
    assert json.loads(format_action(Shot(359.999, 8.0, target_ball="1", target_pocket="lb"), s000()))["aim_angle_deg"] == 0.0


def test_format_action_round_trips_through_the_parser():
    for pocket in ("lb", "lc", "lt", "rb", "rc", "rt"):
        shot = Shot(123.456, 7.25, target_ball="9", target_pocket=pocket)
        r = parse_action(format_action(shot, s000()), s000())
        assert r.status == "ok", r
        assert (r.shot.target_ball, r.shot.target_pocket) == ("9", pocket)
        assert r.shot.phi == pytest.approx(123.46) and r.shot.V0 == pytest.approx(7.25)


def test_format_action_always_round_trips_for_random_shots():
    rng = random.Random(7)
    for _ in range(2000):
        shot = Shot(rng.uniform(-360, 360), rng.uniform(2, 12), target_ball=rng.choice(["1", "8", "9"]),
                    target_pocket=rng.choice(["lb", "lc", "lt", "rb", "rc", "rt"]))
        r = parse_action(format_action(shot, s000()), s000())
        assert r.status == "ok", (shot, r)
        assert (r.shot.target_ball, r.shot.target_pocket) == (shot.target_ball, shot.target_pocket)
        assert abs((r.shot.phi - shot.phi + 180) % 360 - 180) <= 0.005 + 1e-9
        assert r.shot.V0 == pytest.approx(shot.V0, abs=0.005 + 1e-9)


def test_format_action_refuses_incomplete_or_foreign_shots():
    with pytest.raises(ValueError, match="cue ball"):
        format_action(Shot(10.0, 8.0, target_ball="cue", target_pocket="lb"), s000())
    with pytest.raises(ValueError, match="target_ball and target_pocket"):
        format_action(Shot(10.0, 8.0), s000())
    with pytest.raises(KeyError, match="'5'"):
        format_action(Shot(10.0, 8.0, target_ball="5", target_pocket="lb"), s000())
    with pytest.raises(InvalidShot):
        format_action(Shot(10.0, 50.0, target_ball="1", target_pocket="lb"), s000())
    with pytest.raises(KeyError, match="unknown pocket"):
        format_action(Shot(10.0, 8.0, target_ball="1", target_pocket="zz"), s000())


def test_action_schema_shape_matches_parser_fields():
    assert ACTION_JSON_SCHEMA["type"] == "object"
    assert tuple(ACTION_JSON_SCHEMA["required"]) == FIELDS
    assert set(ACTION_JSON_SCHEMA["properties"]) == set(FIELDS)
    assert ACTION_JSON_SCHEMA["additionalProperties"] is False
    assert ACTION_JSON_SCHEMA["properties"]["target_ball"]["type"] == "string"
    pocket = ACTION_JSON_SCHEMA["properties"]["target_pocket"]
    assert (pocket["type"], pocket["items"]["type"], pocket["minItems"], pocket["maxItems"]) == ("array", "number", 2, 2)
    json.dumps(ACTION_JSON_SCHEMA)  # must serialise for vLLM / OpenAI response_format


def test_action_schema_accepts_format_action_and_rejects_bad_actions():
    jsonschema = pytest.importorskip("jsonschema")
    good = json.loads(format_action(Shot(74.2, 9.0, target_ball="1", target_pocket="rt"), s000()))
    jsonschema.validate(good, ACTION_JSON_SCHEMA)
    for bad in ({**good, "extra": 1}, {k: v for k, v in good.items() if k != "cue_speed"},
                {**good, "target_ball": 1}, {**good, "target_pocket": [1.0]}, {**good, "aim_angle_deg": "74"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, ACTION_JSON_SCHEMA)


# --- chat messages -------------------------------------------------------------

def test_messages_zero_shot():
    m = messages(s000())
    assert m == [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": S000_USER}]


@pytest.mark.parametrize("k", [1, 3, 5])
def test_messages_few_shot(k):
    examples = [(other(f"ex{i}", dx=0.01 * i), Shot(60.0 + i, 8.0 + 0.5 * i, target_ball="2", target_pocket="lt"))
                for i in range(k)]
    m = messages(s000(), examples)
    assert len(m) == 2 + 2 * k
    assert [x["role"] for x in m] == ["system"] + ["user", "assistant"] * k + ["user"]
    assert m[-1]["content"] == S000_USER
    for i, (sc, shot) in enumerate(examples):
        user, answer = m[1 + 2 * i]["content"], m[2 + 2 * i]["content"]
        assert user == user_prompt(sc)
        assert answer == format_action(shot, sc)
        r = parse_action(answer, sc)
        assert r.status == "ok" and r.shot.phi == pytest.approx(60.0 + i)
    assert all(set(x) == {"role", "content"} for x in m)


def test_messages_refuse_an_example_from_the_asked_scenario():
    leak = (dataclasses.replace(other("x"), id="s000"), Shot(60.0, 8.0, target_ball="2", target_pocket="lt"))
    with pytest.raises(ValueError, match="s000"):
        messages(s000(), [leak])
