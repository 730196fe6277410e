"""Reports of games: DeepPHY's Table 16 layout for nine-ball, balls per visit for run-outs.

Episodes are read as they stream (`facts`: a few numbers an episode), so a report of any number of episodes
holds no simulation.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence

from poolbench_data.report.stats import quantile, wilson
from poolbench_data.report.tables import _cell

CHECKPOINTS = (1, 3, 6, 9, 12, 15)  # Table 16's columns: success by attempt
# DeepPHY's published MOCK row (Table 16; pooltool 0.4.4). Its percentages are multiples of 1/300: 300 games.
DEEPPHY_MOCK = {"label": "DeepPHY MOCK (published)", "n": 300,
                "pct": dict(zip(CHECKPOINTS, (2.33, 10.00, 18.33, 31.33, 40.00, 48.00))), "avg_attempts": 7.88}
Z95 = 1.959963984540054
FOUL_ENDS = ("foul", "eight-early")


def facts(episode) -> dict:
    """What a report needs of an episode."""
    return {"player": episode.player, "success": episode.success, "attempts": episode.attempts,
            "balls": episode.balls, "end": episode.final.end, "sims": list(episode.sims)}


FACTS = ("player", "success", "attempts", "balls", "end", "sims")


def facts_of_row(row: dict) -> dict:
    """facts() of an episode from its stored row (an evaluation's episodes.jsonl, which keeps `balls`)."""
    return {k: row[k] for k in FACTS}


def _rate(k: int, n: int) -> dict:
    lo, hi = wilson(k, n)
    return {"k": k, "n": n, "pct": 100.0 * k / n if n else float("nan"), "lo": 100.0 * lo, "hi": 100.0 * hi}


def _sims(rows) -> dict | None:
    sims = [s for r in rows for s in r["sims"]]
    if not any(sims):
        return None
    return {"median": quantile(sims, 0.5), "p90": quantile(sims, 0.9), "max": max(sims), "decisions": len(sims)}


def checkpoints(max_attempts: int) -> tuple[int, ...]:
    """Table 16's columns up to the cap, and the cap itself where it is not one of them."""
    cols = tuple(c for c in CHECKPOINTS if c <= max_attempts)
    return cols if max_attempts in cols else cols + (max_attempts,)


def nineball_summary(rows: Iterable[dict], players: Sequence[str], max_attempts: int) -> dict:
    """{player: {"by_attempt": {c: rate}, "avg_attempts": mean attempts of the successes, "n", "sims"}}."""
    rows = list(rows)
    out = {}
    for p in players:
        mine = [r for r in rows if r["player"] == p]
        won = [r["attempts"] for r in mine if r["success"]]
        out[p] = {"n": len(mine),
                  "by_attempt": {c: _rate(sum(1 for a in won if a <= c), len(mine)) for c in checkpoints(max_attempts)},
                  "avg_attempts": sum(won) / len(won) if won else float("nan"),
                  "ends": dict(Counter(r["end"] for r in mine))}
        if (s := _sims(mine)) is not None:
            out[p]["sims"] = s
    return out


def format_nineball(summary: dict, max_attempts: int, title: str = "") -> str:
    cols = checkpoints(max_attempts)
    head = "Player".ljust(34) + "".join(f"Att. {c}".ljust(22) for c in cols) + "Avg. Att."
    lines = ([title] if title else []) + [head, "-" * len(head)]
    for p, s in summary.items():
        avg = s["avg_attempts"]  # nan: no episode succeeded
        lines.append(f"{p} (n={s['n']})".ljust(34) + "".join(_cell(s["by_attempt"][c]).ljust(22) for c in cols)
                     + (f"{avg:.2f}" if avg == avg else "-"))
    d = DEEPPHY_MOCK
    lines.append(f"{d['label']} (n={d['n']})".ljust(34)
                 + "".join((f"{d['pct'][c]:5.2f}" if c in d["pct"] else "-").ljust(22) for c in cols)
                 + f"{d['avg_attempts']:.2f}")
    lines.append("Success by attempt c: % of episodes whose 9 dropped within c attempts [Wilson 95%]; Avg. Att.: "
                 "mean attempts of the successful episodes.")
    lines += _sims_lines(summary)
    return "\n".join(lines)


def mean_interval(values: Sequence[float]) -> dict:
    """Mean and its 95% normal-approximation interval (mean +- 1.96 standard errors)."""
    n = len(values)
    if n == 0:
        return {"mean": float("nan"), "lo": float("nan"), "hi": float("nan"), "n": 0}
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    half = Z95 * sd / math.sqrt(n)
    return {"mean": mean, "lo": mean - half, "hi": mean + half, "n": n}


def runout_summary(rows: Iterable[dict], players: Sequence[str]) -> dict:
    """{player: {"balls": mean interval, "run_out": rate, "fouls": rate, "eight_early": k, "ends", "sims"}}."""
    rows = list(rows)
    out = {}
    for p in players:
        mine = [r for r in rows if r["player"] == p]
        n = len(mine)
        out[p] = {"balls": mean_interval([r["balls"] for r in mine]),
                  "run_out": _rate(sum(r["success"] for r in mine), n),
                  "fouls": _rate(sum(r["end"] in FOUL_ENDS for r in mine), n),
                  "eight_early": sum(r["end"] == "eight-early" for r in mine),
                  "ends": dict(sorted(Counter(r["end"] for r in mine).items()))}
        if (s := _sims(mine)) is not None:
            out[p]["sims"] = s
    return out


def format_runout(summary: dict, title: str = "") -> str:
    w = max([20, *(len(p) + 2 for p in summary)])  # a model's name can be long: the columns stay aligned
    head = ("Player".ljust(w) + "Balls per visit [95%]".ljust(24) + "Run-out %".ljust(22) + "Fouls %".ljust(22)
            + "Visits ended by")
    lines = ([title] if title else []) + [head, "-" * (len(head) + 30)]
    for p, s in summary.items():
        b = s["balls"]
        ends = ", ".join(f"{k} {v}" for k, v in s["ends"].items())
        lines.append(p.ljust(w) + f"{b['mean']:4.2f} [{b['lo']:4.2f}, {b['hi']:4.2f}]".ljust(24)
                     + _cell(s["run_out"]).ljust(22) + _cell(s["fouls"]).ljust(22) + ends)
    lines.append("Balls per visit: own balls (and the 8 on a win) potted on clean shots; a foul ends a visit on a "
                 "foul or the 8 potted early; Wilson 95% for rates, a normal interval for the mean.")
    lines += _sims_lines(summary)
    return "\n".join(lines)


def _sims_lines(summary: dict) -> list[str]:
    return [f"{p} simulations per decision: median {s['sims']['median']:.0f}, p90 {s['sims']['p90']:.0f}, max "
            f"{s['sims']['max']} ({s['sims']['decisions']} decisions)" for p, s in summary.items() if "sims" in s]


def game_report(game: str, rows: Iterable[dict], players: Sequence[str], n: int, seed: int,
                max_attempts: int) -> tuple[dict, str]:
    """(summary, the printed table) of the episodes' facts: Table 16's layout for nine-ball, the run-out table for
    run-outs; `n` episodes a player from base seed `seed`."""
    if game == "runout":
        summary = runout_summary(rows, players)
        title = f"PoolBench run-outs: {n} boards, seed {seed}, at most {max_attempts} shots a visit"
        return summary, format_runout(summary, title)
    summary = nineball_summary(rows, players, max_attempts)
    rack = "one rack per episode" if game == "nineball-seeded" else "DeepPHY's setup, one rack"
    title = f"Nine-ball ({rack}): {n} episodes a player, seed {seed}, at most {max_attempts} attempts"
    return summary, format_nineball(summary, max_attempts, title)


def paired_tests(rows: Iterable[dict], a: str, b: str) -> dict:
    """Player `a` against player `b` on the episodes both played from the same start and sample (rows' `key`):
    success (the 9 potted, the run-out won) by the exact McNemar test on the discordant pairs, and balls (potted
    on clean attempts) by the exact sign test and the exact Wilcoxon signed-rank test on the differences."""
    from poolbench_data.report.stats import mcnemar_exact, sign_test_exact, wilcoxon_exact

    rows = list(rows)
    mine = {r["key"]: r for r in rows if r["player"] == a}
    theirs = {r["key"]: r for r in rows if r["player"] == b}
    keys = sorted(set(mine) & set(theirs))
    only_a = sum(1 for k in keys if mine[k]["success"] and not theirs[k]["success"])
    only_b = sum(1 for k in keys if theirs[k]["success"] and not mine[k]["success"])
    diffs = [mine[k]["balls"] - theirs[k]["balls"] for k in keys]
    more, fewer = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    return {"a": a, "b": b, "n": len(keys),
            "success": {"a": sum(mine[k]["success"] for k in keys), "b": sum(theirs[k]["success"] for k in keys),
                        "only_a": only_a, "only_b": only_b, "mcnemar_p": mcnemar_exact(only_a, only_b)},
            "balls": {"mean_diff": sum(diffs) / len(diffs) if diffs else float("nan"), "a_more": more,
                      "b_more": fewer, "ties": len(diffs) - more - fewer, "sign_p": sign_test_exact(more, fewer),
                      "wilcoxon_p": wilcoxon_exact(diffs)}}


def format_paired(tests: Sequence[dict], success: str = "success") -> str:
    """One line a pair of players: `success` names what succeeded (the 9 potted, a run-out)."""
    w = max([34, *(len(f"{t['a']} vs {t['b']}") + 1 for t in tests)])
    head = ("Pair (a vs b)".ljust(w) + "n".rjust(4) + f"  {success} a/b".ljust(16) + "only a  only b  McNemar p"
            + "   balls a-b  a more  b more  ties  sign p  Wilcoxon p")
    lines = ["Paired on the same starts and samples (exact tests, two-sided):", head, "-" * len(head)]
    for t in tests:
        s, b = t["success"], t["balls"]
        lines.append(f"{t['a']} vs {t['b']}".ljust(w) + f"{t['n']:4d}" + f"  {s['a']}/{s['b']}".ljust(16)
                     + f"{s['only_a']:6d}  {s['only_b']:6d}  {s['mcnemar_p']:9.3f}"
                     + f"   {b['mean_diff']:+9.2f}  {b['a_more']:6d}  {b['b_more']:6d}  {b['ties']:4d}"
                     + f"  {b['sign_p']:6.3f}  {b['wilcoxon_p']:10.3f}")
    lines.append("McNemar on the pairs where one player succeeded and the other did not; the sign and Wilcoxon "
                 "signed-rank tests on the difference in balls potted on clean attempts (ties dropped).")
    return "\n".join(lines)
