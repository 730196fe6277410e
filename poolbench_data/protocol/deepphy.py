"""DeepPHY's pooltool prompts (its Appendix E.2), and the continuous answer a nine-ball player may give instead of
DeepPHY's line.

Fidelity notes. The appendix reached us as a PDF extraction; what was decided, and why:

- The words are the appendix's, in its order. Its bold headings ("**Game Objective:**") are kept as markdown
  emphasis: the prompt is markdown rendered in the PDF, as its bullet list shows. Typographic apostrophes are the
  PDF's typesetting of ASCII ones.
- The answer line is ANSWER_FORMAT (protocol.strikespot) on a line of its own; the appendix's backticks and
  leading space are its inline-code typesetting.
- DeepPHY's agent sees only an image of the table. Here the table also comes as text (llm.observation): the
  paragraph that introduces the image says so (IMAGE_STATE with --vision, TEXT_STATE without), and nothing else
  changes.
- The continuous variant replaces the two option lists and the output format with numbers in the protocol's
  action space (speed 2-12 m/s, offsets within half a ball radius), keeping DeepPHY's strike-spot effects.
"""

from __future__ import annotations

from dataclasses import dataclass

from poolbench_data.protocol.strikespot import ANSWER_FORMAT, SPEEDS, STRIKESPOTS

_INTRO = (
    "You are an expert AI agent specializing in billiards game strategy. Your goal is to guide a player in a 9-ball "
    "pool game.\n"
    "\n"
    "**Game Objective:**\n"
    "\n"
    "Your ultimate objective is to pocket the number 9-ball. In each turn, you will pocket the number 9-ball by "
    "hitting the lowest numbered ball. Your task is to provide the optimal cue ball strike parameters to achieve "
    "this.\n"
    "\n"
    "Crucially, avoid potting the cue ball (white ball). Potting the cue ball is a foul and will negatively impact "
    "the game progress.\n"
    "\n"
    "**Current Table State:**\n"
    "\n"
)
IMAGE_STATE = (
    "Image (Current Table State): This is the pool table now. All potted balls from previous shots have been "
    "removed. If the cue ball was potted, it has been repositioned. Analyze this image to determine your next move. "
    "The same table is also given as coordinates."
)
TEXT_STATE = (
    "Table (Current Table State): The coordinates given are the pool table now. All potted balls from previous "
    "shots have been removed. If the cue ball was potted, it has been repositioned. Analyze them to determine your "
    "next move."
)
_OPTIONS = (
    "You must choose the cue ball's speed and strike spot from the following precise actions.\n"
    "\n"
    "Available Speed Options: {" + ", ".join(f'"{s}"' for s in SPEEDS) + "}\n"
    "\n"
    "Available Strikespot Options: {" + ", ".join(f'"{s}"' for s in STRIKESPOTS) + "}\n"
)
_NUMBERS = (
    "You must choose the cue ball's speed and strike spot as numbers.\n"
    "\n"
    "Speed: cue_speed, in m/s, from 2 to 12 (Low, Medium and High are 2, 5 and 8).\n"
    "\n"
    "Strike spot: a and b, the cue tip's offsets from the cue ball's center in ball radii, each from -0.5 to 0.5: "
    "a > 0 strikes left of center, a < 0 right of it; b > 0 above center, b < 0 below it (Top Spin is a = 0, "
    "b = 0.5; Bottom Left Spin is a = 0.35, b = -0.35; Middle Spin is a = 0, b = 0).\n"
)
_EFFECTS = (
    "\n"
    "**Action Parameters:**\n"
    "\n"
    "**Strikespot Effects:**\n"
    "\n"
    "- **Top Spin (High Cue):** Hitting the cue ball above its center. Makes the cue ball continue forward after "
    "contact with an object ball, also known as \"follow\" or \"roll\".\n"
    "- **Bottom Spin (Low Cue):** Hitting the cue ball below its center. Makes the cue ball spin backward, causing it "
    "to rebound or \"draw\" after hitting an object ball.\n"
    "- **Left Spin (Left English):** Hitting the cue ball on its left side. Causes the cue ball to curve or deflect "
    "to the left after contact.\n"
    "- **Right Spin (Right English):** Hitting the cue ball on its right side. Causes the cue ball to curve or "
    "deflect to the right after contact.\n"
    "\n"
    "**Required Output Format:**\n"
    "\n"
)
_LINE_FORMAT = (
    "Your response must be a single line of text, strictly conforming to the format below. Do not include any other "
    "words, notes, or explanations.\n"
    "\n"
    + ANSWER_FORMAT
)
CONTINUOUS_FORMAT = '{"cue_speed": <float>, "a": <float>, "b": <float>}'
_JSON_FORMAT = (
    "Your response must be a single line of JSON, strictly conforming to the format below. Do not include any other "
    "words, notes, or explanations.\n"
    "\n"
    + CONTINUOUS_FORMAT
)
USER_PROMPT = (
    "Analyze the scene and determine the best way to pocket the 9-ball into any pocket while avoiding potting the "
    "cue ball. Consider the cue ball's position for good follow-up. Provide the optimal speed and strikespot. Then "
    "provide the corresponding action that matches the format."
)
CONTINUOUS_FIELDS = ("cue_speed", "a", "b")
# For structured-output decoding: the shape of the continuous answer (ranges are the step's to judge).
CONTINUOUS_JSON_SCHEMA: dict = {
    "type": "object",
    "properties": {f: {"type": "number"} for f in CONTINUOUS_FIELDS},
    "required": list(CONTINUOUS_FIELDS),
    "additionalProperties": False,
}


def system_prompt(action: str = "discrete", vision: bool = False) -> str:
    """DeepPHY's system prompt; `action` "continuous" asks for CONTINUOUS_FORMAT instead of its line."""
    if action not in ("discrete", "continuous"):
        raise ValueError(f"action {action!r}: give discrete or continuous")
    state = IMAGE_STATE if vision else TEXT_STATE
    choice, answer = (_OPTIONS, _LINE_FORMAT) if action == "discrete" else (_NUMBERS, _JSON_FORMAT)
    return _INTRO + state + "\n\n" + choice + _EFFECTS + answer


@dataclass(frozen=True)
class ContinuousParse:
    status: str  # "ok" or one of protocol.parsing.PARSE_FAILURES
    V0: float | None = None
    a: float | None = None
    b: float | None = None
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def parse_continuous(text: str | None) -> ContinuousParse:
    """The continuous answer, {"cue_speed", "a", "b"}, read by the protocol's JSON rules (protocol.parsing: one
    object, strict JSON, numbers, reasoning stripped); ranges are left to the game's step (`out-of-range`), as
    Shot.validated() judges them. Never raises on text or None."""
    from poolbench_data.protocol.parsing import _Fail, _number, _show, _single_object, answer_text

    try:
        obj = _single_object(answer_text(text))
        missing = [f for f in CONTINUOUS_FIELDS if f not in obj]
        if missing:
            raise _Fail("missing-field", f"missing field(s) {', '.join(missing)}; keys present: {_show(list(obj))}")
        v0, a, b = (_number(obj[f], f) for f in CONTINUOUS_FIELDS)
    except _Fail as f:
        return ContinuousParse(f.status, message=f.message)
    extra = [k for k in obj if k not in CONTINUOUS_FIELDS]
    return ContinuousParse("ok", v0, a, b, f"ignored extra key(s) {_show(extra)}" if extra else "")
