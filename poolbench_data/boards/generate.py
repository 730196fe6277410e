"""Seeded scenario generation in the paper's seven categories.

Scenario k of a base seed depends only on (base seed, k): its category comes
from a house-monotone apportionment sequence and its layout from a local RNG
seeded with a recorded per-scenario seed. Asking for more scenarios never
changes the earlier ones, and the same seed gives the same boards anywhere.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice

import numpy as np

from poolbench_data.core.geometry import nearest
from poolbench_data.boards.categories import CHECKS, CROWD_RADIUS, SPARSE_MIN_GAP, SPIN_MAX_GAP
from poolbench_data.core.records import (CATEGORIES, CUE, EIGHT, MAX_SEED, SOLIDS, STRIPES, InvalidScenario,
                                         Scenario)
from poolbench_data.core.table import geometry
from poolbench_data.core.validation import placement_problem
from poolbench_data.boards.splits import EVAL_SEED, scenario_id

DEFAULT_SEED = EVAL_SEED  # the evaluation set; training sets use other base seeds
DEFAULT_N = 50
PAPER_COUNTS = {"open": 8, "partial-block": 8, "indirect": 8, "crowded": 7,
                "sparse": 7, "foul-trap": 6, "spin-shot": 6}  # section 3.2, N = 50
MAX_TRIES = 5000
GAP = 0.002  # keep balls 2 mm apart: touching balls collide at t = 0


def category_sequence(n: int) -> list[str]:
    """The first n categories of `iter_categories`."""
    return list(islice(iter_categories(), n))


def iter_categories(start: int = 0) -> Iterator[str]:
    """Sainte-Lague apportionment, one seat at a time: every prefix is a
    proportional split of the paper's 8/8/8/7/7/6/6, and exact at N = 50.
    Streamed from seat `start` on, so a huge N or a late start costs nothing
    up front."""
    counts = _counts_after(start)
    while True:
        c = max(CATEGORIES, key=lambda c: _priority(c, counts[c]))
        counts[c] += 1
        yield c


def _priority(category: str, seats: int) -> tuple[float, int]:
    """Who gets the next seat: the highest quotient, ties to the earlier category."""
    return PAPER_COUNTS[category] / (2 * seats + 1), -CATEGORIES.index(category)


def _counts_after(k: int) -> dict[str, int]:
    """Seats per category after k seats, without walking them. Each
    category's priorities fall with its seats, so the first k seats are the
    k highest priorities over all (category, seat): start from the
    proportional floor and swap seats until every given one outranks every
    one not given."""
    total = sum(PAPER_COUNTS.values())
    counts = {c: k * PAPER_COUNTS[c] // total for c in CATEGORIES}
    for _ in range(k - sum(counts.values())):  # fewer than 7 left by the floors
        counts[max(CATEGORIES, key=lambda c: _priority(c, counts[c]))] += 1
    while True:
        worst = min((c for c in CATEGORIES if counts[c]), key=lambda c: _priority(c, counts[c] - 1), default=None)
        best = max(CATEGORIES, key=lambda c: _priority(c, counts[c]))
        if worst is None or _priority(worst, counts[worst] - 1) >= _priority(best, counts[best]):
            return counts
        counts[worst] -= 1
        counts[best] += 1


def scenario_seed(base_seed: int, k: int) -> int:
    """A 63-bit seed for scenario k, recorded with the scenario."""
    return int(np.random.SeedSequence([base_seed, k]).generate_state(1, np.uint64)[0] >> np.uint64(1))


def generate(n: int = DEFAULT_N, base_seed: int = DEFAULT_SEED, start: int = 0) -> list[Scenario]:
    return list(iter_scenarios(n, base_seed, start))


def iter_scenarios(n: int = DEFAULT_N, base_seed: int = DEFAULT_SEED, start: int = 0) -> Iterator[Scenario]:
    """Scenarios start .. start + n - 1, generated lazily; the arguments are
    checked at the call, before the first board."""
    return (generate_scenario(*spec) for spec in iter_specs(n, base_seed, start))


def iter_specs(n: int = DEFAULT_N, base_seed: int = DEFAULT_SEED, start: int = 0) -> Iterator[tuple[str, int, str]]:
    """(category, seed, id) of scenarios start .. start + n - 1: what
    generate_scenario needs, so a worker process can draw the board itself
    (drawing costs ~80 ms a board, a fifth of playing it)."""
    if n < 0 or start < 0:
        raise ValueError(f"n={n} and start={start} must be >= 0")
    if not 0 <= base_seed <= MAX_SEED:
        raise ValueError(f"base_seed={base_seed} must be in [0, 2**63 - 1]")
    return ((c, scenario_seed(base_seed, k), scenario_id(base_seed, k))
            for k, c in zip(range(start, start + n), iter_categories(start)))


@dataclass(frozen=True)
class ScenariosConfig:
    """Print scenarios as JSON lines (`poolbench scenarios`)."""

    n: int = field(default=DEFAULT_N, metadata={"help": "scenarios (default: the paper's 50)"})
    seed: int = field(default=DEFAULT_SEED, metadata={"help": "scenario base seed (default: the evaluation set)"})


def scenarios(config: ScenariosConfig) -> Iterator[Scenario]:
    """The config's boards, checked first (a mistake is one UserError before any board), then made one at a
    time as they are read: what `poolbench scenarios` streams."""
    from poolbench_data.core.errors import check_at_least, check_seed

    check_at_least("--n", config.n, 1)
    check_seed("--seed", config.seed)
    return iter_scenarios(config.n, config.seed)


def generate_scenario(category: str, seed: int, id: str) -> Scenario:
    """Rejection sampling: draw layouts until the category's check passes."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r}; use one of {', '.join(CATEGORIES)}")
    rng = np.random.default_rng(seed)
    sampler, check = _SAMPLERS[category], CHECKS[category]
    for _ in range(MAX_TRIES):
        positions = sampler(rng)
        if positions is None:
            continue
        try:
            s = Scenario.create(id, category, seed, positions)
        except InvalidScenario:
            continue
        if check(s):
            return s
    raise RuntimeError(f"could not sample a {category} scenario from seed {seed} in {MAX_TRIES} tries")


# --- samplers: each returns {ball id: (x, y)} or None ---------------------------

def _pick(rng, ids, lo, hi) -> list[str]:
    k = int(rng.integers(lo, hi + 1))
    return sorted(rng.choice(ids, size=k, replace=False).tolist(), key=int)


def _fits(x, y, placed, min_dist) -> bool:
    return placement_problem(x, y) is None and all(math.hypot(x - a, y - b) >= min_dist for a, b in placed.values())


def _place(rng, placed, ids, min_dist=None, centre=None, radius=None, tries=200) -> bool:
    """Place `ids` uniformly (on the table, or in a disc), not overlapping."""
    g = geometry()
    R = g.ball_radius
    min_dist = min_dist or 2 * R + GAP
    for bid in ids:
        for _ in range(tries):
            if centre is None:
                x, y = rng.uniform(R, g.width - R), rng.uniform(R, g.length - R)
            else:
                r, a = radius * math.sqrt(rng.uniform()), rng.uniform(0, 2 * math.pi)
                x, y = centre[0] + r * math.cos(a), centre[1] + r * math.sin(a)
            if _fits(x, y, placed, min_dist):
                placed[bid] = (float(x), float(y))
                break
        else:
            return False
    return True


def _uniform(rng, own_range, opp_range):
    placed: dict = {}
    ids = [CUE] + _pick(rng, SOLIDS, *own_range) + _pick(rng, STRIPES, *opp_range) + [EIGHT]
    return placed if _place(rng, placed, ids) else None


def _open(rng):
    return _uniform(rng, (3, 7), (3, 7))


def _partial_block(rng):
    return _uniform(rng, (3, 6), (4, 7))


def _indirect(rng):
    """Each own ball hides behind a blocker on its line from the cue ball."""
    g = geometry()
    D = g.ball_diameter
    placed: dict = {}
    if not _place(rng, placed, [CUE]):
        return None
    own = _pick(rng, SOLIDS, 1, 3)
    blockers = [EIGHT] + _pick(rng, STRIPES, len(own), min(7, len(own) + 3))
    cx, cy = placed[CUE]
    for bid, blocker in zip(own, blockers):
        for _ in range(200):
            d, a = rng.uniform(0.3, 0.9), rng.uniform(0, 2 * math.pi)
            x, y = cx + d * math.cos(a), cy + d * math.sin(a)
            f, off = rng.uniform(0.35, 0.65), rng.normal(0.0, 0.1 * D)
            bx, by = cx + f * d * math.cos(a) - off * math.sin(a), cy + f * d * math.sin(a) + off * math.cos(a)
            if _fits(x, y, placed, D + GAP) and _fits(bx, by, {**placed, bid: (x, y)}, D + GAP):
                placed[bid], placed[blocker] = (x, y), (bx, by)
                break
        else:
            return None
    return placed if _place(rng, placed, blockers[len(own):]) else None


def _crowded(rng):
    g = geometry()
    placed: dict = {}
    own = _pick(rng, SOLIDS, 3, 7)
    opp = _pick(rng, STRIPES, 3, 7)
    objects = own + opp + [EIGHT]
    rng.shuffle(objects)
    n_cluster = min(len(objects), int(rng.integers(8, 12)))
    centre = (rng.uniform(0.25, g.width - 0.25), rng.uniform(0.3, g.length - 0.3))
    # 0.9 * radius: the check uses the full radius, so sampled clusters pass.
    if not _place(rng, placed, objects[:n_cluster], centre=centre, radius=0.9 * CROWD_RADIUS):
        return None
    if not _place(rng, placed, objects[n_cluster:] + [CUE]):
        return None
    return placed


def _sparse(rng):
    placed: dict = {}
    ids = [CUE] + _pick(rng, SOLIDS, 1, 3) + _pick(rng, STRIPES, 1, 2) + [EIGHT]
    return placed if _place(rng, placed, ids, min_dist=SPARSE_MIN_GAP) else None


def _foul_trap(rng):
    """A stripe or the 8 on or near the line to the nearest own ball."""
    D = geometry().ball_diameter
    placed: dict = {}
    own = _pick(rng, SOLIDS, 2, 5)
    opp = _pick(rng, STRIPES, 3, 6)
    if not _place(rng, placed, [CUE] + own):
        return None
    cx, cy = placed[CUE]
    nx, ny = placed[nearest(cx, cy, {b: placed[b] for b in own})]
    d = math.hypot(nx - cx, ny - cy)
    trap = EIGHT if rng.uniform() < 0.5 else opp[0]
    for _ in range(200):
        f, off = rng.uniform(0.3, 0.7), rng.uniform(-1.8 * D, 1.8 * D)
        x = cx + f * (nx - cx) - off * (ny - cy) / d
        y = cy + f * (ny - cy) + off * (nx - cx) / d
        if _fits(x, y, placed, D + GAP):
            placed[trap] = (x, y)
            break
    else:
        return None
    rest = [b for b in opp + [EIGHT] if b != trap]
    return placed if _place(rng, placed, rest) else None


def _spin_shot(rng):
    """The cue ball within a few millimetres of a cushion."""
    g = geometry()
    R = g.ball_radius
    gap = rng.uniform(0.0005, SPIN_MAX_GAP * 0.8)
    side = rng.choice(["left", "right", "bottom", "top"], p=np.array([g.length, g.length, g.width, g.width]) / (2 * (g.length + g.width)))
    if side in ("left", "right"):
        y = rng.uniform(R, g.length - R)
        x = R + gap if side == "left" else g.width - R - gap
    else:
        x = rng.uniform(R, g.width - R)
        y = R + gap if side == "bottom" else g.length - R - gap
    if placement_problem(x, y) is not None:
        return None
    placed = {CUE: (float(x), float(y))}
    ids = _pick(rng, SOLIDS, 2, 6) + _pick(rng, STRIPES, 2, 6) + [EIGHT]
    return placed if _place(rng, placed, ids) else None


_SAMPLERS = {
    "open": _open,
    "partial-block": _partial_block,
    "indirect": _indirect,
    "crowded": _crowded,
    "sparse": _sparse,
    "foul-trap": _foul_trap,
    "spin-shot": _spin_shot,
}
