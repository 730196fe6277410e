"""`poolbench` command line.

  poolbench baseline   run the Oracle, Heuristic and Random baselines
  poolbench eval       evaluate a language model on the benchmark (vLLM)
  poolbench compare    before/after table with exact McNemar tests
  poolbench scenarios  print generated scenarios as JSON lines
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def _baseline(args) -> int:
    from poolbench_data.players import BASELINES
    from poolbench_data.provenance import provenance
    from poolbench_data.report import format_categories, format_table, pottable_summary, summarize
    from poolbench_data.runs import run_baselines
    from poolbench_data.scenarios import iter_scenarios

    names = args.players.split(",")
    unknown = [n for n in names if n not in BASELINES]
    if unknown:
        print(f"error: unknown player(s) {unknown}; choose from {', '.join(BASELINES)}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    runs = list(run_baselines(iter_scenarios(args.n, args.seed), names, workers=args.workers,
                              label=not args.no_label, total=args.n, progress=not args.quiet))
    elapsed = time.perf_counter() - t0
    records = [r for run in runs for r in run.records]
    summary = summarize(records, names)
    print(format_table(summary, f"PoolBench baselines: {args.n} scenarios, seed {args.seed} "
                                f"(Wilson 95% CIs; Clean pot = own ball potted without a foul)"))
    print()
    print(format_categories(summary))
    out = {"summary": summary, "elapsed_s": elapsed,
           "provenance": provenance(n=args.n, seed=args.seed, players=names, workers=args.workers)}
    if not args.no_label:
        pot = pottable_summary(runs)
        out["pottability"] = pot
        out["labels"] = {r.scenario.id: {"pottable": r.pottability.pottable, "how": r.pottability.how,
                                         "sims": r.pottability.sims} for r in runs}
        print(f"Straight-pottable boards: {pot['straight_pottable']}/{pot['scenarios']} "
              f"(not pottable: {pot['not_pottable'] or 'none'})")
        print(f"Oracle legal pots: {pot['legal_pots_on_pottable']}/{pot['straight_pottable']} straight-pottable "
              f"= {pot['pct_on_pottable']:.1f}% [{pot['ci_on_pottable'][0]:.1f}, {pot['ci_on_pottable'][1]:.1f}]; "
              f"overall {pot['legal_pots_overall']}/{pot['scenarios']}")
    if "sims" in summary.get("oracle", {}):
        s = summary["oracle"]["sims"]
        print(f"Oracle simulations per decision: median {s['median']:.0f}, p90 {s['p90']:.0f}, max {s['max']} "
              f"(grid allows 120)")
    print(f"{args.n} scenarios in {elapsed:.1f} s with {args.workers} worker(s)")
    if args.out:
        path = Path(args.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(out, indent=2, sort_keys=True))
        print(f"results saved to {path}")
    return 0


def _compare(args) -> int:
    from poolbench_data.compare import compare, format_comparison, load_traces

    text = format_comparison(compare(load_traces(args.before), load_traces(args.after)),
                             Path(args.before).parent.name, Path(args.after).parent.name)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


def _scenarios(args) -> int:
    from poolbench_data.scenarios import iter_scenarios

    for s in iter_scenarios(args.n, args.seed):
        print(s.to_json())
    return 0


def main(argv=None) -> int:
    from poolbench_data.runs import default_workers
    from poolbench_data.scenarios import DEFAULT_N, DEFAULT_SEED

    p = argparse.ArgumentParser(prog="poolbench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("baseline", help="run the baselines and print the paper's table")
    b.add_argument("--n", type=int, default=DEFAULT_N, help="number of scenarios (default: the paper's 50)")
    b.add_argument("--seed", type=int, default=DEFAULT_SEED, help="base seed (default: the evaluation set)")
    b.add_argument("--players", default="oracle,heuristic-centre,heuristic,random",
                   help="comma-separated baselines: oracle, oracle-centre, heuristic, heuristic-centre, random")
    b.add_argument("--workers", type=int, default=default_workers(), help="worker processes")
    b.add_argument("--out", default="results/baselines.json", help="JSON results path ('' to skip)")
    b.add_argument("--no-label", action="store_true", help="skip straight-pottability labels")
    b.add_argument("--quiet", action="store_true", help="no progress bar")
    b.set_defaults(fn=_baseline)
    e = sub.add_parser("eval", help="evaluate a language model (default: the embedded one) against the baselines")
    from poolbench_data import eval_run

    eval_run.add_arguments(e)
    e.set_defaults(fn=eval_run.run)
    c = sub.add_parser("compare", help="before/after report from two llm_traces.jsonl files (McNemar)")
    c.add_argument("before")
    c.add_argument("after")
    c.add_argument("--out", default="", help="also write the report here")
    c.set_defaults(fn=_compare)
    s = sub.add_parser("scenarios", help="print scenarios as JSON lines")
    s.add_argument("--n", type=int, default=DEFAULT_N)
    s.add_argument("--seed", type=int, default=DEFAULT_SEED)
    s.set_defaults(fn=_scenarios)
    args = p.parse_args(argv)
    if getattr(args, "n", 1) < 1:
        p.error(f"--n must be >= 1 (got {args.n})")
    if getattr(args, "seed", 0) < 0:
        p.error(f"--seed must be >= 0 (got {args.seed})")
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
