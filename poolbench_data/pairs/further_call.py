"""`tool-call-again` pairs: after a report with no open shot and calls left, the model's own further call against
answering there.

DPO from the listed tool-SFT model on the other tool sources kicks more often than its SFT, whichever of them it
is given (every pair, robust same-kind pairs, speed pairs from all answers, the at-cap, recovery and answer-now
pairs alone). What those sets share is a chosen answer written after a closed report,
most of them at the cap (`tool-at-cap`: an answer over a fourth call), and nothing that prefers the call where
calls are left, which the listed procedure makes and which the recovery source teaches only on the few threads
that answered wrongly there. This source is that condition's side, from the model's own threads: where it called
again after a closed report with calls left and its shot then potted legally, that call (chosen) against the
answer it could have written instead, `demos.tools.cap_answer` of the reports shown so far (rejected, played; kept
only where it scores lower). Chosen calls, rejected answers: `turn_kinds.balance_kinds` weighs them against the
at-cap pairs, so the condition (`calls_left`), not the turn kind, decides.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from poolbench_data.pairs.text import _pair, fine_score, physics_score
from poolbench_data.pairs.tools import (_assistant_index, _called, _described, _played_row, decisions,
                                             thread_messages, usable_samples)
from poolbench_data.demos.tools import cap_answer, clear

CALL_AGAIN = "tool-call-again"
ANSWER_NOW = "answer_now"  # the rejected side's model name: the answer written in place of the model's call


def call_again_pairs(scenarios: Sequence[dict], threads: Sequence[Mapping], traces: Sequence[Mapping]) -> list[dict]:
    """One pair per distinct conversation that called again after a closed report with calls left, in a thread
    that then potted legally (module docstring), board by board."""
    out: list[dict] = []
    seen: set[str] = set()  # the prompt holds the board: one set serves every board
    for row, scenario, _, samples in usable_samples(scenarios, threads, traces):
        for thread, trace in samples:
            if physics_score(trace) < 3:  # the call's worth is the pot it led to
                continue
            conv, calls = thread_messages(scenario, thread), thread["calls"]
            for k in range(1, len(thread["turns"])):  # turn k: a call made after the answer to call k-1
                result = calls[k - 1]["result"]
                at = _assistant_index(conv, k)
                key = json.dumps(conv[:at])
                if clear(result) or result.get("calls_left", 0) <= 0 or key in seen:
                    continue
                seen.add(key)
                answer = cap_answer(scenario, [_called(c) for c in calls[:k]])  # simulates
                if answer is None:
                    continue
                rejected = _played_row(row, scenario, answer[0], ANSWER_NOW)
                if rejected is None or fine_score(rejected) >= fine_score(trace):  # None: it stopped early
                    continue
                model = trace.get("model") or thread["player"]
                pair = _pair(row, conv[at]["content"], answer[0], trace, rejected, CALL_AGAIN, model, ANSWER_NOW,
                             prompt=conv[:at])
                shot = answer[1]
                out.append({**pair, "turn": k, "chosen_decision": _described(decisions(thread, trace)[k]),
                            "rejected_decision": _described(("answer", shot.target_ball, shot.phi, shot.V0))})
    return out
