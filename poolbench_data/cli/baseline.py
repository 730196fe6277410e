"""`poolbench baseline`: the Oracle, Heuristic and Random baselines, the paper's table."""

from __future__ import annotations

import json
import time

from poolbench_data.boards.generate import DEFAULT_N, DEFAULT_SEED


def add_arguments(p) -> None:
    from poolbench_data.players import BASELINES, DEFAULT_BASELINES

    p.add_argument("--n", type=int, default=DEFAULT_N, help="number of scenarios (default: the paper's 50)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="base seed (default: the evaluation set)")
    p.add_argument("--players", default=",".join(DEFAULT_BASELINES),
                   help=f"comma-separated baselines: {', '.join(BASELINES)}")
    p.add_argument("--workers", type=int, default=0,
                   help="worker processes (0: one per core; more than the cores is capped there)")
    p.add_argument("--executor", default="local", help="where boards run: local (process pool) or ray")
    p.add_argument("--ray_address", default="", help="with --executor ray: the cluster ('' = a local Ray instance)")
    p.add_argument("--out", default="results/baselines.json", help="JSON results path ('' to skip)")
    p.add_argument("--no_label", action="store_true", help="skip straight-pottability labels")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args) -> int:
    from poolbench_data.boards.generate import iter_specs
    from poolbench_data.core.errors import check_output_file
    from poolbench_data.players import check_players
    from poolbench_data.players.play import run_baselines
    from poolbench_data.players.pool import check_executor, resolve_workers
    from poolbench_data.report.provenance import provenance
    from poolbench_data.report.tables import format_categories, format_table, pottable_summary, summarize

    names = check_players(args.players.split(","), "--players")
    workers = resolve_workers(args.workers)
    check_executor(args.executor, args.ray_address or None)
    path = check_output_file(args.out) if args.out else None
    t0 = time.perf_counter()
    runs = list(run_baselines(iter_specs(args.n, args.seed), names, workers=workers,
                              label=not args.no_label, total=args.n, progress=not args.quiet,
                              executor=args.executor, ray_address=args.ray_address or None))
    elapsed = time.perf_counter() - t0
    records = [r for run in runs for r in run.records]
    summary = summarize(records, names)
    print(format_table(summary, f"PoolBench baselines: {args.n} scenarios, seed {args.seed} "
                                f"(Wilson 95% CIs; Clean pot = own ball potted without a foul)"))
    print()
    print(format_categories(summary))
    out = {"summary": summary, "elapsed_s": elapsed,
           "provenance": provenance(n=args.n, seed=args.seed, players=names, workers=workers)}
    if not args.no_label:
        pot = pottable_summary(runs)
        out["pottability"] = pot
        out["labels"] = {r.scenario.id: {"pottable": r.pottability.pottable, "how": r.pottability.how,
                                         "kind": r.pottability.kind, "sims": r.pottability.sims} for r in runs}
        print(f"Straight-pottable boards: {pot['straight_pottable']}/{pot['scenarios']} "
              f"(not pottable: {pot['not_pottable'] or 'none'})")
        if "oracle" in names:
            print(f"Oracle legal pots: {pot['legal_pots_on_pottable']}/{pot['straight_pottable']} straight-pottable "
                  f"= {pot['pct_on_pottable']:.1f}% [{pot['ci_on_pottable'][0]:.1f}, {pot['ci_on_pottable'][1]:.1f}]; "
                  f"overall {pot['legal_pots_overall']}/{pot['scenarios']}")
        kinds = [r.pottability.kind for r in runs]
        print(f"Pottable: straight {kinds.count('straight')}, kick {kinds.count('kick')} (a one-cushion kick pots "
              f"legally), none {kinds.count('none')}")
    if "sims" in summary.get("oracle", {}):
        s = summary["oracle"]["sims"]
        print(f"Oracle simulations per decision: median {s['median']:.0f}, p90 {s['p90']:.0f}, max {s['max']} "
              f"(grid allows 120)")
    sims_run, saved = sum(r.sims_run for r in runs), sum(r.sims_saved for r in runs)
    print(f"{args.n} scenarios in {elapsed:.1f} s with {workers} worker(s) ({args.executor}); "
          f"simulations run {sims_run}, saved by the floor {saved}")
    if path is not None:
        path.write_text(json.dumps(out, indent=2, sort_keys=True))
        print(f"results saved to {path}")
    return 0
