"""Before/after on the same scenarios: Table 1 side by side plus exact
McNemar tests on the paired outcomes (same scenario, same sample index).
`compare_runs(config)` is what `poolbench compare` calls."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from poolbench_data.players.traces import FIX, load_traces
from poolbench_data.report.stats import mcnemar_exact, wilson

METRICS = (("legal_contact", "Contact"), ("own_potted", "Potted"), ("clean_pot", "Clean pot"), ("foul", "Foul"))


FIELDS = ("scenario_id", "sample", "parse_status") + tuple(m for m, _ in METRICS)


def one_player(rows: Sequence[dict], where: str, player: str | None = None, flag: str = "--player",
               fields: Sequence[str] = FIELDS) -> list[dict]:
    """The rows of one player: `player`, or the only one in the file. Two
    players' rows would pair up by whichever line came last."""
    if not rows:
        raise ValueError(f"{where} is empty; {FIX}")
    for i, r in enumerate(rows, 1):
        missing = next((f for f in fields if f not in r), None)
        if missing:
            raise ValueError(f"{where}: row {i} lacks field {missing!r}; {FIX}")
    players = sorted({str(r.get("player")) for r in rows})
    if player is None:
        if len(players) > 1:
            raise ValueError(f"{where} holds rows of {len(players)} players ({', '.join(map(repr, players))}); "
                             f"pick one with {flag} NAME")
        return list(rows)
    picked = [r for r in rows if r.get("player") == player]
    if not picked:
        raise ValueError(f"{where} has no rows of player {player!r}; its players: {', '.join(map(repr, players))}; "
                         f"pass one of them to {flag}")
    return picked


def by_shot(rows: Sequence[dict], where: str) -> dict:
    out: dict = {}
    for r in rows:
        key = (r["scenario_id"], r["sample"])
        if key in out:
            raise ValueError(f"{where} has two rows for scenario {key[0]!r} sample {key[1]!r}; "
                             f"keep one row per shot (one player, one run)")
        out[key] = r
    return out


def compare_files(before: Path, after: Path, player: str | None = None) -> dict:
    """compare() on two llm_traces.jsonl files, each narrowed to one player."""
    rows = [one_player(load_traces(p), str(p), player) for p in (before, after)]
    return compare(*rows, names=(str(before), str(after)))


def compare(before: Sequence[dict], after: Sequence[dict], names: tuple[str, str] = ("before", "after")) -> dict:
    b, a = by_shot(before, names[0]), by_shot(after, names[1])
    if not b and not a:
        raise ValueError("no shots to compare; pass two non-empty llm_traces.jsonl files")
    if set(b) != set(a):
        raise ValueError(f"before and after cover different shots ({len(set(b) ^ set(a))} differ); "
                         f"evaluate both on the same --seed, --n and --samples")
    keys = list(b)
    moved = next((k for k in keys if b[k].get("category") != a[k].get("category")), None)
    if moved:
        raise ValueError(f"before and after hold different boards for scenario {moved[0]!r} (category "
                         f"{b[moved].get('category')!r} vs {a[moved].get('category')!r}); evaluate both on the "
                         f"same --seed")
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


@dataclass(frozen=True)
class CompareConfig:
    """Before/after report from two llm_traces.jsonl files (`poolbench compare`)."""

    before: str = field(metadata={"help": "llm_traces.jsonl of the run before", "positional": True})
    after: str = field(metadata={"help": "llm_traces.jsonl of the run after, on the same boards and samples",
                                 "positional": True})
    player: str | None = field(default=None, metadata={
        "help": "compare this player's rows (needed when a file holds more than one player)"})
    out: str = field(default="", metadata={"help": "also write the report here"})


@dataclass(frozen=True)
class Comparison:
    """`compare`'s counts, rates, intervals and McNemar p per metric, the printed report, where it was written."""

    config: CompareConfig
    counts: dict
    report: str
    path: Path | None


def compare_runs(config: CompareConfig) -> Comparison:
    """Check the output path (before any work), compare the two files' shots, print the report (and write it to
    `out`); each file's folder names its column."""
    from poolbench_data.core.errors import check_output_file

    path = check_output_file(config.out) if config.out else None
    before, after = Path(config.before), Path(config.after)
    counts = compare_files(before, after, config.player)
    text = format_comparison(counts, before.parent.name, after.parent.name)
    print(text)
    if path is not None:
        path.write_text(text + "\n")
    return Comparison(config, counts, text, path)
