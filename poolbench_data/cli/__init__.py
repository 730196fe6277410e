"""`poolbench` command line.

  poolbench baseline   run the Oracle, Heuristic and Random baselines
  poolbench eval       evaluate a language model on the benchmark (vLLM)
  poolbench score      re-score stored responses offline (same parser and physics)
  poolbench compare    before/after table with exact McNemar tests
  poolbench scenarios  print generated scenarios as JSON lines
  poolbench rounding   the angle-rounding ablation on the Oracle (H1)
  poolbench play       the human baseline: play the boards yourself (terminal or --web), scored like a model
  poolbench figures    figures of a run (Table-1 bars, boards, before/after, training curves)
  poolbench serve-env  the games as an OpenEnv environment server (HTTP and WebSocket, on loopback)

Flags use underscores (--max_tokens, --dataset_dir), as TRL and
lm-evaluation-harness do; each command's flags are the fields of its config
dataclass, and --config FILE.yaml gives any of them (flags override it).
Each command is a thin wrapper over a library function that takes that
config and returns a result (`evaluate(EvalConfig)`, `baselines(BaselineConfig)`, ...).
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
    "serve-env": "the games as an OpenEnv environment server for RL harnesses (HTTP and WebSocket, on loopback)",
}


def build_parser() -> argparse.ArgumentParser:
    """One subparser per command, made from its config dataclass (`CONFIG` of poolbench_data.cli.<command>)."""
    from poolbench_data.config import Parser, add_arguments

    p = Parser(prog="poolbench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    for name, help_text in COMMANDS.items():
        module = importlib.import_module(f"poolbench_data.cli.{name.replace('-', '_')}")
        sp = sub.add_parser(name, help=help_text, description=module.CONFIG.__doc__)
        add_arguments(sp, module.CONFIG)
        sp.set_defaults(_run=module.run, _config_class=module.CONFIG, _prog=sp.prog)  # no field has these names
    return p


def main(argv=None) -> int:
    """`poolbench COMMAND ...`: parse, make the command's config (a mistake in it, or in its --config file, is
    one line and exit 2), run the command's library function."""
    from poolbench_data.config import from_namespace, run_main

    args = build_parser().parse_args(argv)
    return run_main(lambda: args._run(from_namespace(args._config_class, args, args._prog)))


if __name__ == "__main__":
    sys.exit(main())
