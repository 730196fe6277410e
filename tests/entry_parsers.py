"""Each entry point's parser, built the way the entry point builds it: a `poolbench` command's subparser, a
TRL script's `make_parser()`, and any other script's parser taken as its `main` is about to parse with
core's Parser (builders/, benchmarks/, analysis/, training/loop.py). test_entry_points gives every flag of
these parsers a wrong value; test_docs asks them whether a documented command's flags exist.

A script is found by its path alone, so a script added or moved is covered without a list to update."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from poolbench_data import config as project_config

REPO = Path(__file__).resolve().parents[1]
# Scripts that run in another environment, without this package (their own argparse flags): not walked.
OUTSIDE = {"analysis/deepphy_mock.py"}  # a venv of pooltool 0.4.4 (docs/games.md#pooltool-044)


class Captured(Exception):
    def __init__(self, parser):
        self.parser = parser


def load_script(rel: str):
    """The script at REPO/rel as a module (once per process; dataclasses look their module up by name)."""
    name = "entry_" + rel.replace("/", "_").removesuffix(".py")
    if name not in sys.modules:
        path = REPO / rel
        if not path.is_file():
            raise FileNotFoundError(f"{rel}: no such script in {REPO}")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return sys.modules[name]


def capture_parser(main) -> argparse.ArgumentParser:
    """The parser `main` builds, taken as it is about to parse (every script parses with the config module's Parser)."""
    original = project_config.Parser.parse_args

    def grab(self, *a, **k):
        raise Captured(self)

    project_config.Parser.parse_args = grab
    try:
        main([])
    except Captured as c:
        return c.parser
    finally:
        project_config.Parser.parse_args = original
    raise AssertionError(f"{main} did not parse with poolbench_data.config.Parser")


def is_trl_script(module) -> bool:
    """training/sft.py, dpo.py, grpo.py: TRL's parser (recipe + TRL's own fields) from `make_parser()`."""
    return hasattr(module, "make_parser")


def script_parser(rel: str) -> argparse.ArgumentParser:
    """The parser of the script at `rel` (a path from the repository root)."""
    module = load_script(rel)
    return module.make_parser() if is_trl_script(module) else capture_parser(module.main)


def poolbench_parsers() -> dict[str, argparse.ArgumentParser]:
    """`poolbench` command -> its subparser, from the command line's own parser."""
    from poolbench_data.cli import build_parser

    top = build_parser()
    return dict(next(a for a in top._actions if isinstance(a, argparse._SubParsersAction)).choices)
