"""Dataclass -> argparse, the way TRL's scripts use HfArgumentParser, without
importing transformers: every field becomes --name with its help text."""

from __future__ import annotations

import argparse
import dataclasses
import typing


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
