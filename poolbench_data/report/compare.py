"""Before/after on the same scenarios: Table 1 side by side plus exact
McNemar tests on the paired outcomes (same scenario, same sample index)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from poolbench_data.report.stats import mcnemar_exact, wilson

METRICS = (("legal_contact", "Contact"), ("own_potted", "Potted"), ("clean_pot", "Clean pot"), ("foul", "Foul"))


def load_traces(path: Path) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def compare(before: Sequence[dict], after: Sequence[dict]) -> dict:
    b = {(r["scenario_id"], r["sample"]): r for r in before}
    a = {(r["scenario_id"], r["sample"]): r for r in after}
    if set(b) != set(a):
        raise ValueError(f"before and after cover different shots ({len(set(b) ^ set(a))} differ); "
                         f"evaluate both on the same --seed, --n and --samples")
    keys = sorted(b)
    out = {"n": len(keys), "parse_ok": {"before": sum(b[k]["parse_status"] == "ok" for k in keys),
                                        "after": sum(a[k]["parse_status"] == "ok" for k in keys)}}
    for m, _ in METRICS:
        kb, ka = sum(bool(b[k][m]) for k in keys), sum(bool(a[k][m]) for k in keys)
        only_b = sum(bool(b[k][m]) and not a[k][m] for k in keys)
        only_a = sum(bool(a[k][m]) and not b[k][m] for k in keys)
        out[m] = {"before": kb, "after": ka, "before_ci": wilson(kb, len(keys)), "after_ci": wilson(ka, len(keys)),
                  "only_before": only_b, "only_after": only_a, "mcnemar_p": mcnemar_exact(only_b, only_a)}
    return out


def format_comparison(c: dict, before_name: str = "before", after_name: str = "after") -> str:
    n = c["n"]
    lines = [f"Before/after on the same {n} shots (Wilson 95% CIs; exact McNemar on discordant pairs)",
             f"{'metric':10} {before_name[:24]:>26} {after_name[:24]:>26} {'b->only':>8} {'a->only':>8} {'p':>7}"]
    for m, label in METRICS:
        r = c[m]
        cell = lambda k, ci: f"{100 * k / n:5.1f} [{100 * ci[0]:4.1f}, {100 * ci[1]:5.1f}]"
        lines.append(f"{label:10} {cell(r['before'], r['before_ci']):>26} {cell(r['after'], r['after_ci']):>26} "
                     f"{r['only_before']:>8} {r['only_after']:>8} {r['mcnemar_p']:>7.3f}")
    lines.append(f"parseable responses: {c['parse_ok']['before']}/{n} -> {c['parse_ok']['after']}/{n}")
    return "\n".join(lines)
