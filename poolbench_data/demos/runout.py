"""Position-Oracle demonstrations in the run-out game (the `sft_runout` config), and the written visit they and the
position pairs (pairs.position) come from.

A run-out is played here as `poolbench eval --game runout` plays a model: each turn the player's shot is written
as the answer a model would give (the protocol's JSON action with the spin fields a and b), read back by the
evaluator's parser (llm.observation.read_answer) and stepped from the table as the evaluator steps an answer, its
simulation run anew. So the answer a row holds is the shot that was played, and a model that gave a visit's
answers would be sent the same prompts and play the same visit. A turn's prompt is the evaluator's messages on it
with its defaults (history current: the game's system prompt and this turn's observation).

A demonstration is a turn whose shot potted cleanly (the winning 8 included); the visit's last shot, where it did
not, is left out.

With the tool (`sft_runout_tools`, `poolbench eval --game runout --tools`), a turn is written as a tool player
writes it (`tool_turn`): ghost_ball called for the shot's ball, then the answer with the report's potting-point
aim for the shot's pocket, an open shot of the report, and the shot's speed and spin. The position Oracle's
choice is tried first, then its other options in its ranking; the first that pots cleanly from its text is
played (`tool_visit`), and the visit ends where none does. With `lines` the reports show the cue ball's
headings after contact (llm.tools.LINES_NOTE), what a player knows of position without simulating.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace

from poolbench_data.boards.splits import EVAL_SPLITS
from poolbench_data.core.records import InvalidScenario, Scenario, Shot
from poolbench_data.games.records import GameState, outcome_balls
from poolbench_data.games.step import rules_of
from poolbench_data.llm.game_player import GameSettings, seats_of
from poolbench_data.llm import observation as obs
from poolbench_data.llm.observation import GAME_PROMPT_VERSION, default_action, observation
from poolbench_data.protocol.prompts import format_action

GAME = "runout"
ACTION = default_action(GAME)  # the evaluator's answer format for a run-out (the JSON action)
DEMONSTRATOR = "position-oracle"


@dataclass(frozen=True)
class WrittenTurn:
    """One turn of a written visit: the table before it, the answer, how the player decided, and the table the
    answer's shot left (`after.last`: its outcome)."""

    state: GameState
    text: str
    how: str
    after: GameState
    call: str | None = None  # the ball whose ghost_ball report the answer read (a tool turn), else None

    @property
    def shot(self) -> Shot:
        return self.after.last.shot

    @property
    def clean(self) -> bool:
        return self.after.last.clean

    @property
    def balls(self) -> int:
        """Balls this turn potted on a clean shot (own balls, and the 8 on a win): Episode.balls of the turn."""
        return outcome_balls(self.after.last, GAME, self.after.group)


def start_of(scenario_row: dict) -> GameState | None:
    """The run-out from a `scenarios` row's board (what games.step.start_game draws from its seed and index);
    None for a board the game cannot start from."""
    try:
        return rules_of(GAME).from_scenario(Scenario.from_row(scenario_row))
    except InvalidScenario:
        return None


def evaluator_messages(state: GameState, tools: bool = False, lines: bool = False) -> list[dict]:
    """The messages `poolbench eval --game runout` sends on this turn: the conversation a seat starts with
    (llm.game_player.seats_of: the game's system prompt, with --tools the tool's paragraph) and this turn's
    observation."""
    settings = GameSettings(model="", backend="", game=GAME, action=ACTION, tools=tools, tool_lines=lines)
    return [*seats_of([state], settings)[0].conv, {"role": "user", "content": observation(state)}]


def tool_turn(state: GameState, shot: Shot, lines: bool = False) -> WrittenTurn | None:
    """`shot` as a tool player writes it: ghost_ball(shot's ball) called, then the answer with the report's
    potting-point aim for the shot's pocket and the shot's speed and spin, played from the text; None where the
    report shows no open shot into that pocket."""
    from poolbench_data.llm.tools import tool_answer

    report = tool_answer(rules_of(GAME).scenario(state), shot.target_ball, None, lines)
    shown = next((x for x in report.get("shots", ()) if x["pocket"] == shot.target_pocket and x["open"]), None)
    if shown is None:
        return None
    text = answer(state, replace(shot, phi=shown["potting_point_aim_angle_deg"]))
    return WrittenTurn(state, text, "tool", play_answer(state, text), shot.target_ball)


def tool_visit(state: GameState, lines: bool = False) -> tuple[WrittenTurn, ...]:
    """The position Oracle's visit as a tool player writes it (module docstring): each turn the first of the
    Oracle's choice and its ranked options that pots cleanly as `tool_turn` writes it."""
    from poolbench_data.games.players import make_player
    from poolbench_data.games.players_position import ranked_shots

    player, turns = make_player(GAME, DEMONSTRATOR), []

    def tried(state):  # the Oracle's choice, then its ranking, ranked only where the choice does not pot
        yield player.decide(state).action
        yield from ranked_shots(state)

    while not state.done:
        turn = next((t for shot in tried(state) if (t := tool_turn(state, shot, lines)) is not None and t.clean),
                    None)
        if turn is None:
            break
        turns.append(turn)
        state = turn.after
    return tuple(turns)


def tool_prompt(turn: WrittenTurn, lines: bool = False) -> list[dict]:
    """A tool turn's conversation up to its answer: the evaluator's messages, the call, the tool's report (with
    the calls left after it, as the evaluator answers a shot's first call)."""
    from poolbench_data.demos.tools import call_text
    from poolbench_data.llm.tools import MAX_CALLS, call_of, turn_result

    result = turn_result(rules_of(GAME).scenario(turn.state), call_of(turn.call), MAX_CALLS - 1, lines)
    return [*evaluator_messages(turn.state, True, lines), {"role": "assistant", "content": call_text(turn.call)},
            {"role": "tool", "content": json.dumps(result)}]


def answer(state: GameState, shot: Shot) -> str:
    """A run-out shot as a model would answer it: the protocol's JSON action with the spin fields."""
    return format_action(shot, rules_of(GAME).scenario(state), spin=True)


def play_answer(state: GameState, text: str) -> GameState:
    """The table after an answer, as the evaluator plays it (llm.observation.play_answer)."""
    return obs.play_answer(state, text, ACTION)[1]


def written_visit(state: GameState, player) -> tuple[WrittenTurn, ...]:
    """`player`'s visit from `state`, each decision written as its answer and played from the text."""
    turns = []
    while not state.done:
        move = player.decide(state)
        text = answer(state, move.action)
        after = play_answer(state, text)
        turns.append(WrittenTurn(state, text, move.how, after))
        state = after
    return tuple(turns)


def table_row(state: GameState) -> list[dict]:
    """The balls a turn is played from (a row's `balls`: with the board, enough to step an answer again)."""
    return [{"id": b.id, "x": b.x, "y": b.y} for b in state.balls]


def turn_columns(scenario_row: dict, split: str, state: GameState) -> dict:
    """The columns every run-out training row carries: the board, the episode's seed, the turn, the table."""
    return {"scenario_id": scenario_row["id"], "category": scenario_row["category"], "split": split,
            "seed": state.seed, "turn": state.attempts + 1, "balls": table_row(state),
            "prompt_version": GAME_PROMPT_VERSION}


def check_train_split(split: str) -> None:
    if split in EVAL_SPLITS:
        raise ValueError(f"split {split!r} holds the evaluation boards; run-out training rows come from train "
                         "splits only")


def _board_demos(task: tuple[dict, str, bool, bool]) -> list[dict]:
    from poolbench_data.games.players import make_player
    from poolbench_data.llm.tools import tool_version

    scenario_row, split, tools, lines = task
    start = start_of(scenario_row)
    if start is None:
        return []
    def columns(t: WrittenTurn) -> dict:  # a demonstration's columns after its messages
        return {**turn_columns(scenario_row, split, t.state), "player": DEMONSTRATOR, "how": t.how,
                "action": t.shot.to_row(), "potted": list(t.after.last.potted), "won": t.after.success}

    if tools:
        return [{"messages": [{**m, "context": False} for m in [*tool_prompt(t, lines), {
                    "role": "assistant", "content": t.text}]], **columns(t), "tool_version": tool_version(lines)}
                for t in tool_visit(start, lines)]
    return [{"prompt": evaluator_messages(t.state), "completion": [{"role": "assistant", "content": t.text}],
             **columns(t)} for t in written_visit(start, make_player(GAME, DEMONSTRATOR)) if t.clean]


def sft_runout_rows(scenarios: Sequence[dict], split: str, *, tools: bool = False, lines: bool = False,
                    workers: int = 1, progress: bool = False) -> list[dict]:
    """The position Oracle's demonstrations from each board's visit, in board then turn order (with `tools`, the
    tool visit's conversations, `sft_runout_tools`); the same rows at any number of workers."""
    from tqdm.auto import tqdm

    from poolbench_data.players.pool import imap

    check_train_split(split)
    found = imap(_board_demos, [(row, split, tools, lines) for row in scenarios], workers)
    return [r for rows in tqdm(found, total=len(scenarios), desc="run-outs", unit="board", disable=not progress)
            for r in rows]
