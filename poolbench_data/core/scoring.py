"""The paper's four metrics (section 3.3), computed from a ShotResult alone.

Pure: no model, no simulator. A shot that was never fired (unparseable or
invalid action) is scored with `score_not_fired`: a foul, as in the paper.
"""

from __future__ import annotations

from poolbench_data.core.records import CUE, EIGHT, NOT_FIRED, PLAYER_GROUP, Metrics, ShotResult, group_of

FOUL_KINDS = ("scratch", "eight-potted", "wrong-first-contact", "no-contact", NOT_FIRED)
# Every metric column a report or a dataset row carries, with its table label.
METRICS = (("legal_contact", "Contact"), ("own_potted", "Potted"), ("foul", "Foul"),
           ("opp_or_8_potted", "Opp/8 potted"), ("clean_pot", "Clean pot"))


def score(result: ShotResult, group: str = PLAYER_GROUP) -> Metrics:
    if result.status == "error":  # no trace: the shot was never fired
        return score_not_fired("invalid-shot" if result.message.startswith("invalid shot") else "sim-error")
    pocketed = result.pocketed_ids()
    first = result.first_contact
    legal_contact = first is not None and group_of(first) == group
    reasons = []
    if CUE in pocketed:
        reasons.append("scratch")
    # Every scenario has at least one own ball on the table, so the 8 is
    # always potted prematurely.
    if EIGHT in pocketed:
        reasons.append("eight-potted")
    if first is None:
        reasons.append("no-contact")
    elif not legal_contact:
        reasons.append("wrong-first-contact")
    return Metrics(
        legal_contact=legal_contact,
        own_potted=any(group_of(b) == group for b in pocketed),
        foul=bool(reasons),
        opp_or_8_potted=any(group_of(b) not in (group, "cue") for b in pocketed),
        foul_reasons=tuple(reasons),
    )


def score_not_fired(reason: str) -> Metrics:
    """An action that could not be executed (the paper: unparseable = foul)."""
    return Metrics(False, False, True, False, (NOT_FIRED, reason))


def physics_score(m: Metrics) -> float:
    """One number that orders outcomes, for preference pairs and rewards:
    3 own ball potted legally > 2 legal contact without pot or foul
    > 1 fired but a foul (or no contact) > 0 not fired (unparseable or invalid)."""
    if not m.fired:
        return 0.0
    if m.clean_pot:
        return 3.0
    if m.foul:
        return 1.0
    return 2.0 if m.legal_contact else 1.0
