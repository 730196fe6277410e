"""The paper's prompts (Appendix A), rendered from a real scenario and table.

Fidelity notes. The paper reached us as a PDF extraction, so some characters
are typesetting, not the text that was sent. What we decided, and why:

- TeX dash ligatures are read back as the Unicode glyphs the paper typesets:
  ``---`` -> "—" (em dash), ``--`` in ranges ("8--12 m/s", "balls 1--7") ->
  "–" (en dash), ``-->`` -> "→". The body of the paper uses these glyphs
  literally (e.g. "sparse — few balls"), so the prompt, written as a Python
  string, most plausibly held the glyphs and the appendix transcribed them.
- Display math is plain text: ``$$G = ... * BALLDIAMETER$$`` becomes
  ``G = T + (T - P) / |T - P| * BALL_DIAMETER``; ``$\\text{atan2}(...)$``
  becomes ``atan2(...)``. The identifier is BALL_DIAMETER everywhere: the
  extraction dropped the underscore (TeX subscript) but kept the one in
  ``aim_angle_deg``, so the name had one.
- The ``` fences around the output format are the paper's verbatim-block
  typesetting (its Appendix D wraps model outputs the same way); the prompt
  carries the bare JSON line. Paragraphs are separated by one blank line.
- The user-prompt template elides the balls ("...") and the pockets
  ("{six pocket-centre coordinates}"). The ball lines follow the template's
  one explicit example; opponent balls carry no distance (section 3.6: the
  distances are "from the cue" for the player's candidates). The pocket line
  is RECONSTRUCTED: "Pockets at: lb=(x, y), lc=(x, y), ..." with pooltool's
  pocket ids and centres, so a model can copy the centre into target_pocket.
- Distances are centre to centre, cue ball to object ball.
- Every coordinate and distance has 4 decimals (ROUND_HALF_UP on the decimal
  repr), so a prompt is byte-stable; the header keeps the paper's precision
  (1.0668, 2.1336, 0.02858, 0.05715) but is computed from geometry().
- Missing groups render as "none on the table" rather than vanishing, so the
  prompt's shape does not change with the board.

PROMPT_VERSION names the exact text; tests/test_prompts.py pins a hash of the
rendered texts to it, so any edit must bump the version.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal

from poolbench_data.core.records import CUE, EIGHT, SOLIDS, STRIPES, Scenario, Shot
from poolbench_data.core.table import geometry

PROMPT_VERSION = "poolbench-a1-v1"
# The paper's sampling settings: low temperature, a 300-token budget.
DEFAULT_TEMPERATURE = 0.2
DEFAULT_MAX_TOKENS = 300
# Worked Oracle examples a prompt may carry (`--few_shot`): any count up to this one. Each example is an Oracle
# search (seconds) and about a thousand characters of prompt; the paper's ablation grid is 0/1/3/5.
MAX_FEW_SHOT = 10

SYSTEM_PROMPT = (
    "You are an expert 8-ball pool player AI. Your goal is to actually POT your own balls "
    "(sink them into pockets), not just touch them.\n"
    "\n"
    "HOW POOL POTTING WORKS — the GHOST BALL concept\n"
    "\n"
    "To pot a target ball T into pocket P, the cue ball C must arrive at the \"ghost ball\" "
    "position G at the moment of contact:\n"
    "\n"
    "G = T + (T - P) / |T - P| * BALL_DIAMETER\n"
    "\n"
    "Geometrically, G sits one ball-diameter BEHIND the target ball, on the line that runs "
    "FROM the pocket THROUGH the target. When the cue strikes the target while passing "
    "through G, the target gets propelled along the line T → P, sending it into the pocket.\n"
    "\n"
    "So the angle you must aim the cue at is:\n"
    "\n"
    "aim_angle_deg = atan2(G_y - C_y, G_x - C_x) in degrees.\n"
    "\n"
    "NOT atan2(T_y - C_y, T_x - C_x). That would just hit the target dead center and send it "
    "bouncing in some random direction. ALWAYS compute the ghost ball first, then aim at it.\n"
    "\n"
    "WORKED EXAMPLE: Cue C = (0.5, 0.3), Target T = (0.7, 1.0), Pocket P = (1.07, 2.13), "
    "BALL_DIAMETER = 0.05715 m. Step 1: pocket-to-target vector = (-0.37, -1.13). "
    "Step 2: length = 1.189. Step 3: unit vector = (-0.311, -0.950). "
    "Step 4: ghost = T + unit * BALL_DIAMETER = (0.6822, 0.9457). "
    "Step 5: aim_angle_deg = atan2(0.6457, 0.1822) = 74.2 degrees.\n"
    "\n"
    "PICKING THE BEST SHOT. For each of YOUR balls, consider all 6 pockets. The best shot has: "
    "(a) SMALL cut angle (cue-target line nearly aligned with target-pocket line), "
    "(b) SHORT total path length, (c) CLEAR line from cue to ghost-ball position, "
    "(d) CLEAR line from target to pocket. A cut > 70 degrees is essentially impossible — "
    "pick a different ball/pocket.\n"
    "\n"
    "CUE SPEED. Use 8–12 m/s. Steep cuts and long shots need more speed because energy "
    "transfer drops with cut angle. Short straight pots can use ~7 m/s.\n"
    "\n"
    "OUTPUT FORMAT. Respond with ONLY this JSON, no other text:\n"
    "\n"
    '{"target_ball": "<id>", "target_pocket": [<x>, <y>], "aim_angle_deg": <float>, "cue_speed": <float>}'
)

# For structured-output decoding (vLLM). It fixes the shape only: ranges and
# ids are judged by the parser, so a constrained model can still be wrong.
ACTION_JSON_SCHEMA: dict = {
    "type": "object",
    "properties": {
        "target_ball": {"type": "string"},
        "target_pocket": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
        "aim_angle_deg": {"type": "number"},
        "cue_speed": {"type": "number"},
    },
    "required": ["target_ball", "target_pocket", "aim_angle_deg", "cue_speed"],
    "additionalProperties": False,
}

COORD_DECIMALS = 4
# Two decimals of angle: 0.01 deg is ~0.3 mm of aim error over a 2 m shot,
# well inside potting tolerance, while keeping answers short.
ANGLE_DECIMALS = 2
SPEED_DECIMALS = 2
SPIN_DECIMALS = 2  # the cue tip's offsets, in ball radii: the spin grids' values are whole hundredths
NONE_ON_TABLE = "none on the table"


def fmt(x: float, places: int = COORD_DECIMALS) -> str:
    """Fixed decimals, half-up on the shortest repr (0.028575 -> 0.02858), never "-0"."""
    q = Decimal(repr(float(x))).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    if q == 0:
        q = abs(q)
    return f"{q:f}"


def _xy(x: float, y: float) -> str:
    return f"({fmt(x)}, {fmt(y)})"


def table_head(g, cue) -> list[str]:
    """The prompt's first lines: the table's size and the balls', then the cue ball (a game's turn opens the same)."""
    return [f"Table: width={fmt(g.width)}m, length={fmt(g.length)}m. "
            f"Ball radius={fmt(g.ball_radius, 5)}m, ball diameter={fmt(g.ball_diameter, 5)}m",
            "",
            f"Cue ball C = {_xy(cue.x, cue.y)}",
            ""]


def ball_line(b, cue) -> str:
    """A ball the player may hit first: where it is and how far from the cue ball."""
    return f"Ball {b.id}: x={fmt(b.x)}, y={fmt(b.y)} (distance from cue = {fmt(math.hypot(b.x - cue.x, b.y - cue.y))}m)"


def pockets_line(g) -> str:
    return "Pockets at: " + ", ".join(f"{p.id}={_xy(p.x, p.y)}" for p in g.pockets)


def user_prompt(scenario: Scenario) -> str:
    """Appendix A's user prompt for this board (pocket line reconstructed)."""
    g = geometry()
    cue = scenario.cue
    present = {b.id: b for b in scenario.object_balls}
    own = [present[i] for i in SOLIDS if i in present]
    opp = [present[i] for i in STRIPES if i in present]

    lines = [*table_head(g, cue), "Your group: SOLIDS (balls 1–7). You MUST hit one of these first AND ideally pot it."]
    lines += [ball_line(b, cue) for b in own] or [NONE_ON_TABLE]
    lines += ["", "Opponent balls (stripes — DO NOT hit first):"]
    lines += [f"Ball {b.id}: x={fmt(b.x)}, y={fmt(b.y)}" for b in opp] or [NONE_ON_TABLE]
    lines.append("")
    if EIGHT in present:
        e = present[EIGHT]
        lines.append(f"8-ball: x={fmt(e.x)}, y={fmt(e.y)} (DO NOT hit first)")
    else:
        lines.append(f"8-ball: {NONE_ON_TABLE}")
    lines += [
        "",
        pockets_line(g),
        "",
        "Respond with ONLY JSON.",
    ]
    return "\n".join(lines)


def pocket_xy(pocket_id: str) -> tuple[float, float]:
    """A pocket centre as the prompt shows it (rounded), so answers match prompts."""
    p = geometry().pocket(pocket_id)
    return float(fmt(p.x)), float(fmt(p.y))


def format_action(shot: Shot, scenario: Scenario, spin: bool = False) -> str:
    """The protocol's one-line JSON answer for a shot (few-shot turns, DPO chosen). `spin`: with the cue tip's
    offsets a and b too (SPIN_DECIMALS), the two optional fields a run-out's answer may carry
    (parsing.parse_action(spin=True) reads them back)."""
    if shot.target_ball is None or shot.target_pocket is None:
        raise ValueError("format_action needs a shot with target_ball and target_pocket set; "
                         "the output format declares both")
    if shot.target_ball == CUE:
        raise ValueError("format_action: the cue ball cannot be the target; name an object ball")
    scenario.ball(shot.target_ball)  # KeyError names the ball and scenario
    s = shot.validated()
    phi = float(fmt(s.phi, ANGLE_DECIMALS))
    if phi >= 360.0:  # 359.996 rounds up to the same direction as 0
        phi = 0.0
    action = {
        "target_ball": s.target_ball,
        "target_pocket": list(pocket_xy(s.target_pocket)),
        "aim_angle_deg": phi,
        "cue_speed": float(fmt(s.V0, SPEED_DECIMALS)),
    }
    if spin:
        action.update(a=float(fmt(s.a, SPIN_DECIMALS)), b=float(fmt(s.b, SPIN_DECIMALS)))
    return json.dumps(action)


def messages(scenario: Scenario, examples: Sequence[tuple[Scenario, Shot]] = ()) -> list[dict]:
    """Chat messages; each (scenario, shot) example adds a solved user/assistant pair first (H3)."""
    out = [{"role": "system", "content": SYSTEM_PROMPT}]
    for ex_scenario, ex_shot in examples:
        if ex_scenario.id == scenario.id:
            # An answer to the very board being asked would leak the label.
            raise ValueError(f"few-shot example uses scenario {scenario.id!r}, the one being asked; "
                             "draw examples from other scenarios")
        out.append({"role": "user", "content": user_prompt(ex_scenario)})
        out.append({"role": "assistant", "content": format_action(ex_shot, ex_scenario)})
    out.append({"role": "user", "content": user_prompt(scenario)})
    return out
