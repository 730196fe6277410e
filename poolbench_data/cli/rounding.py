"""`poolbench rounding`: the angle-rounding ablation on the Oracle (the
paper's H1, section 6.3): its aim rounded to D decimals before simulation,
potting per setting with Wilson intervals.

The paper suspects that LLMs fail partly because they write angles with too
few decimals. The Oracle's shots, rounded, show how much precision potting
actually needs on these boards.
"""

from __future__ import annotations

import json


def add_arguments(p) -> None:
    from poolbench_data.boards.generate import DEFAULT_N, DEFAULT_SEED

    p.add_argument("--n", type=int, default=DEFAULT_N, help="scenarios (default: the paper's 50)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="scenario base seed (default: evaluation set)")
    p.add_argument("--decimals", default="0,1,2", help="comma-separated decimals to round phi to")
    p.add_argument("--player", default="oracle", help="the baseline whose aim is rounded")
    p.add_argument("--workers", type=int, default=0, help="worker processes (0: one per core)")
    p.add_argument("--out", default="", help="JSON results path ('' to skip)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def rounded_metrics(task):
    """(scenario, shot, decimals) -> Metrics per decimals: one board's row."""
    from dataclasses import replace

    from poolbench_data.core.physics import simulate
    from poolbench_data.core.scoring import score

    scenario, shot, decimals = task
    return {d: score(simulate(scenario, replace(shot, phi=round(shot.phi, d) % 360.0))) for d in decimals}


def run(args) -> int:
    from poolbench_data.boards.generate import iter_scenarios
    from poolbench_data.core.errors import UserError, check_output_file
    from poolbench_data.players import check_players
    from poolbench_data.players.play import run_baselines
    from poolbench_data.players.pool import imap, resolve_workers
    from poolbench_data.report.stats import wilson

    try:
        decimals = sorted({int(x) for x in args.decimals.split(",") if x.strip()})
    except ValueError:
        raise UserError(f"--decimals {args.decimals!r}: write integers, e.g. 0,1,2") from None
    if not decimals or min(decimals) < 0 or max(decimals) > 12:
        raise UserError(f"--decimals {args.decimals!r}: give decimals between 0 and 12, e.g. 0,1,2")
    player = check_players([args.player], "--player")[0]
    path = check_output_file(args.out) if args.out else None
    workers = resolve_workers(args.workers)
    runs = list(run_baselines(iter_scenarios(args.n, args.seed), [player], workers=workers, label=False,
                              total=args.n, progress=not args.quiet))
    tasks = [(r.scenario, r.records[0].shot, decimals) for r in runs]
    rows = list(imap(rounded_metrics, tasks, workers))
    settings = [("exact", [r.records[0].metrics for r in runs])] + [(f"{d} decimals", [row[d] for row in rows])
                                                                      for d in decimals]
    print(f"Angle rounding ablation (H1): {player}'s aim rounded before simulation, {args.n} boards, seed "
          f"{args.seed} (Wilson 95% CIs)")
    print(f"{'phi':<12} {'clean pot':>22} {'legal contact':>22}")
    table = {}
    for label, metrics in settings:
        cells = {}
        for m in ("clean_pot", "legal_contact"):
            k = sum(getattr(x, m) for x in metrics)
            lo, hi = wilson(k, len(metrics))
            cells[m] = {"k": k, "n": len(metrics), "lo": lo, "hi": hi}
        table[label] = cells
        print(f"{label:<12} " + " ".join(f"{c['k']:>3}/{c['n']:<3} [{100 * c['lo']:4.1f}, {100 * c['hi']:5.1f}]%"
                                         .rjust(22) for c in cells.values()))
    if path:
        path.write_text(json.dumps({"player": player, "n": args.n, "seed": args.seed, "table": table}, indent=2))
    return 0
