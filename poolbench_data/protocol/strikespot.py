"""DeepPHY's discrete pool action (its Appendix E), and the parser of its one-line answer.

The agent names a speed and a strike spot; the aim is not its choice (the game aims at the lowest-numbered
ball). DeepPHY's system prompt asks for exactly `Speed: [Speed Name], Strikespot: [Strikespot Name].` with the
names below, and its SPEED_MAPPING and STRIKESPOT_MAPPING give the numbers: V0 in m/s, and the cue tip's offsets
(a, b) in ball radii as pooltool's Cue takes them (a > 0 is the left of the ball, b > 0 the top), so the mapping's
"Left" spots carry a = +0.35, as printed. Both mappings are copied from the appendix, in its order.

The parser answers with the protocol's statuses (protocol.parsing), read for a line instead of a JSON object:
    empty          no text at all
    no-json        no `Speed:` and no `Strikespot:` in the answer (reasoning only, or prose)
    missing-field  one of the two is absent
    multiple-json  the answer names two different speeds or two different strike spots: picking one would be
                   our guess (the same name repeated, as a model restating its choice does, is one answer)
    out-of-range   a name outside DeepPHY's options ("Speed: Very High"): outside the action space
Case, surrounding brackets, quotes, backticks, markdown emphasis and a final period are ignored, and so are
reasoning blocks (`<think>`), exactly as the JSON parser strips them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from poolbench_data.protocol.parsing import _Fail, answer_text

SPEEDS = {"Low": 2.0, "Medium": 5.0, "High": 8.0}  # DeepPHY's SPEED_MAPPING, m/s
STRIKESPOTS = {  # DeepPHY's STRIKESPOT_MAPPING: name -> (a, b)
    "Top Left Spin": (0.35, 0.35),
    "Top Spin": (0.0, 0.5),
    "Top Right Spin": (-0.35, 0.35),
    "Middle Left Spin": (0.35, 0.0),
    "Middle Spin": (0.0, 0.0),
    "Middle Right Spin": (-0.35, 0.0),
    "Bottom Left Spin": (0.35, -0.35),
    "Bottom Spin": (0.0, -0.5),
    "Bottom Right Spin": (-0.35, -0.35),
}
ANSWER_FORMAT = "Speed: [Speed Name], Strikespot: [Strikespot Name]."  # DeepPHY's required output line

_SPEED = re.compile(r"\bspeed\s*[:=]\s*([^,;.\n]*)", re.IGNORECASE)
_SPOT = re.compile(r"\bstrike[\s_-]*spot\s*[:=]\s*([^,;.\n]*)", re.IGNORECASE)
_DECORATION = " \t[](){}<>\"'`*_."
_BY_KEY = {**{k.lower(): k for k in SPEEDS}, **{k.lower(): k for k in STRIKESPOTS}}


@dataclass(frozen=True)
class StrikeParse:
    status: str  # "ok" or one of protocol.parsing.PARSE_FAILURES
    speed: str | None = None  # a key of SPEEDS
    spot: str | None = None  # a key of STRIKESPOTS
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def format_strike(speed: str, spot: str) -> str:
    """The answer line DeepPHY asks for, for one action."""
    return f"Speed: {speed}, Strikespot: {spot}."


def _names(pattern: re.Pattern, text: str) -> list[str]:
    out = []
    for m in pattern.finditer(text):
        value = " ".join(m.group(1).strip(_DECORATION).split())
        out.append(_BY_KEY.get(value.lower(), value))
    return out


def _one(values: list[str], field: str, options) -> str:
    """The one name `values` give for `field`, or _Fail."""
    distinct = list(dict.fromkeys(values))
    if len(distinct) > 1:
        raise _Fail("multiple-json", f"the answer names {len(distinct)} different {field}s: {distinct}")
    if distinct[0] not in options:
        raise _Fail("out-of-range", f"{field} {distinct[0]!r} is not one of DeepPHY's options ({', '.join(options)})")
    return distinct[0]


def parse_strike(text: str | None) -> StrikeParse:
    """DeepPHY's answer line as (speed, strike spot), or the status saying why not. Never raises on text or None."""
    try:
        answer = answer_text(text)
        speeds, spots = _names(_SPEED, answer), _names(_SPOT, answer)
        if not speeds and not spots:
            raise _Fail("no-json", f"no 'Speed: ..., Strikespot: ...' line in a {len(text)}-character response")
        if not speeds or not spots:
            raise _Fail("missing-field", f"missing {'Speed' if not speeds else 'Strikespot'}; answer as "
                                         f"{ANSWER_FORMAT}")
        speed = _one(speeds, "speed", SPEEDS)
        spot = _one(spots, "strike spot", STRIKESPOTS)
    except _Fail as f:
        return StrikeParse(f.status, message=f.message)
    return StrikeParse("ok", speed, spot)
