"""Tool-use demonstrations (the `sft_tools` config): the model chooses what is
discrete (ball, pocket, speed), the `ghost_ball` tool computes the angle.

A row is one conversation in TRL's conversational language-modelling format
(`messages`), exactly as `poolbench eval --tools` renders it: the protocol's
system prompt with the tool's paragraph, the board, then the model's turns (a
`<tool_call>` block naming a ball, the tool's report of that ball's pockets
in a `tool` turn, and finally the protocol's JSON action for an open pocket
of the report, with its potting-point aim). The loss is on the model's turns
only; a turn with `context: true` (a mistaken call kept to show the recovery)
is shown but not trained, so the model learns what to do after an error
without learning to make it.

The demonstrated (ball, pocket, speed) is searched, never guessed: the
Oracle's ball and pocket first, then the geometry candidates cheapest first,
each at the Oracle's speeds (or the builder's --tool_demo_speeds, in their
order); the first whose tool answer is clear (no ball in
either path, ghost ball free) and whose written action, parsed and simulated
as the evaluator would, pots an own ball without a foul (a simulation that
stopped early never counts: `settled`). A board with none
gives no row. The demonstrations call per ball (`ghost_ball(target_ball)`, every
pocket at once): the model chooses the ball, then a pocket the report shows open.

Every tool turn says `calls_left` as the evaluator does (`llm.tools.turn_result`,
cap MAX_CALLS). A share of the demonstrations first ask for balls with no open
pocket; some of them reach the cap with nothing open (`at_cap`): all three calls
are context, and the trained turn is the action the evaluator reads there: of
the shown shot whose cue path is free (the smallest cut; else the last shown)
and the one-cushion kicks the reports showed, the aim and speed the simulator
plays best. Those rows are not all pots: their outcome is what
the simulator gives, recorded and replayed like any other.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from poolbench_data.boards.splits import EVAL_SPLITS
from poolbench_data.core.candidates import candidates
from poolbench_data.core.records import PLAYER_GROUP, Metrics, Scenario, Shot
from poolbench_data.core.vocab import group_of
from poolbench_data.llm.tools import (MAX_CALLS, TOOL_NAME, call_of, tool_answer, tool_calls, turn_result,
                                      with_tool_note)
from poolbench_data.players.baselines import ORACLE_SPEEDS, ORACLE_TOP_K
from poolbench_data.players.play import ShotRecord, play_shot
from poolbench_data.protocol.parsing import parse_action
from poolbench_data.protocol.prompts import PROMPT_VERSION, format_action, messages

TOOL_ARGUMENTS = ("target_ball", "pocket")  # the only arguments ghost_ball takes; pocket may be left out
# Boards whose demonstration first asks for a shot the tool reports blocked: enough of them that the model learns
# to call again after a blocked report (docs/results.md#the-demonstrations).
RETRY_BLOCKED_SHARE = 0.45
RETRY_ERROR_SHARE = 0.1  # ... first names a ball that is not on the table
# Of those first asking for a blocked shot, the share that asks for a second blocked one before the open shot
# (three calls, the evaluator's cap): with one blocked call only, a model learns to answer after its second
# report whether or not that report shows an open shot.
RETRY_AGAIN_SHARE = 0.5
# Of those asking for two blocked shots, the share whose third call is blocked too: the action is due at the cap
# with nothing open. Without such rows a model at the cap writes a fourth call there, which is no action
# (docs/results.md#the-demonstrations).
AT_CAP_SHARE = 0.5
# Boards without a tool-derived pot whose demonstration is the action after calls for closed own balls
# (`no_pot_demo`): every one, so the model learns the action at the cap, a kick where the report shows one
# (docs/results.md#the-tool-report, #the-demonstrations).
NO_POT_SHARE = 1.0
DEMO_ORDERS = ("oracle", "listed")  # tool_demo's search (the Oracle's choice first), or listed_demo's procedure
OUTCOMES = ("legal_contact", "own_potted", "foul", "opp_or_8_potted", "clean_pot")
# The tool's aim the demonstrations copy: the potting point pots more of the clear shots than the centre aim
# (llm.tools.ghost_ball; docs/results.md#the-tool-report).
AIM_FIELD = "potting_point_aim_angle_deg"


class DemonstrationError(ValueError):
    """A demonstration that does not replay as recorded: a build error naming the board."""


def call_text(ball: str, pocket: str | None = None) -> str:
    """What the model writes to call the tool (the form TOOL_NOTE shows)."""
    return f"<tool_call>{json.dumps(call_of(ball, pocket))}</tool_call>"


def clear(result: Mapping) -> bool:
    """The tool's answer shows an open shot (`open`: nothing in either path, the ghost ball free, a cut below
    MAX_CUT): the pocket's, or for a ball's report any of its shots (the report's own `open`)."""
    return "error" not in result and result["open"]


def shown(scenario: Scenario, calls: Sequence[tuple[str, str | None]]) -> list[tuple[str, str, dict]]:
    """The (ball, pocket, single-pocket answer) of every shot the answers to `calls` showed an aim for, in order
    (a report's shots in its order); errors show none."""
    out = []
    for ball, pocket in calls:
        result = tool_answer(scenario, ball, pocket)
        if "error" in result:
            continue
        pockets = [pocket] if pocket is not None else [x["pocket"] for x in result["shots"]]
        out += [(ball, p, result if pocket is not None else tool_answer(scenario, ball, p)) for p in pockets]
    return out


@dataclass(frozen=True)
class ToolDemo:
    """One board's demonstration: the calls made (the last one is answered) and the shot written."""

    scenario: Scenario
    calls: tuple[tuple[str, str | None], ...]  # (ball, pocket or None for the ball's report) in order
    context_calls: int  # how many leading calls are shown but not trained
    answer: str  # the protocol's JSON action
    shot: Shot
    metrics: Metrics
    kind: str  # direct | after_blocked | after_error | at_cap | all_closed | listed_open | listed_closed

    def messages(self) -> list[dict]:
        conv = with_tool_note([messages(self.scenario)])[0]
        out = [{"role": m["role"], "content": m["content"], "context": False} for m in conv]
        for k, (ball, pocket) in enumerate(self.calls):
            out.append({"role": "assistant", "content": call_text(ball, pocket), "context": k < self.context_calls})
            result = turn_result(self.scenario, call_of(ball, pocket), MAX_CALLS - k - 1)
            out.append({"role": "tool", "content": json.dumps(result), "context": False})
        out.append({"role": "assistant", "content": self.answer, "context": False})
        return out

    def to_row(self, split: str) -> dict:
        ball, pocket = self.shot.target_ball, self.shot.target_pocket
        return {"messages": self.messages(), "scenario_id": self.scenario.id, "category": self.scenario.category,
                "split": split, "demonstration": self.kind, "calls": len(self.calls), "target_ball": ball,
                "pocket": pocket, "cue_speed": self.shot.V0, **{k: bool(getattr(self.metrics, k)) for k in OUTCOMES},
                "player": "tool_oracle", "prompt_version": PROMPT_VERSION}


def played(scenario: Scenario, answer: str) -> tuple[Shot | None, Metrics]:
    """The answer parsed and simulated exactly as the evaluator does."""
    record = _record(scenario, answer)
    return record.shot, record.metrics


def settled(scenario: Scenario, answer: str) -> tuple[Shot | None, Metrics] | None:
    """`played`, or None where the simulation stopped early (the event limit, the wall clock): its outcome is where
    the balls happened to be, not what the shot does, so it is never demonstrated nor preferred to another."""
    record = _record(scenario, answer)
    if record.stopped_early:
        return None
    return record.shot, record.metrics


def _record(scenario: Scenario, answer: str) -> ShotRecord:
    p = parse_action(answer, scenario)
    return play_shot(scenario, p.shot, player="tool_oracle", kind="llm", parse_status=p.status)


def _tried(scenario: Scenario, oracle_shot: Shot | None,
           speeds: Sequence[float] = ORACLE_SPEEDS) -> list[tuple[str, str, float]]:
    """(ball, pocket, speed) in search order: the Oracle's choice first (at its own speed first), then the
    candidates cheapest first, each at `speeds` in order."""
    order, seen = [], set()
    if oracle_shot is not None and oracle_shot.target_ball and oracle_shot.target_pocket:
        key = (oracle_shot.target_ball, oracle_shot.target_pocket)
        order += [(*key, v) for v in (oracle_shot.V0, *[v for v in speeds if v != oracle_shot.V0])]
        seen.add(key)
    for c in candidates(scenario, aim="centre")[:ORACLE_TOP_K]:
        if (c.ball, c.pocket) not in seen:
            seen.add((c.ball, c.pocket))
            order += [(c.ball, c.pocket, v) for v in speeds]
    return order


def find_pot(scenario: Scenario, oracle_shot: Shot | None = None,
             speeds: Sequence[float] = ORACLE_SPEEDS) -> tuple[str, str, str, Shot, Metrics] | None:
    """The first searched (ball, pocket, speed) the tool shows clear and that, written with the tool's aim,
    pots legally (its simulation ran to rest): (ball, pocket, answer, shot, metrics); None when no such shot
    exists."""
    answers: dict[tuple[str, str], dict] = {}  # one tool answer per (ball, pocket), whatever the speeds tried
    for ball, pocket, speed in _tried(scenario, oracle_shot, speeds):
        if (ball, pocket) not in answers:
            answers[ball, pocket] = tool_answer(scenario, ball, pocket)
        result = answers[ball, pocket]
        if not clear(result):
            continue
        answer = format_action(Shot(phi=result[AIM_FIELD], V0=speed, target_ball=ball, target_pocket=pocket),
                               scenario)
        outcome = settled(scenario, answer)
        if outcome is not None and outcome[1].clean_pot:
            return ball, pocket, answer, *outcome
    return None


def shown_kicks(scenario: Scenario, calls: Sequence[tuple[str, str | None]]) -> list[tuple[str, dict]]:
    """The (ball, kick) of every one-cushion kick the reports answering `calls` showed (a report with nothing
    open shows its ball's kick, where one is clear)."""
    reports = (tool_answer(scenario, ball, None) for ball, pocket in calls if pocket is None)
    return [(r["target_ball"], r["kick"]) for r in reports if r.get("kick")]


def cap_answer(scenario: Scenario, calls: Sequence[tuple[str, str | None]],
               speeds: Sequence[float] = ORACLE_SPEEDS) -> tuple[str, Shot, Metrics] | None:
    """The action at the cap after `calls` none of which was open. The aims tried: of the shots their answers
    showed, the one whose cue path is free (the smallest cut; else the last shown), then each kick a report
    showed, each with the tool's aim at each of `speeds`; the first whose outcome is best in the
    simulator (a legal pot, then legal contact, then no foul). None when no aim was shown (every call an
    error) or every simulation stopped early."""
    options = shown(scenario, calls)
    aims = []
    if options:
        free = [o for o in options if not o[2]["cue_path_blocked_by"]]
        ball, pocket, result = min(free, key=lambda o: o[2]["cut_angle_deg"]) if free else options[-1]
        aims.append((ball, pocket, result[AIM_FIELD]))
    aims += [(ball, k["pocket"], k["aim_angle_deg"]) for ball, k in shown_kicks(scenario, calls)]
    return best_of(scenario, aims, speeds) if aims else None


def best_of(scenario: Scenario, aims: Sequence[tuple[str, str, float]],
            speeds: Sequence[float] = ORACLE_SPEEDS) -> tuple[str, Shot, Metrics] | None:
    """Of the (ball, pocket, aim)s at each of `speeds` (the Oracle's by default), the first written action whose
    outcome is best in the simulator (a legal pot, then legal contact, then no foul): (answer, shot, metrics);
    `settled` outcomes only, None where there is none."""
    best = None
    for ball, pocket, aim in aims:
        for speed in speeds:
            answer = format_action(Shot(phi=aim, V0=speed, target_ball=ball, target_pocket=pocket), scenario)
            outcome = settled(scenario, answer)
            if outcome is None:
                continue
            shot, m = outcome
            key = (m.clean_pot, m.legal_contact, not m.foul)
            if best is None or key > best[0]:
                best = (key, answer, shot, m)
    return None if best is None else best[1:]


def blocked_calls(scenario: Scenario, ball: str | None = None) -> list[tuple[str, None]]:
    """Calls for the reports of own balls (other than `ball`, if given) that show no open pocket."""
    return [(b.id, None) for b in scenario.own() if b.id != ball and not clear(tool_answer(scenario, b.id, None))]


def _absent_own(scenario: Scenario) -> list[str]:
    """Ball ids of the player's group that are not on this board (a call naming one is an error)."""
    on_table = {b.id for b in scenario.object_balls}
    return [b for b in map(str, range(1, 16)) if b not in on_table and group_of(b) == PLAYER_GROUP]


def tool_demo(scenario: Scenario, oracle_shot: Shot | None, seed: int, blocked_share: float = RETRY_BLOCKED_SHARE,
              error_share: float = RETRY_ERROR_SHARE, again_share: float = RETRY_AGAIN_SHARE,
              cap_share: float = AT_CAP_SHARE, no_pot_share: float = NO_POT_SHARE,
              speeds: Sequence[float] = ORACLE_SPEEDS) -> ToolDemo | None:
    """One board's demonstration, or None when the tool's geometry gives no legal pot there (and no at-cap row
    is drawn for it).

    The model calls for the pot's ball and answers with the pot. With probability `blocked_share` (where the
    board has one) it first asks for an own ball with no open pocket, then asks again (with `again_share` of
    those, for a second such ball first, and with `cap_share` of these for a third: the action at the cap,
    `cap_answer`); with `error_share` it first names a ball not on the table. The mistaken calls are context, not
    trained. Where there is no legal pot, with `no_pot_share` (if the board has MAX_CALLS own balls with nothing
    open, or fewer but all of them) the row is the action after calls for them (`no_pot_demo`). The draw uses its
    own RNG from (seed, the board's seed). `speeds`: the cue speeds tried, in order, after the Oracle's own."""
    rng = np.random.default_rng([seed, scenario.seed])
    found = find_pot(scenario, oracle_shot, speeds)
    if found is None:
        return no_pot_demo(scenario, rng, speeds) if float(rng.random()) < no_pot_share else None
    ball, pocket, answer, shot, m = found
    u = float(rng.random())
    mistakes: list[tuple[str, str]] = []
    kind = "direct"
    if u < blocked_share:
        options = blocked_calls(scenario, ball)
        if options:
            mistakes, kind = [options.pop(int(rng.integers(len(options))))], "after_blocked"
            if options and float(rng.random()) < again_share:
                mistakes.append(options.pop(int(rng.integers(len(options)))))
                if options and len(mistakes) + 1 == MAX_CALLS and float(rng.random()) < cap_share:
                    mistakes.append(options[int(rng.integers(len(options)))])
                    at_cap = cap_answer(scenario, mistakes, speeds)
                    if at_cap is not None:
                        return ToolDemo(scenario, tuple(mistakes), len(mistakes), *at_cap, "at_cap")
                    mistakes.pop()
    elif u < blocked_share + error_share:
        absent = _absent_own(scenario)
        if absent:
            mistakes, kind = [(absent[int(rng.integers(len(absent)))], None)], "after_error"
    return ToolDemo(scenario, (*mistakes, (ball, None)), len(mistakes), answer, shot, m, kind)


def no_pot_demo(scenario: Scenario, rng, speeds: Sequence[float] = ORACLE_SPEEDS) -> ToolDemo | None:
    """A board without a legal pot: calls for MAX_CALLS own balls whose reports show nothing open (context), then
    the action at the cap (`cap_answer`); where every own ball is closed and there are fewer, a call for each,
    then the action (`all_closed`: nothing is left to call). None otherwise. The other demonstrations rarely
    reach the cap, and a model that has not seen the action there writes a fourth call instead
    (docs/results.md#the-demonstrations). Indirect boards often hold one or two own balls: `all_closed` gives
    them a row."""
    options = blocked_calls(scenario)
    if not options or (len(options) < MAX_CALLS and len(options) < len(scenario.own())):
        return None
    calls = tuple(options[int(i)] for i in rng.permutation(len(options))[:MAX_CALLS])
    answer = cap_answer(scenario, calls, speeds)
    kind = "at_cap" if len(calls) == MAX_CALLS else "all_closed"
    return None if answer is None else ToolDemo(scenario, calls, len(calls), *answer, kind)


def listed_demo(scenario: Scenario, seed: int, error_share: float = RETRY_ERROR_SHARE,
                speeds: Sequence[float] = ORACLE_SPEEDS) -> ToolDemo | None:
    """A procedure the model can read off its own conversation: call the own balls in the order the prompt lists
    them until a report shows an open shot (at most MAX_CALLS calls, every one trained), then write the best of
    that report's open shots at `speeds` (`best_of`; ties: the report's order, then the order of `speeds`); with
    nothing open, the action `cap_answer` writes (None where no report shows an aim). With `error_share` a ball
    not on the table is named first (context). A model trained on Oracle-first rows does not learn the Oracle's
    choice of ball, only to write a report's first open shot; this procedure is one it can follow
    (docs/results.md#the-demonstrations)."""
    rng = np.random.default_rng([seed, scenario.seed])
    absent = _absent_own(scenario)
    mistakes = [(absent[int(rng.integers(len(absent)))], None)] if absent and rng.random() < error_share else []
    calls: list[tuple[str, str | None]] = []
    for ball in listed_own(scenario)[:MAX_CALLS - len(mistakes)]:
        calls.append((ball, None))
        if clear(tool_answer(scenario, ball, None)):
            opened = [(ball, p, r[AIM_FIELD]) for _, p, r in shown(scenario, [(ball, None)]) if clear(r)]
            best = best_of(scenario, opened, speeds)
            if best is None:  # every open shot's simulation stopped early: nothing honest to demonstrate
                return None
            return ToolDemo(scenario, (*mistakes, *calls), len(mistakes), *best, "listed_open")
    at_cap = cap_answer(scenario, calls, speeds)  # None: no own ball, or none that any report shows an aim for
    return None if at_cap is None else ToolDemo(scenario, (*mistakes, *calls), len(mistakes), *at_cap,
                                                "listed_closed")


def listed_own(scenario: Scenario) -> list[str]:
    """The player's balls in the order the prompt lists them (by number)."""
    return sorted((b.id for b in scenario.own()), key=int)


def tool_sft_rows(scenarios: Sequence[dict], split: str, seed: int = 0, progress: bool = False,
                  blocked_share: float = RETRY_BLOCKED_SHARE, no_pot_share: float = NO_POT_SHARE,
                  order: str = "oracle", speeds: Sequence[float] = ORACLE_SPEEDS) -> list[dict]:
    """One row per scenario row whose board has a tool-derived legal pot (or, with `no_pot_share`, an at-cap row
    where it has none), in board order; each verified. `order` "listed": every board's `listed_demo` instead.
    `speeds`: the cue speeds the demonstrations try, in order (the first that plays best is written)."""
    from tqdm.auto import tqdm

    if order not in DEMO_ORDERS:
        raise ValueError(f"order {order!r}: give one of {', '.join(DEMO_ORDERS)}")
    if split in EVAL_SPLITS:
        raise ValueError(f"split {split!r} holds the evaluation boards; demonstrations come from train splits only")
    rows = []
    for s in tqdm(scenarios, desc="tool demonstrations", unit="board", disable=not progress):
        scenario = Scenario.from_row(s)
        oracle = Shot.from_row(s["oracle_shot"]) if s.get("oracle_shot") else None
        demo = (listed_demo(scenario, seed, speeds=speeds) if order == "listed" else
                tool_demo(scenario, oracle, seed, blocked_share, no_pot_share=no_pot_share, speeds=speeds))
        if demo is not None:
            row = demo.to_row(split)
            verify_tool_row(row, scenario)
            rows.append(row)
    return rows


def verify_tool_row(row: Mapping, scenario: Scenario) -> None:
    """Replay a row: each tool turn must be the tool's answer to the call before it, and the final action,
    parsed and simulated, must give the recorded outcome. Raise DemonstrationError naming the board."""
    where = f"tool demonstration for board {row.get('scenario_id')!r}"
    msgs = list(row["messages"])
    for k, m in enumerate(msgs):
        if m["role"] != "tool":
            continue
        calls = tool_calls(msgs[k - 1]["content"]) if k and msgs[k - 1]["role"] == "assistant" else []
        made = sum(1 for x in msgs[:k] if x["role"] == "assistant" and tool_calls(x["content"]))
        if len(calls) != 1 or json.loads(m["content"]) != turn_result(scenario, calls[0], MAX_CALLS - made):
            raise DemonstrationError(f"{where}: message {k} is not the tool's answer to the call before it")
    if not msgs or msgs[-1]["role"] != "assistant" or tool_calls(msgs[-1]["content"]):
        raise DemonstrationError(f"{where}: the conversation does not end with the model's action")
    outcome = settled(scenario, msgs[-1]["content"])
    if outcome is None:
        raise DemonstrationError(f"{where}: the written action's simulation stops early (event limit or wall "
                                 "clock), so its outcome is not the shot's")
    got = {k: bool(getattr(outcome[1], k)) for k in OUTCOMES}
    want = {k: bool(row[k]) for k in OUTCOMES}
    if got != want:
        diff = ", ".join(f"{k} recorded {want[k]} but replays {got[k]}" for k in OUTCOMES if got[k] != want[k])
        raise DemonstrationError(f"{where}: the written action does not reproduce its outcome ({diff}); "
                                 "rebuild the config with builders/build_sft.py --tools")


def call_problems(content: str) -> list[str]:
    """What is wrong with the tool calls written in one model turn (empty when fine)."""
    problems = []
    for call in tool_calls(content):
        if call.get("error"):
            problems.append(call["error"])
        elif call.get("name") != TOOL_NAME:
            problems.append(f"calls unknown tool {call.get('name')!r} (the only tool is {TOOL_NAME})")
        elif "target_ball" not in call["arguments"] or set(call["arguments"]) - set(TOOL_ARGUMENTS):
            problems.append(f"calls {TOOL_NAME} with arguments {sorted(call['arguments'])} "
                            f"(it takes target_ball and, optionally, pocket)")
    return problems
