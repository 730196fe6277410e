"""`poolbench` command line.

  poolbench baseline   run the Oracle, Heuristic and Random baselines
  poolbench eval       evaluate a language model on the benchmark (vLLM)
  poolbench score      re-score stored responses offline (same parser and physics)
  poolbench compare    before/after table with exact McNemar tests
  poolbench scenarios  print generated scenarios as JSON lines
  poolbench rounding   the angle-rounding ablation on the Oracle (H1)
  poolbench play       the human baseline: play the boards yourself (terminal or --web), scored like a model
  poolbench figures    figures of a run (Table-1 bars, boards, before/after, training curves)

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
    "rounding": "the Oracle's aim rounded to 0/1/2 decimals before simulation (the paper's H1)",
    "play": "the human baseline: type an action for each board (--web: in a browser), scored like a model",
    "figures": "figures of a run: Table-1 bars, a model-vs-Oracle board, before/after bars, training curves",
}


def build_parser() -> argparse.ArgumentParser:
    from poolbench_data.core.config import Parser

    p = Parser(prog="poolbench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    for name, help_text in COMMANDS.items():
        module = importlib.import_module(f"poolbench_data.cli.{name}")
        sp = sub.add_parser(name, help=help_text)
        module.add_arguments(sp)
        sp.set_defaults(fn=module.run)
    return p


def check_common(args) -> None:
    """The flags several commands share, checked before any command starts work."""
    from poolbench_data.core.errors import check_at_least, check_seed

    if hasattr(args, "n"):
        check_at_least("--n", args.n, 1)
    if hasattr(args, "seed"):
        check_seed("--seed", args.seed)
    if hasattr(args, "workers"):
        from poolbench_data.players.pool import resolve_workers

        resolve_workers(args.workers)


def main(argv=None) -> int:
    from poolbench_data.core.config import run_main

    args = build_parser().parse_args(argv)

    def command():
        check_common(args)
        return args.fn(args)

    return run_main(command)


if __name__ == "__main__":
    sys.exit(main())
