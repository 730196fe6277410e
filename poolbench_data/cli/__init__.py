"""`poolbench` command line.

  poolbench baseline   run the Oracle, Heuristic and Random baselines
  poolbench eval       evaluate a language model on the benchmark (vLLM)
  poolbench score      re-score stored responses offline (same parser and physics)
  poolbench compare    before/after table with exact McNemar tests
  poolbench scenarios  print generated scenarios as JSON lines

Flags use underscores (--max_tokens, --dataset_dir), as TRL and
lm-evaluation-harness do.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = {
    "baseline": "run the baselines and print the paper's table",
    "eval": "evaluate a language model (default: the embedded one) against the baselines",
    "score": "re-score the responses of an llm_traces.jsonl offline (replay backend)",
    "compare": "before/after report from two llm_traces.jsonl files (McNemar)",
    "scenarios": "print scenarios as JSON lines",
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="poolbench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    for name, help_text in COMMANDS.items():
        module = importlib.import_module(f"poolbench_data.cli.{name}")
        sp = sub.add_parser(name, help=help_text)
        module.add_arguments(sp)
        sp.set_defaults(fn=module.run)
    return p


def main(argv=None) -> int:
    from poolbench_data.cli.args import run_main

    p = build_parser()
    args = p.parse_args(argv)
    if getattr(args, "n", 1) < 1:
        p.error(f"--n must be >= 1 (got {args.n})")
    if getattr(args, "seed", 0) < 0:
        p.error(f"--seed must be >= 0 (got {args.seed})")
    return run_main(lambda: args.fn(args))


if __name__ == "__main__":
    sys.exit(main())
