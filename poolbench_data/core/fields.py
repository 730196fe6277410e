"""Checks over a config dataclass's fields that the library runs itself (a program may build a config by hand,
without the command line's parser): each value's type, and fields read only with another one set."""

from __future__ import annotations

import dataclasses
import typing

from poolbench_data.core.errors import UserError


def _default(f: dataclasses.Field):
    return f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]


def type_problem(value, hint, none: str = "None") -> str | None:
    """None when `value` fits the type `hint` (an int fits a float; a bool fits only a bool), else the types it
    should have been, in words ("int or None")."""
    kinds = typing.get_args(hint) or (hint,)
    if typing.get_origin(hint) is tuple:
        kinds = (tuple,)
    ok = any(value is None if k is type(None) else
             isinstance(value, k) and not (isinstance(value, bool) and k is not bool)
             or (k is float and isinstance(value, int) and not isinstance(value, bool)) for k in kinds)
    return None if ok else " or ".join(none if k is type(None) else k.__name__ for k in kinds)


def check_types(config) -> None:
    """Every field of a config dataclass holds a value of its declared type: a program that builds the config by
    hand (`EvalConfig(n="5")`) gets one UserError naming the field and its flag, before any check compares it."""
    hints = typing.get_type_hints(type(config))
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if (expected := type_problem(value, hints[f.name])) is not None:
            raise UserError(f"{type(config).__name__}.{f.name} (--{f.name}) is {value!r}, a "
                            f"{type(value).__name__}; give {expected}")


def check_requires(config) -> None:
    """A field whose metadata says `requires: other` is read only when the bool field `other` is set: given
    without it (a value other than its default), the run would silently ignore it, so it is one UserError."""
    for f in dataclasses.fields(config):
        needs = f.metadata.get("requires")
        if needs and not getattr(config, needs) and getattr(config, f.name) != _default(f):
            raise UserError(f"--{f.name} is read only with --{needs}; add --{needs}, or leave --{f.name} out")
