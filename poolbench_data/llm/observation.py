"""What a language model reads each turn of a game, and how its answer becomes the game's action.

The system prompt is the game's: DeepPHY's for nine-ball (protocol.deepphy: its answer line, or with
`action="continuous"` a JSON of speed and spin), the protocol's for a run-out (protocol.prompts.SYSTEM_PROMPT)
with the run-out's rules and the two optional spin fields added. Each turn's user message is the observation:

- the previous attempt's outcome, in the words the traces carry: its action, the simulator's event text
  (`Outcome.event_text`, CueTip's `ball-ball-cue-1, ball-pocket-3-rt`; its first EVENTS_SHOWN events), the
  balls potted, the fouls, a respotted cue ball; or why the answer could not be played;
- the table now, as the protocol's prompt writes a board (protocol.prompts: the same header, cue-ball line, ball
  lines with 4 decimals and the pocket line): a run-out's is its board's prompt, nine-ball's the same lines on
  pooltool's default table, the target (the lowest-numbered ball, at which every shot is aimed) named first;
- the request: DeepPHY's user prompt (nine-ball), the protocol's "Respond with ONLY JSON." (run-out).

`history` decides what goes with it: "current" sends the system prompt and this turn's observation only (what
DeepPHY's runner sends: the current table), "full" the whole conversation so far, the model's own answers
included. Images (--vision) go with the current observation only (`llm.experiments.with_images`).
"""

from __future__ import annotations

import functools
import json
import math

from poolbench_data.core.records import EIGHT, Shot
from poolbench_data.games.nineball import NINE, lowest, read_strike, table
from poolbench_data.games.records import GameState, Outcome, Strike
from poolbench_data.games.step import rules_of, step
from poolbench_data.protocol.deepphy import CONTINUOUS_JSON_SCHEMA, USER_PROMPT, parse_continuous, system_prompt
from poolbench_data.protocol.prompts import (ACTION_JSON_SCHEMA, SYSTEM_PROMPT, ball_line, fmt, pockets_line,
                                             table_head, user_prompt)
from poolbench_data.protocol.strikespot import format_strike

HISTORIES = ("current", "full")  # current: DeepPHY's runner (the table now); full: the conversation so far
ACTIONS = ("discrete", "continuous")
# The text of every game prompt (DeepPHY's, the run-out's note, the observation's lines). Stored with each run;
# a change to any of them changes it.
GAME_PROMPT_VERSION = "poolbench-games-v1"
RUNOUT_NOTE = (
    "\n\nRUN-OUT. You keep shooting while each shot pots one of your balls cleanly (one of yours potted, one of yours "
    "hit first, no foul); the visit ends on the first shot that does not. Once your group is cleared the 8-ball is "
    "your ball: pot it cleanly to win; potting it before then loses.\n"
    "\n"
    'SPIN (optional). You may add two fields to the JSON: "a" and "b", the cue tip\'s offsets from the cue ball\'s '
    "centre in ball radii, each in [-0.5, 0.5]: a > 0 strikes left of centre (left English), a < 0 right of it; "
    "b > 0 above centre (follow), b < 0 below it (draw). Left out: a = 0, b = 0.25."
)
RUNOUT_JSON_SCHEMA: dict = {
    **ACTION_JSON_SCHEMA,
    "properties": {**ACTION_JSON_SCHEMA["properties"], "a": {"type": "number"}, "b": {"type": "number"}},
}
EVENTS_SHOWN = 60  # events of the last shot an observation lists (outcome_text); the traces keep them all
_GROUP_LINE = "Your group: SOLIDS"
_EIGHT_LINE = "8-ball:"
EIGHT_GROUP = ("Your group: SOLIDS (balls 1–7), all potted. The 8-ball is YOUR ball now: hit it first AND pot it "
               "to win.")


def default_action(game: str) -> str:
    """DeepPHY's line for nine-ball; the protocol's JSON action (a continuous one) for a run-out."""
    return "continuous" if game == "runout" else "discrete"


def game_system_prompt(game: str, action: str, vision: bool = False) -> str:
    if game == "runout":
        return SYSTEM_PROMPT + RUNOUT_NOTE
    return system_prompt(action, vision)


def answer_schema(game: str, action: str) -> dict | None:
    """The JSON schema of the answer, for structured decoding (None: DeepPHY's line is no JSON)."""
    if game == "runout":
        return RUNOUT_JSON_SCHEMA
    return CONTINUOUS_JSON_SCHEMA if action == "continuous" else None


@functools.cache
def nineball_geometry():
    from poolbench_data.core.table import geometry_of

    return geometry_of(table())


def table_text(state: GameState) -> str:
    """The table now, as the protocol writes a board."""
    if state.game == "runout":
        return runout_table(state)
    g = nineball_geometry()
    cue, target = state.balls[0], state.ball(lowest(state))  # a pocketed cue ball is always put back

    def ball(b) -> str:
        return ball_line(b, cue) + (" (pot it to win)" if b.id == NINE else "")

    others = [ball(b) for b in state.balls[1:] if b.id != target.id]
    return "\n".join([
        *table_head(g, cue),
        "Target: the lowest-numbered ball on the table. Every shot is aimed straight at it.",
        ball(target),
        "",
        "Other balls:",
        *(others or ["none on the table"]),
        "",
        pockets_line(g),
    ])


def runout_table(state: GameState) -> str:
    """The board's prompt (protocol.prompts.user_prompt); once the group is cleared its group line and 8-ball line
    say that the 8 is the player's ball, with its distance as an own ball's."""
    rules = rules_of("runout")
    text = user_prompt(rules.scenario(state))
    if not rules.on_eight(state):
        return text
    cue, eight = state.balls[0], state.ball(EIGHT)
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith(_GROUP_LINE):
            lines[i] = EIGHT_GROUP
        elif line.startswith(_EIGHT_LINE):
            lines[i] = (f"8-ball: x={fmt(eight.x)}, y={fmt(eight.y)} (distance from cue = "
                        f"{fmt(math.hypot(eight.x - cue.x, eight.y - cue.y))}m) (YOUR ball: hit it first)")
    return "\n".join(lines)


def action_text(action) -> str:
    """An action as the model could have written it."""
    if isinstance(action, Strike):
        if action.name:
            return format_strike(*action.name.split(" / "))
        return json.dumps({"cue_speed": action.V0, "a": action.a, "b": action.b})
    if isinstance(action, Shot):
        return json.dumps({"target_ball": action.target_ball, "target_pocket": action.target_pocket,
                           "aim_angle_deg": round(action.phi, 2), "cue_speed": round(action.V0, 2),
                           "a": action.a, "b": action.b})
    return "(none)"


def events_shown(event_text: str) -> str:
    """The first EVENTS_SHOWN events of an event text, and how many more there were: a cluster of touching balls
    (a rack) can log hundreds of contacts, which would fill a small model's context; the balls potted and the
    fouls are said apart, whatever the count."""
    events = event_text.split(", ") if event_text else []
    if len(events) <= EVENTS_SHOWN:
        return event_text or "none"
    return f"{', '.join(events[:EVENTS_SHOWN])}, ... ({len(events) - EVENTS_SHOWN} more events)"


def outcome_text(o: Outcome) -> str:
    """The previous attempt, as the model reads it."""
    if not o.fired:
        return (f"Your last answer (attempt {o.attempt}) could not be played ({o.parse_status}: {o.message}); the "
                "attempt is spent.")
    parts = [f"Your last shot (attempt {o.attempt}): {action_text(o.action)}",
             f"Events: {events_shown(o.event_text)}.",
             f"Potted: {', '.join(o.potted)}." if o.potted else "Nothing potted."]
    if o.foul_reasons:
        parts.append(f"Foul: {', '.join(o.foul_reasons)}.")
    if o.respotted:
        parts.append("The cue ball was potted and has been put back on the table.")
    return " ".join(parts)


def observation(state: GameState) -> str:
    """This turn's user message: the last outcome, the table, the request."""
    head = [outcome_text(state.last), ""] if state.last is not None else []
    if state.game == "runout":
        return "\n".join([*head, f"Shot {state.attempts + 1} of this visit.", "", table_text(state)])
    return "\n".join([*head, f"Attempt {state.attempts + 1} of {state.max_attempts}.", "", table_text(state), "",
                      USER_PROMPT])


def read_answer(state: GameState, text: str | None, action: str):
    """(the game's action or None, parse status, message) of an answer: the protocol's JSON action with the spin
    fields (run-out), DeepPHY's line or the continuous JSON (nine-ball)."""
    if state.game == "runout":
        from poolbench_data.protocol.parsing import parse_action

        parsed = parse_action(text, rules_of("runout").scenario(state), spin=True)
        return parsed.shot, parsed.status, parsed.message
    if action == "discrete":
        strike, parsed = read_strike(text)
        return strike, parsed.status, parsed.message
    p = parse_continuous(text)
    return (Strike(p.V0, p.a, p.b) if p.ok else None), p.status, p.message


def play_answer(state: GameState, text: str | None, action: str):
    """An answer played as the evaluator plays it: read as the game's action (read_answer), then one step of the
    game, which turns an answer that cannot be played into a wasted attempt with its parse status. (the action
    read, or None; the state after; the attempt's outcome, None where the episode had ended)."""
    act, status, message = read_answer(state, text, action)
    after, outcome = step(state, act, parse_status=status, parse_message=message)
    return act, after, outcome


def longest_outcome(game: str, max_attempts: int) -> str:
    """An outcome paragraph at least as long as any the game gives (the longest action text, every event slot the
    longest event, every ball potted, both fouls): what the context check allows for it."""
    from poolbench_data.core.records import OBJECT_BALLS

    x = -0.12345678901234568  # a float with the longest repr
    action = (Shot(359.99, 11.99, x, x, target_ball="15", target_pocket="rb") if game == "runout"
              else Strike(11.99, x, x))
    balls = OBJECT_BALLS if game == "runout" else tuple(str(i) for i in range(1, 10))
    events = ", ".join(["ball-pocket-cue-rb"] * EVENTS_SHOWN) + ", ... (99999 more events)"
    return (f"Your last shot (attempt {max_attempts}): {action_text(action)} Events: {events}. Potted: "
            f"{', '.join(balls)}. Foul: scratch, wrong-first-contact, no-contact. The cue ball was potted and has "
            "been put back on the table.")
