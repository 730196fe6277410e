"""The paper's section 6.3 experiments on the model side: the board as an
image (vision), and iterative refinement with the simulator's feedback.

Vision: the rendered board PNG goes with the user prompt as an OpenAI-style
`image_url` content part (a data URL); the text is unchanged, so a vision
run differs from a text run by the picture only.

Refinement: after round 1 each conversation continues: the model's answer,
then the simulator's feedback (the CueTip-style event string and the foul
reasons, or why the answer could not be played), then "shoot again" on the
same board. Each round's shots are scored like any others, under the player
name `<name>@r<k>` (k >= 2), so every report shows one row per round; rounds
that scored better than the one before become preference pairs.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence

from poolbench_data.core.records import Scenario
from poolbench_data.llm.player import EvalSettings, REQUEST_FAILED, answer_record
from poolbench_data.players.play import ShotRecord

AGAIN = "Shoot again on the same board (the balls are back where they were): answer with one JSON action."


def with_images(convs: list[list[dict]], images: Sequence[bytes]) -> list[list[dict]]:
    """Each conversation's last user message as [text, image] content parts."""
    out = []
    for conv, png in zip(convs, images):
        url = "data:image/png;base64," + base64.b64encode(png).decode()
        last = conv[-1]
        parts = [{"type": "text", "text": last["content"]}, {"type": "image_url", "image_url": {"url": url}}]
        out.append([*conv[:-1], {**last, "content": parts}])
    return out


def round_name(player: str, k: int) -> str:
    return player if k == 1 else f"{player}@r{k}"


def feedback(rec: ShotRecord) -> str:
    """What the model is told about its last shot."""
    if rec.shot is None:
        return f"Your answer could not be played ({rec.parse_status}: {rec.parse_message}). {AGAIN}"
    m, r = rec.metrics, rec.result
    outcome = ("You potted an own ball legally." if m.clean_pot else
               "Legal contact, but no own ball was potted." if m.legal_contact and not m.foul else
               f"Foul: {', '.join(m.foul_reasons)}.")
    events = r.event_text() if r is not None else "(not simulated)"
    return f"The simulator played your shot. Events: {events}. {outcome} {AGAIN}"


def refine(scenarios: Sequence[Scenario], convs: list[list[dict]], first: list[ShotRecord], backend,
           settings: EvalSettings, *, player: str, rounds: int) -> tuple[list[ShotRecord], list]:
    """Rounds 2..`rounds`: every (board, sample) thread continues with n=1.
    Returns the later rounds' records and their GenerationResults."""
    threads = [(i, rec.sample, list(convs[i]), rec) for i, rec in enumerate_records(scenarios, first)]
    records, gens = [], []
    for k in range(2, rounds + 1):
        live = [t for t in threads if t[3].parse_status != REQUEST_FAILED]
        asks = [conv + [{"role": "assistant", "content": rec.raw_response or ""},
                        {"role": "user", "content": feedback(rec)}] for _, _, conv, rec in live]
        gen = backend.generate(asks, n=1, temperature=settings.temperature, max_tokens=settings.max_tokens,
                               seed=settings.seed + k)
        gens.append(gen)
        failed = gen.failed_slots()
        nxt = []
        for j, ((i, sample, _, _), conv) in enumerate(zip(live, asks)):
            rec = answer_record(scenarios[i], gen.texts[j][0], failed.get((j, 0)), player=round_name(player, k),
                                sample=sample)
            records.append(rec)
            nxt.append((i, sample, conv, rec))
        threads = nxt
    return records, gens


def enumerate_records(scenarios: Sequence[Scenario], records: Sequence[ShotRecord]):
    """(scenario index, record) for round-1 records, which come board by board."""
    index = {s.id: i for i, s in enumerate(scenarios)}
    return [(index[r.scenario_id], r) for r in records]


def refinement_pairs(scenarios: Sequence[Scenario], convs: list[list[dict]], records: Sequence[ShotRecord],
                     player: str, rounds: int) -> list[dict]:
    """Later-better rounds as TRL preference pairs on the board's own prompt:
    chosen = the later answer, rejected = the one before it."""
    from poolbench_data.core.scoring import physics_score

    index = {s.id: i for i, s in enumerate(scenarios)}
    by = {(r.player, r.scenario_id, r.sample): r for r in records}
    pairs = []
    for (name, sid, sample), rec in by.items():
        for k in range(2, rounds + 1):
            if name != round_name(player, k):
                continue
            prev = by.get((round_name(player, k - 1), sid, sample))
            if prev is None or REQUEST_FAILED in (prev.parse_status, rec.parse_status):
                continue
            better, worse = physics_score(rec.metrics), physics_score(prev.metrics)
            if better > worse:
                pairs.append({"prompt": convs[index[sid]], "chosen": [{"role": "assistant", "content": rec.raw_response}],
                              "rejected": [{"role": "assistant", "content": prev.raw_response or ""}],
                              "scenario_id": sid, "sample": sample, "rounds": [k - 1, k],
                              "chosen_score": better, "rejected_score": worse})
    return pairs


def with_usage(first, later):
    """Round 1's GenerationResult with the later rounds' token usage added.
    Its failures stay round 1's (their indices are round 1's conversations);
    a later round's failed requests are in its records (REQUEST_FAILED)."""
    from poolbench_data.llm.backend import GenerationResult

    usage = dict(first.usage)
    for g in later:
        for key, value in g.usage.items():
            usage[key] = usage.get(key, 0) + value
    return GenerationResult(first.texts, first.failures, usage)
