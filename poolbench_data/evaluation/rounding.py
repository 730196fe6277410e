"""`rounding(config)`: the angle-rounding ablation on the Oracle (the paper's H1, section 6.3): its aim rounded
to D decimals before simulation, potting per setting with Wilson intervals; what `poolbench rounding` calls.

The paper suspects that LLMs fail partly because they write angles with too few decimals. The Oracle's shots,
rounded, show how much precision potting needs on these boards."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from poolbench_data.boards.generate import DEFAULT_N, DEFAULT_SEED


@dataclass(frozen=True)
class RoundingConfig:
    """The Oracle's aim rounded to 0/1/2 decimals before simulation (`poolbench rounding`)."""

    n: int = field(default=DEFAULT_N, metadata={"help": "scenarios (default: the paper's 50)"})
    seed: int = field(default=DEFAULT_SEED, metadata={"help": "scenario base seed (default: evaluation set)"})
    decimals: str = field(default="0,1,2", metadata={"help": "comma-separated decimals to round phi to"})
    player: str = field(default="oracle", metadata={"help": "the baseline whose aim is rounded"})
    workers: int = field(default=0, metadata={"help": "worker processes (0: one per core)"})
    out: str = field(default="", metadata={"help": "JSON results path ('' to skip)"})
    quiet: bool = field(default=False, metadata={"help": "no progress bar"})


@dataclass(frozen=True)
class RoundingResult:
    """Per setting ("exact", "D decimals"), per metric (clean_pot, legal_contact): k, n and the Wilson interval."""

    config: RoundingConfig
    player: str
    decimals: tuple[int, ...]
    table: dict
    report: str  # the printed table


def rounded_metrics(task):
    """(scenario, shot, decimals) -> Metrics per decimals: one board's row."""
    from dataclasses import replace

    from poolbench_data.core.physics import simulate
    from poolbench_data.core.scoring import score

    scenario, shot, decimals = task
    return {d: score(simulate(scenario, replace(shot, phi=round(shot.phi, d) % 360.0))) for d in decimals}


def parse_decimals(text: str) -> tuple[int, ...]:
    """--decimals: sorted distinct integers in 0..12, else one UserError naming the flag."""
    from poolbench_data.core.errors import UserError

    try:
        decimals = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise UserError(f"--decimals {text!r}: write integers, e.g. 0,1,2") from None
    if not decimals or min(decimals) < 0 or max(decimals) > 12:
        raise UserError(f"--decimals {text!r}: give decimals between 0 and 12, e.g. 0,1,2")
    return tuple(decimals)


def rounding(config: RoundingConfig) -> RoundingResult:
    """Check the config (before any work), play the player on the boards, replay each shot with its aim rounded,
    print the table, write the JSON results."""
    from poolbench_data.boards.generate import iter_scenarios
    from poolbench_data.core.errors import check_at_least, check_output_file, check_seed
    from poolbench_data.players import check_players
    from poolbench_data.players.play import run_baselines
    from poolbench_data.players.pool import imap, resolve_workers
    from poolbench_data.report.stats import wilson

    check_at_least("--n", config.n, 1)
    check_seed("--seed", config.seed)
    workers = resolve_workers(config.workers)
    decimals = parse_decimals(config.decimals)
    player = check_players([config.player], "--player")[0]
    path = check_output_file(config.out) if config.out else None
    runs = list(run_baselines(iter_scenarios(config.n, config.seed), [player], workers=workers, label=False,
                              total=config.n, progress=not config.quiet))
    tasks = [(r.scenario, r.records[0].shot, decimals) for r in runs]
    rows = list(imap(rounded_metrics, tasks, workers))
    settings = [("exact", [r.records[0].metrics for r in runs])] + [(f"{d} decimals", [row[d] for row in rows])
                                                                      for d in decimals]
    lines = [f"Angle rounding ablation (H1): {player}'s aim rounded before simulation, {config.n} boards, seed "
             f"{config.seed} (Wilson 95% CIs)", f"{'phi':<12} {'clean pot':>22} {'legal contact':>22}"]
    table = {}
    for label, metrics in settings:
        cells = {}
        for m in ("clean_pot", "legal_contact"):
            k = sum(getattr(x, m) for x in metrics)
            lo, hi = wilson(k, len(metrics))
            cells[m] = {"k": k, "n": len(metrics), "lo": lo, "hi": hi}
        table[label] = cells
        lines.append(f"{label:<12} " + " ".join(f"{c['k']:>3}/{c['n']:<3} [{100 * c['lo']:4.1f}, "
                                                f"{100 * c['hi']:5.1f}]%".rjust(22) for c in cells.values()))
    report = "\n".join(lines)
    print(report)
    if path:
        path.write_text(json.dumps({"player": player, "n": config.n, "seed": config.seed, "table": table},
                                   indent=2))
    return RoundingResult(config, player, decimals, table, report)
