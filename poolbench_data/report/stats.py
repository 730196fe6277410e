"""Interval estimates and paired tests used in reports."""

from __future__ import annotations

import math


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials (the paper's CIs)."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts b and c."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def quantile(values, q: float) -> float:
    """Linear-interpolated quantile (numpy's default), without numpy."""
    xs = sorted(values)
    if not xs:
        return float("nan")
    pos = (len(xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def sign_test_exact(more: int, fewer: int) -> float:
    """Two-sided exact sign test of paired values: `more` pairs where the first is larger, `fewer` where it is
    smaller, ties dropped; the binomial(more + fewer, 1/2) tail (the same count as McNemar's exact test)."""
    return mcnemar_exact(more, fewer)


def wilcoxon_exact(diffs) -> float:
    """Two-sided exact Wilcoxon signed-rank p-value of paired differences. Zero differences are dropped
    (Wilcoxon's convention) and tied |d| share their average rank; the null distribution of W+ (the rank sum of
    the positive differences) is counted over all 2^n sign assignments of those ranks, so it is exact with ties
    too. The ranks are doubled to stay whole numbers."""
    d = [x for x in diffs if x != 0]
    n = len(d)
    if n == 0:
        return 1.0
    order = sorted(range(n), key=lambda i: abs(d[i]))
    ranks = [0] * n  # doubled ranks
    i = 0
    while i < n:
        j = i
        while j + 1 < n and abs(d[order[j + 1]]) == abs(d[order[i]]):
            j += 1
        for t in range(i, j + 1):
            ranks[order[t]] = (i + 1) + (j + 1)  # twice the average of ranks i+1 .. j+1
        i = j + 1
    w = sum(r for r, x in zip(ranks, d) if x > 0)
    counts = [1] + [0] * sum(ranks)  # counts[s]: sign assignments whose doubled W+ is s
    top = 0
    for r in ranks:
        for s in range(top, -1, -1):
            if counts[s]:
                counts[s + r] += counts[s]
        top += r
    total = 2 ** n
    lower = sum(counts[: w + 1]) / total
    upper = sum(counts[w:]) / total
    return min(1.0, 2 * min(lower, upper))
