"""The paper's Table 1 layout (plus a clean-pot column), from ShotRecords."""

from __future__ import annotations

from collections.abc import Sequence

from poolbench_data.core.records import CATEGORIES
from poolbench_data.report.stats import quantile, wilson

METRICS = (("legal_contact", "Contact %"), ("own_potted", "Potted %"), ("foul", "Foul %"),
           ("opp_or_8_potted", "Opp/8 potted %"), ("clean_pot", "Clean pot %"))


def rate(records, metric: str) -> dict:
    k = sum(bool(getattr(r.metrics, metric)) for r in records)
    n = len(records)
    lo, hi = wilson(k, n)
    return {"k": k, "n": n, "pct": 100.0 * k / n if n else float("nan"), "lo": 100.0 * lo, "hi": 100.0 * hi}


def summarize(records: Sequence, players: Sequence[str]) -> dict:
    """{player: {"overall": {metric: rate}, "by_category": {cat: {metric: rate}}}}."""
    out = {}
    for p in players:
        mine = [r for r in records if r.player == p]
        out[p] = {
            "overall": {m: rate(mine, m) for m, _ in METRICS},
            "by_category": {
                c: {m: rate([r for r in mine if r.category == c], m) for m, _ in METRICS}
                for c in CATEGORIES if any(r.category == c for r in mine)
            },
        }
        sims = [r.sims for r in mine]
        if any(sims):
            out[p]["sims"] = {"median": quantile(sims, 0.5), "p90": quantile(sims, 0.9), "max": max(sims)}
    return out


def _cell(r: dict) -> str:
    return f"{r['pct']:5.1f} [{r['lo']:4.1f}, {r['hi']:5.1f}]"


def format_table(summary: dict, title: str = "") -> str:
    head = ["Player".ljust(24)] + [name.ljust(21) for _, name in METRICS]
    lines = [title] if title else []
    lines += [" ".join(head), "-" * (25 + 22 * len(METRICS))]
    for p, s in summary.items():
        lines.append(" ".join([p.ljust(24)] + [_cell(s["overall"][m]).ljust(21) for m, _ in METRICS]))
    return "\n".join(lines)


def format_categories(summary: dict, metrics=("legal_contact", "own_potted", "clean_pot")) -> str:
    """Per-category cells (k/n) for each player: exploratory, wide intervals."""
    cats = [c for c in CATEGORIES if any(c in s["by_category"] for s in summary.values())]
    lines = []
    for m in metrics:
        label = dict(METRICS)[m]
        lines.append(f"{label} by category (k/n)")
        lines.append("Player".ljust(24) + "".join(c[:13].rjust(14) for c in cats))
        for p, s in summary.items():
            cells = []
            for c in cats:
                r = s["by_category"].get(c, {}).get(m)
                cells.append((f"{r['k']}/{r['n']}" if r else "-").rjust(14))
            lines.append(p.ljust(24) + "".join(cells))
        lines.append("")
    return "\n".join(lines)


def pottable_summary(runs, player: str = "oracle") -> dict:
    """The Oracle's legal potting overall and on straight-pottable boards."""
    labelled = [r for r in runs if r.pottability is not None]
    pottable = [r for r in labelled if r.pottability.pottable]
    def clean(rs):
        return [x for r in rs for x in r.records if x.player == player and x.metrics.clean_pot]
    k_all, k_pot = len(clean(labelled)), len(clean(pottable))
    lo, hi = wilson(k_pot, len(pottable))
    return {
        "player": player,
        "scenarios": len(labelled),
        "straight_pottable": len(pottable),
        "legal_pots_overall": k_all,
        "legal_pots_on_pottable": k_pot,
        "pct_on_pottable": 100.0 * k_pot / len(pottable) if pottable else float("nan"),
        "ci_on_pottable": [100 * lo, 100 * hi],
        "not_pottable": {r.scenario.id: r.pottability.how for r in labelled if not r.pottability.pottable},
    }
