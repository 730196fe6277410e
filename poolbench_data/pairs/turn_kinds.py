"""Which tool-track pairs to keep by the kinds of their two turns (a `ghost_ball` call, or the action).

`balance_kinds`: of the pairs whose sides differ in kind, at most `checks.pairs.MAX_TURN_KIND_SHARE` may choose the
same kind; DPO on a set that mostly chooses the call learns to call whatever the tool says
(docs/results.md#the-preference-pairs).

`same_kind`: on-policy pairs whose sides are the same kind of turn (two calls, or two answers), the others kept.
Where a board's samples part at a call against an answer, the call's side is scored by the one continuation that
sample happened to write, not by what calling is worth: DPO on such pairs answers after a closed report (a kick)
more often than its SFT, often where an own ball it has not called shows an open shot. The recovery and
answer-now sources, which choose each kind as often, still teach when to call.
"""

from __future__ import annotations

from poolbench_data.checks.pairs import MAX_TURN_KIND_SHARE, chosen_kind, turn_kinds
from poolbench_data.pairs.tools import SOURCE


def balance_kinds(pairs: list[dict], max_share: float = MAX_TURN_KIND_SHARE) -> list[dict]:
    """`pairs` less the fewest of the larger kind (call or answer chosen over the other), smallest margins
    first, for that kind to be at most `max_share` of the pairs whose sides differ in kind; order kept."""
    counts = turn_kinds(pairs)
    kind = max(counts, key=counts.get)
    keep = int(max_share * counts[min(counts, key=counts.get)] / (1 - max_share)) if max_share < 1 else counts[kind]
    if counts[kind] <= keep:
        return pairs
    of_kind = [k for k, p in enumerate(pairs) if chosen_kind(p) == kind]
    drop = set(sorted(of_kind, key=lambda k: (pairs[k]["margin"], -k))[:counts[kind] - keep])
    return [p for k, p in enumerate(pairs) if k not in drop]


def same_kind(pairs: list[dict], source: str = SOURCE) -> list[dict]:
    """`pairs` less those of `source` whose chosen and rejected turns differ in kind; order kept."""
    return [p for p in pairs if p["source"] != source or chosen_kind(p) is None]
