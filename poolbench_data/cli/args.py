"""What every command shares: dataclass -> argparse (the way TRL's scripts use
HfArgumentParser, without importing transformers), the one flag style
(underscores, as TRL and lm-evaluation-harness), and how a user's mistake
ends a run: one line naming the field and the fix, exit code 2."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import typing
from collections.abc import Callable
from pathlib import Path

from poolbench_data.core.errors import UserError, check_at_least, check_output_file, check_seed  # noqa: F401


# Mistakes our checks report with a message that names the field and the fix.
USER_ERRORS: tuple[type[BaseException], ...] = (UserError, ValueError, FileExistsError, FileNotFoundError,
                                                 NotADirectoryError, IsADirectoryError, PermissionError,
                                                 ConnectionError)


def parse(cls, argv=None, description: str | None = None):
    p = argparse.ArgumentParser(description=description or cls.__doc__)
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        kind = hints[f.name]
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        help_text = f"{f.metadata.get('help', '')} (default: {default!r})"
        if kind is bool:
            p.add_argument(f"--{f.name}", action=argparse.BooleanOptionalAction, default=default, help=help_text)
        else:
            base = next((a for a in typing.get_args(kind) if a is not type(None)), kind)
            p.add_argument(f"--{f.name}", type=base, default=default, help=help_text)
    return cls(**vars(p.parse_args(argv)))


def run_main(fn: Callable[[], int | None]) -> int:
    """Run a command: a user's mistake prints `error: ...` and returns 2;
    a closed pipe (`| head`) ends quietly."""
    try:
        return fn() or 0
    except BrokenPipeError:  # before USER_ERRORS: it is a ConnectionError, and no mistake
        # Python would complain again when flushing stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except USER_ERRORS as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
