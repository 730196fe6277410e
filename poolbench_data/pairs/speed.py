"""`tool-speed` pairs: how hard to hit, labelled by outcomes that survive execution noise.

The tool-SFT model writes one speed nearly everywhere: the demonstrations write the first of their speeds that
plays best. The simulator says speed matters: the same open shot pots cleanly at some speeds and scratches at
others, mostly because a slower cue ball runs less far after contact, partly by chance
(docs/results.md#what-the-tool-lets-a-player-reach). A `tool-speed` pair holds everything else fixed: the model's
own final answer against the same JSON with another `cue_speed` of SPEEDS, the one with the higher
`noise.robust_score` chosen (by at least `noise.MIN_MARGIN`), whichever side that is. Pairs for the model's speed
as well as against it, so DPO moves the speed only as far as the physics does on average; one pair per distinct
answer, its other speed drawn (seeded by the board and sample) among those that differ robustly, so the set stays
the size of the others and unbiased.

Only answers written after a report with an open shot: a pair whose prompt ends in a closed report (with calls
left or at the cap) trains an answer there, whatever its speed: DPO on speed pairs from all answers keeps the
model's speed and answers after a closed report (a kick) more often than its SFT.

`tool-cap-speed` pairs are the same, for the answers at the call cap after a closed report instead (most are the
kick the report shows): there an answer is due whatever its speed, so the pair trains only the speed. A kick's
way is longer than a straight shot's: where nothing is open, the first kick shown pots cleanly more often at
8 m/s than at the model's 5 (analysis/choice_rules.py; docs/results.md#choice-rules-over-what-the-tool-shows).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import numpy as np

from poolbench_data.core.records import Scenario
from poolbench_data.core.vocab import V0_RANGE
from poolbench_data.players.pool import imap
from poolbench_data.pairs.text import _pair
from poolbench_data.pairs.noise import MIN_MARGIN, robust_score
from poolbench_data.pairs.tools import _described, _played_row, decisions, thread_messages, usable_samples
from poolbench_data.demos.tools import clear

SPEED = "tool-speed"
CAP_SPEED = "tool-cap-speed"
EDIT = "speed_edit"  # the model name of the side that is the model's answer with another speed written in
SPEEDS = (4.0, 5.0, 6.0, 7.0, 8.0, 10.0, 12.0)  # m/s: the bench's range of clean pots, within V0_RANGE


def with_speed(answer: str, speed: float) -> str | None:
    """`answer` (the protocol's JSON action) with its `cue_speed` set to `speed`, every other field as written;
    None for an answer that is not one JSON object with a cue speed."""
    try:
        action = json.loads(answer)
    except ValueError:
        return None
    if not isinstance(action, dict) or "cue_speed" not in action:
        return None
    return json.dumps({**action, "cue_speed": speed})


def speed_pairs(scenarios: Sequence[dict], threads: Sequence[Mapping], traces: Sequence[Mapping],
                speeds: Sequence[float] = SPEEDS, seed: int = 0, at_cap: bool = False, workers: int = 1) -> list[dict]:
    """One `tool-speed` pair per distinct final answer after an open report (module docstring), board by board,
    the other side at one of `speeds`; `seed` with the board's seed and the sample's number draws which. With
    `at_cap`, `tool-cap-speed` pairs: the answers at the call cap after a closed report instead. `workers`
    processes label the boards (9 simulations a speed an answer: most of the pilot's pairs stage on one core);
    the pairs are the same, in the same order, at any number."""
    if not speeds or any(not V0_RANGE[0] <= v <= V0_RANGE[1] for v in speeds):
        raise ValueError(f"speeds must be one or more cue speeds in [{V0_RANGE[0]}, {V0_RANGE[1]}] m/s (got {speeds})")
    boards: dict[str, tuple] = {}  # every player's samples of a board in one task: an answer is paired once a board
    for row, scenario, _, samples in usable_samples(scenarios, threads, traces):
        boards.setdefault(row["id"], (row, scenario, []))[2].extend(samples)
    tasks = [(*board, tuple(speeds), seed, at_cap) for board in boards.values()]
    return [p for found in imap(_board_pairs, tasks, workers) for p in found]


def _board_pairs(task: tuple) -> list[dict]:
    row, scenario, samples, speeds, seed, at_cap = task
    out: list[dict] = []
    seen: set[tuple] = set()
    for thread, trace in samples:
        last = thread["calls"][-1]["result"]
        closed_at_cap = not clear(last) and last.get("calls_left") == 0
        if not (closed_at_cap if at_cap else clear(last)):
            continue
        conv = thread_messages(scenario, thread)
        key = (json.dumps(conv[:-1]), thread["final_response"])
        if key in seen:
            continue
        seen.add(key)
        rng = np.random.default_rng([seed, scenario.seed, thread["sample"]])
        pair = _speed_pair(row, scenario, conv, thread, trace, speeds, rng, CAP_SPEED if at_cap else SPEED)
        if pair is not None:
            out.append(pair)
    return out


def _speed_pair(row: dict, scenario: Scenario, conv: list[dict], thread: Mapping, trace: Mapping,
                speeds: Sequence[float], rng: np.random.Generator, source: str) -> dict | None:
    own = thread["final_response"]
    texts = {v: with_speed(own, v) for v in speeds if v != trace["action"]["V0"]}
    if None in texts.values():  # not one JSON object with a cue speed: nothing to rewrite
        return None
    mine, model = robust_score(scenario, trace), trace.get("model") or thread["player"]
    if mine is None:  # a shot of its grid stopped early: no robust label for this answer
        return None
    options = []
    for text in texts.values():
        played = _played_row(row, scenario, text, model)  # None: stopped early
        score = None if played is None else robust_score(scenario, played)  # simulates 9 times: the grid around it
        if score is not None and abs(score - mine) >= MIN_MARGIN:
            options.append((text, played, score))
    if not options:
        return None
    text, played, score = options[int(rng.integers(len(options)))]
    ours = (own, trace, mine, decisions(thread, trace)[-1], model)
    other = (text, played, score, ("answer", *(played["action"][k] for k in ("target_ball", "phi", "V0"))), EDIT)
    chosen, rejected = (other, ours) if score > mine else (ours, other)
    pair = _pair(row, chosen[0], rejected[0], chosen[1], rejected[1], source, chosen[4], rejected[4],
                 prompt=conv[:-1])
    return {**pair, "turn": len(thread["turns"]), "chosen_decision": _described(chosen[3]),
            "rejected_decision": _described(rejected[3]), "chosen_robust": chosen[2], "rejected_robust": rejected[2]}
