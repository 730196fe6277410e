"""Turn a model's response into a Shot, or name exactly why it cannot be one.

Tolerant of wrapping, strict about content:
- Wrapping that is ignored: ```json fences, prose around ONE object, closed
  <think>...</think> blocks, a stray leading "...</think>" (the opening tag
  was in the chat template), and an unclosed <think> (cut to the end: an
  unfinished thought is not an answer).
- Content must be strict JSON (no single quotes, no trailing commas). The
  object must be the action itself, not wrapped ({"action": {...}}).
  Two or more top-level objects are "multiple-json", even if identical: the
  protocol asks for ONLY one, and picking one would be our guess.
  A duplicated key is "invalid-json" for the same reason.
- Numbers: JSON numbers; a string that is exactly a JSON number ("74.2") is
  accepted since it is unambiguous; "74.2 deg", booleans and the rest are
  "non-numeric". NaN/Infinity literals and overflowing numbers (1e999) are
  "non-finite". Ranges are Shot.validated()'s: outside is "out-of-range".
- target_ball: a string id, or a JSON integer (1 -> "1"), naming an object
  ball on this table. Any ball on the table is accepted, stripes and the
  8-ball included: declaring the wrong group is a strategic error the
  simulator scores as a foul, not a parse failure. Unknown ids, "cue" and
  balls not on this table are "unknown-ball".
- target_pocket: [x, y] within POCKET_TOLERANCE of a pocket centre, or a
  pocket id string ("rt"). 0.15 m accepts the table corners and rail
  midpoints models use for pockets (the paper's sample answer says [0, 0],
  0.04 m from lb's centre; side pockets sit 0.07 m outside the rail) while
  pockets are >= 1 m apart, so the match is never ambiguous.
- Extra keys are ignored (named in the message); missing keys are not.
- "empty" is no text at all (None, "", whitespace: a timeout). Text that is
  only reasoning is "no-json". A '{' that does not decode is read as prose,
  but if no object decodes at all the response is "invalid-json" (it tried).
- Field checks run in order (fields, numbers, ball, pocket, ranges); the
  first failure is the status.
- Pathological text (brackets nested > MAX_DEPTH, or > MAX_FRAGMENTS
  JSON-like fragments) is "invalid-json" without decoding, so parsing stays
  fast on any input; a real action has depth 2 and two fragments.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from poolbench_data.core.records import CUE, DEFAULT_B, OBJECT_BALLS, InvalidShot, Scenario, Shot
from poolbench_data.core.table import POCKET_IDS, geometry

PARSE_FAILURES = (
    "empty",
    "no-json",
    "invalid-json",
    "multiple-json",
    "not-object",
    "missing-field",
    "non-numeric",
    "non-finite",
    "out-of-range",
    "unknown-ball",
    "unknown-pocket",
)
PARSE_STATUSES = ("ok",) + PARSE_FAILURES
FIELDS = ("target_ball", "target_pocket", "aim_angle_deg", "cue_speed")
# Optional with `spin=True` (the games' action): the cue tip's offsets, as Shot.a and Shot.b; absent, the paper's
# defaults (no side spin, its small top spin). Without `spin` they are extra keys, ignored as any other.
SPIN_FIELDS = ("a", "b")
POCKET_TOLERANCE = 0.15  # metres from a pocket centre; see module docstring
# Bounds on pathological text. An action nests 2 deep and has 2 fragments
# ('{' and '['); decoding fails in O(position), so unbounded bracket-dense
# text would cost quadratic time.
MAX_DEPTH = 32
MAX_FRAGMENTS = 256

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"  # reasoning markers (R1-style models); budgets force the close
_CLOSE_THINK = re.compile(re.escape(THINK_CLOSE), re.IGNORECASE)
_OPEN_THINK = re.compile(re.escape(THINK_OPEN), re.IGNORECASE)
_BRACKET = re.compile(r"[{\[]")
_OBJECT_START = re.compile(r"\{\s*[\"}]")
_ARRAY_START = re.compile(r"\[\s*[-0-9\"\[\]{tfnNI]")
_PLAUSIBLE_START = re.compile(f"{_OBJECT_START.pattern}|{_ARRAY_START.pattern}")
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")


@dataclass(frozen=True)
class ParseResult:
    status: str  # "ok" or one of PARSE_FAILURES
    shot: Shot | None
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_row(self) -> dict:
        return {"parse_status": self.status, "parse_message": self.message,
                "shot": self.shot.to_row() if self.shot is not None else None}


class _Fail(Exception):
    """Internal: carries a failure kind out of nested checks."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def strip_think(text: str) -> str:
    """Remove reasoning blocks in one linear pass; what remains is the answer."""
    return _split_think(text)[0]


def reasoning_text(text: str) -> str:
    """What strip_think removes: the model's reasoning (counted as reasoning tokens)."""
    return _split_think(text)[1]


def _split_think(text: str) -> tuple[str, str]:
    pos, kept, thought = 0, [], []
    first_open, first_close = _OPEN_THINK.search(text), _CLOSE_THINK.search(text)
    if first_close and (first_open is None or first_close.start() < first_open.start()):
        thought.append(text[:first_close.start()])  # the opening tag lived in the chat template
        pos = first_close.end()
    while (o := _OPEN_THINK.search(text, pos)) is not None:
        kept.append(text[pos:o.start()])
        c = _CLOSE_THINK.search(text, o.end())
        if c is None:  # unclosed: the model never finished thinking
            thought.append(text[o.end():])
            return " ".join(kept), " ".join(thought)
        thought.append(text[o.end():c.start()])
        pos = c.end()
    kept.append(text[pos:])
    return " ".join(kept), " ".join(thought)


def _constant(name: str) -> float:
    return float(name)  # NaN, Infinity, -Infinity: kept as floats, judged non-finite later


class _DuplicateKey(ValueError):
    pass


def _no_duplicate_keys(pairs):
    seen = {}
    for k, v in pairs:
        if k in seen:
            raise _DuplicateKey(f"duplicate key {k!r}")
        seen[k] = v
    return seen


def _int(digits: str) -> int:
    # Python refuses int() of > 4300 digits; any such number is far out of range.
    if len(digits) > 1000:
        return -(10**1000) if digits.startswith("-") else 10**1000
    return int(digits)


_STRICT = json.JSONDecoder(parse_constant=_constant, parse_int=_int, object_pairs_hook=_no_duplicate_keys)
_LAX = json.JSONDecoder(parse_constant=_constant, parse_int=_int)  # only to find where a duplicate-key object ends


@dataclass(frozen=True)
class _Ambiguous:
    """A decoded object that repeats a key: it is one object, but not a usable one."""

    reason: str


def _decode_at(text: str, i: int):
    """(value, end, error) for a JSON value starting at text[i]; never raises."""
    try:
        value, end = _STRICT.raw_decode(text, i)
        return value, end, ""
    except _DuplicateKey as e:
        try:
            return _Ambiguous(str(e)), _LAX.raw_decode(text, i)[1], ""
        except (ValueError, RecursionError):
            return None, i, str(e)
    except (ValueError, RecursionError) as e:  # bad JSON, >4300-digit int, deep nesting
        return None, i, str(e)[:120] or type(e).__name__


def _max_depth(text: str) -> int:
    """Bracket nesting depth outside JSON strings (a cheap pre-check)."""
    depth = deepest = 0
    in_string = escaped = False
    for c in text:
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "{[":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "}]" and depth:
            depth -= 1
    return deepest


def _top_level_values(text: str) -> tuple[list, list, list[tuple[int, str]]]:
    """Scan for JSON objects and arrays outside any decoded value.

    Returns (objects, arrays, (start, error) of each '{' that did not decode).
    A fragment that does not decode is treated as prose and scanned into.
    """
    objects, arrays, broken = [], [], []
    pos = 0
    while (m := _BRACKET.search(text, pos)) is not None:
        i = m.start()
        is_object = text[i] == "{"
        # Only a plausible start is decoded: each failed decode costs O(i) to
        # build its error message, which would make bracket-heavy text quadratic.
        if (_OBJECT_START if is_object else _ARRAY_START).match(text, i):
            value, end, err = _decode_at(text, i)
        else:
            value, end, err = None, i, "expected a double-quoted key or '}' after '{'"
        if not err:
            (objects if is_object else arrays).append(value)
            pos = end
            continue
        if is_object:
            broken.append((i, err))
        pos = i + 1
    return objects, arrays, broken


def _show(value) -> str:
    r = repr(value)
    return r if len(r) <= 60 else r[:57] + "..."


def _number(value, field: str) -> float:
    if isinstance(value, str) and _JSON_NUMBER.fullmatch(value):
        value = _STRICT.decode(value)  # exactly as if it had been written unquoted
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Fail("non-numeric", f"{field}={_show(value)} is not a number; give a bare JSON number")
    try:
        x = float(value)
    except OverflowError:  # a huge JSON integer: finite but absurd
        raise _Fail("out-of-range", f"{field} is an integer too large for a float") from None
    if not math.isfinite(x):
        raise _Fail("non-finite", f"{field}={_show(value)} is not finite")
    return x


def _ball(value, scenario: Scenario) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise _Fail("unknown-ball", f"target_ball={_show(value)} is not a ball id string")
    if value == CUE or value not in OBJECT_BALLS:
        raise _Fail("unknown-ball", f"target_ball={_show(value)} is not an object ball id ('1'..'15')")
    if value not in {b.id for b in scenario.object_balls}:
        raise _Fail("unknown-ball", f"target_ball={value!r} is not on the table in scenario {scenario.id}")
    return value


def _pocket(value) -> str:
    if isinstance(value, str):
        pid = value.strip().lower()
        if pid in POCKET_IDS:
            return pid
        raise _Fail("unknown-pocket", f"target_pocket={_show(value)} is neither [x, y] nor a pocket id "
                                      f"({', '.join(POCKET_IDS)})")
    if not isinstance(value, list) or len(value) != 2:
        raise _Fail("unknown-pocket", f"target_pocket={_show(value)} is not an [x, y] pair")
    try:
        x, y = (_number(v, "target_pocket") for v in value)
    except _Fail as f:
        if f.status == "out-of-range":  # an astronomically large coordinate is simply no pocket
            raise _Fail("unknown-pocket", f.message) from None
        raise
    best = min(geometry().pockets, key=lambda p: math.hypot(x - p.x, y - p.y))
    d = math.hypot(x - best.x, y - best.y)
    if d > POCKET_TOLERANCE:
        far = f"{d:.3f}" if d < 1e6 else f"{d:.3g}"  # a coordinate near 1e308 has a 300-digit distance
        raise _Fail("unknown-pocket", f"target_pocket=[{x}, {y}] is {far} m from the nearest pocket "
                                      f"({best.id}); must be within {POCKET_TOLERANCE} m of a pocket centre")
    return best.id


def _shot(obj: dict, scenario: Scenario, spin: bool = False) -> tuple[Shot, str]:
    """Checks run in a fixed order (fields, numbers, ball, pocket, ranges); the first failure is reported."""
    missing = [f for f in FIELDS if f not in obj]
    if missing:
        raise _Fail("missing-field", f"missing field(s) {', '.join(missing)}; "
                                     f"keys present: {_show(list(obj))}")
    phi = _number(obj["aim_angle_deg"], "aim_angle_deg")
    v0 = _number(obj["cue_speed"], "cue_speed")
    a, b = (_number(obj[f], f) if spin and f in obj else d for f, d in zip(SPIN_FIELDS, (0.0, DEFAULT_B)))
    ball = _ball(obj["target_ball"], scenario)
    pocket = _pocket(obj["target_pocket"])
    try:
        shot = Shot(phi, v0, a, b, target_ball=ball, target_pocket=pocket).validated()
    except InvalidShot as e:
        raise _Fail(e.reason if e.reason in PARSE_FAILURES else "out-of-range", str(e)) from None
    extra = [k for k in obj if k not in FIELDS and not (spin and k in SPIN_FIELDS)]
    return shot, (f"ignored extra key(s) {_show(extra)}" if extra else "")


def _single_object(text: str) -> dict:
    """The one top-level JSON object in the answer, else a _Fail."""
    if _max_depth(text) > MAX_DEPTH:
        raise _Fail("invalid-json", f"brackets nest deeper than {MAX_DEPTH} levels")
    if sum(1 for _ in _PLAUSIBLE_START.finditer(text)) > MAX_FRAGMENTS:
        raise _Fail("invalid-json", f"more than {MAX_FRAGMENTS} JSON-like fragments")
    objects, arrays, broken = _top_level_values(text)
    if len(objects) > 1:
        raise _Fail("multiple-json", f"{len(objects)} top-level JSON objects; the protocol asks for exactly one")
    if objects:
        if isinstance(objects[0], _Ambiguous):
            raise _Fail("invalid-json", f"{objects[0].reason} makes the object ambiguous")
        return objects[0]
    if broken:
        i, err = broken[0]
        raise _Fail("invalid-json", f"the '{{' at character {i} does not start valid JSON: {err}")
    if arrays:
        raise _Fail("not-object", "found a JSON array, not an object")
    stripped = text.strip()
    value, end, err = _decode_at(stripped, 0)
    if not err and end == len(stripped):
        raise _Fail("not-object", f"the answer is a JSON {type(value).__name__}, not an object")
    raise _Fail("no-json", f"no JSON object in a {len(text)}-character response")


def answer_text(text) -> str:
    """The answer a response gives after its reasoning, or _Fail: `empty` (nothing), `no-json` (not text, or
    only reasoning). Every answer parser starts here, so each reads the same statuses for the same responses."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if text is None or (isinstance(text, str) and not text.strip()):
        raise _Fail("empty", "empty response")
    if not isinstance(text, str):
        raise _Fail("no-json", f"response is a {type(text).__name__}, not text")
    answer = strip_think(text)
    if not answer.strip():
        raise _Fail("no-json", "only reasoning (<think>) text, no answer after it")
    return answer


def parse_action(text: str | None, scenario: Scenario, spin: bool = False) -> ParseResult:
    """Parse a response into a validated Shot. Never raises on str or None input. `spin`: the optional fields
    a and b (SPIN_FIELDS) are read, under the same number and range checks as the others."""
    try:
        obj = _single_object(answer_text(text))
        shot, note = _shot(obj, scenario, spin)
    except _Fail as f:
        return ParseResult(f.status, None, f.message)
    return ParseResult("ok", shot, note)


def decode_json(text: str | bytes, what: str = "the text"):
    """The JSON value of untrusted `text` (a tool call, a request body), or ValueError naming what is wrong.
    Nesting deeper than MAX_DEPTH is refused before decoding: the decoder recurses per level, so deep brackets
    would otherwise end in a RecursionError, which no caller expects from bad input."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")  # UnicodeDecodeError is a ValueError
    if _max_depth(text) > MAX_DEPTH:
        raise ValueError(f"{what} nests brackets deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text)
    except ValueError as e:
        raise ValueError(f"{what} is not JSON ({str(e)[:120]})") from None


def read_target(ball, pocket, scenario: Scenario) -> tuple[str, str]:
    """(ball id, pocket id) as an answer's target_ball and target_pocket are
    read (a pocket id or its [x, y] centre); ValueError names what is wrong.
    Tools that take a target (llm.tools) read it by the same rules."""
    try:
        return _ball(ball, scenario), _pocket(pocket)
    except _Fail as f:
        raise ValueError(f.message) from None


def read_ball(ball, scenario: Scenario) -> str:
    """A ball id read as `read_target` reads one (no pocket); ValueError names what is wrong."""
    try:
        return _ball(ball, scenario)
    except _Fail as f:
        raise ValueError(f.message) from None
