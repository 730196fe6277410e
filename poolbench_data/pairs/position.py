"""Position pairs (the `pairs_position` config): two answers that both pot an own ball cleanly, told apart by
what the table each leaves is worth.

At each turn of the position Oracle's written visit from a train board (demos.runout), its options there
(games.players_position.ranked_shots: the shots that pot cleanly, best-ranked first) are written as answers and
played from the text as the evaluator plays them; those that still pot cleanly (the protocol's two decimals of
aim and speed can turn a pot into a miss) and differ in text are the candidates. At most `options` of them are
compared, spread evenly over the ranking from its best to its worst, so each turn sets tables the look-ahead
liked against tables it did not. From the table each leaves, the continuation player plays the visit on
(written, as every turn here); its balls are the answer's worth. Chosen: the answer with the longest
continuation, rejected: the shortest (between equal continuations, the answer that potted more balls itself
counts as longer, then the earlier in the ranking wins the tie); a pair only where the continuations differ, the
rejected answer pots no more balls itself than the chosen one, and the two leave the cue ball in different
places. One pair a turn at most, so no table dominates the set.

With the tool (`pairs_position_tools`), the visit is the tool visit (demos.runout.tool_visit) and a turn's
candidates are the options at the ball its answer called, written as the tool player writes them
(demos.runout.tool_turn): the prompt is the conversation up to the answer (the call and its report), and the two
answers differ in pocket, speed or spin only, the choice the report's aims and (with `lines`) the cue ball's
headings inform.

The Oracle's own answer at a turn is followed by the rest of its visit, so with the position Oracle continuing
those continuations are read from the visit instead of played again. Every simulation is deterministic and each
board is one task, so the pairs are the same bytes at any number of workers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from poolbench_data.demos.runout import (
    DEMONSTRATOR,
    GAME,
    WrittenTurn,
    answer,
    check_train_split,
    evaluator_messages,
    play_answer,
    start_of,
    tool_prompt,
    tool_turn,
    tool_visit,
    turn_columns,
    written_visit,
)
from poolbench_data.games.players import make_player
from poolbench_data.games.players_position import ranked_shots
from poolbench_data.games.records import GameState

CONTINUATIONS = ("position-oracle", "oracle")  # the players that play a visit on from an answer's table
DEFAULT_CONTINUATION = "position-oracle"
DEFAULT_OPTIONS = 4
MIN_OPTIONS = 2  # a pair needs two


@dataclass(frozen=True)
class Candidate:
    """An option written as an answer: the text, the turn it played (its table after), and the balls the
    continuation potted from there."""

    turn: WrittenTurn
    continuation: int

    @property
    def cue(self) -> tuple[float, float]:
        cue = self.turn.after.balls[0]  # a clean pot leaves the cue ball on the table, first in canonical order
        return cue.x, cue.y


def spread(items: Sequence, k: int) -> list:
    """At most k of `items`, evenly spaced from the first to the last, in their order."""
    n = len(items)
    if n <= k:
        return list(items)
    return [items[(i * (n - 1) + (k - 1) // 2) // (k - 1)] for i in range(k)]


def candidates(state: GameState, options: int) -> list[WrittenTurn]:
    """The Oracle's options at `state` that pot cleanly when written and played from the text, each text once,
    in the Oracle's ranking; at most `options`, spread over it."""
    written, seen = [], set()
    for shot in ranked_shots(state):
        text = answer(state, shot)
        if text in seen:
            continue
        seen.add(text)
        turn = WrittenTurn(state, text, "position-option", play_answer(state, text))
        if turn.clean:
            written.append(turn)
    return spread(written, options)


def tool_candidates(turn: WrittenTurn, options: int, lines: bool = False) -> list[WrittenTurn]:
    """The position Oracle's options at the ball `turn` called, each written as the tool player writes it, that
    pot cleanly, each text once, in the Oracle's ranking; at most `options`, spread over it."""
    written, seen = [], set()
    for shot in ranked_shots(turn.state):
        if shot.target_ball != turn.call:
            continue
        t = tool_turn(turn.state, shot, lines)
        if t is None or t.text in seen:
            continue
        seen.add(t.text)
        if t.clean:
            written.append(t)
    return spread(written, options)


def pair_of(cands: Sequence[Candidate]) -> tuple[Candidate, Candidate] | None:
    """(chosen, rejected) among a turn's candidates, or None (module docstring)."""
    if len(cands) < MIN_OPTIONS:
        return None
    best = max(cands, key=lambda c: (c.continuation, c.turn.balls))  # the first of the best, in ranking order
    worst = min(cands, key=lambda c: (c.continuation, c.turn.balls))
    if best.continuation > worst.continuation and best.turn.balls >= worst.turn.balls and best.cue != worst.cue:
        return best, worst
    return None


def _side(c: Candidate) -> dict:
    return {"continuation": c.continuation, "potted": list(c.turn.after.last.potted),
            "action": c.turn.shot.to_row(), "cue": {"x": c.cue[0], "y": c.cue[1]}}


def pair_row(scenario_row: dict, split: str, state: GameState, chosen: Candidate, rejected: Candidate,
             continuation: str, compared: int, prompt: list[dict] | None = None) -> dict:
    sides = {f"{name}_{k}": v for name, c in (("chosen", chosen), ("rejected", rejected)) for k, v in _side(c).items()}
    return {"prompt": evaluator_messages(state) if prompt is None else prompt,
            "chosen": [{"role": "assistant", "content": chosen.turn.text}],
            "rejected": [{"role": "assistant", "content": rejected.turn.text}],
            **turn_columns(scenario_row, split, state), "continuation_player": continuation,
            "options": compared, **sides}


def _board_pairs(task: tuple[dict, str, str, int, bool, bool]) -> list[dict]:
    from poolbench_data.llm.tools import tool_version

    scenario_row, split, continuation, options, tools, lines = task
    start = start_of(scenario_row)
    if start is None:
        return []
    visit = tool_visit(start, lines) if tools else written_visit(start, make_player(GAME, DEMONSTRATOR))
    known: dict[tuple, int] = {}  # a table's balls -> the continuation's balls from it
    if continuation == DEMONSTRATOR and not tools:  # the tool visit is not the Oracle's own
        for i, t in enumerate(visit):
            known[t.after.balls] = sum(u.balls for u in visit[i + 1:])

    def balls_from(after: GameState) -> int:
        if after.done:
            return 0
        if after.balls not in known:
            known[after.balls] = sum(u.balls for u in written_visit(after, make_player(GAME, continuation)))
        return known[after.balls]

    rows = []
    for t in visit:
        written = tool_candidates(t, options, lines) if tools else candidates(t.state, options)
        cands = [Candidate(c, balls_from(c.after)) for c in written]
        if found := pair_of(cands):
            if tools:
                rows.append({**pair_row(scenario_row, split, t.state, *found, continuation, len(cands),
                                        tool_prompt(t, lines)), "tool_version": tool_version(lines)})
            else:
                rows.append(pair_row(scenario_row, split, t.state, *found, continuation, len(cands)))
    return rows


def check_continuation(flag: str, name: str) -> str:
    if name not in CONTINUATIONS:
        raise ValueError(f"{flag} {name!r}: choose {' or '.join(CONTINUATIONS)}")
    return name


def position_pairs(scenarios: Sequence[dict], split: str, *, continuation: str = DEFAULT_CONTINUATION,
                   options: int = DEFAULT_OPTIONS, tools: bool = False, lines: bool = False, workers: int = 1,
                   progress: bool = False) -> list[dict]:
    """The pairs of each board's visit, in board then turn order (with `tools`, `pairs_position_tools`)."""
    from tqdm.auto import tqdm

    from poolbench_data.players.pool import imap

    check_train_split(split)
    check_continuation("continuation", continuation)
    if options < MIN_OPTIONS:
        raise ValueError(f"options={options}: a pair compares at least {MIN_OPTIONS} answers")
    found = imap(_board_pairs, [(row, split, continuation, options, tools, lines) for row in scenarios], workers)
    return [r for rows in tqdm(found, total=len(scenarios), desc="position pairs", unit="board",
                               disable=not progress) for r in rows]
