"""The one configuration system of every command, builder and the loop: a dataclass whose fields carry their
help, read from a YAML file (`--config`) and command-line flags that override it, one flag style (underscores,
as TRL and lm-evaluation-harness), and how a user's mistake ends a run: one line naming the field and the fix,
exit code 2. The training scripts use TRL's `TrlParser`, the same shape with transformers' types."""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import functools
import os
import sys
import typing
from collections.abc import Callable
from pathlib import Path

from poolbench_data.core.errors import UserError

# Mistakes our checks report with a message that names the field and the fix.
USER_ERRORS: tuple[type[BaseException], ...] = (UserError, ValueError, FileExistsError, FileNotFoundError,
                                                 NotADirectoryError, IsADirectoryError, PermissionError,
                                                 ConnectionError)


class Parser(argparse.ArgumentParser):
    """argparse with the project's error style: a wrong flag is one line naming it and pointing at --help, exit
    2 (argparse prints the whole usage block first). No abbreviations: `--eval` must not quietly mean
    `--eval_n`."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message):
        one_line_error(self, message)


def one_line_error(parser: argparse.ArgumentParser, message: str):
    """What Parser.error does, for a parser of another class (TRL's): `parser.error = partial(...)`."""
    print(f"error: {parser.prog}: {message}; see {parser.prog} --help", file=sys.stderr)
    raise SystemExit(2)


def in_project_style(parser: argparse.ArgumentParser, args: list[str], command: str) -> None:
    """Another library's parser (TRL's) in this error style, and its --config file's keys checked first: TRL
    reports unknown recipe keys only after building the configs, so a typo would be another field's error."""
    parser.error = functools.partial(one_line_error, parser)
    if "--config" in args[:-1]:
        path = args[args.index("--config") + 1]
        check_known(path, yaml_settings(path, command), {a.dest for a in parser._actions} | {"env"}, command)


def _default(f: dataclasses.Field):
    return f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]


def add_arguments(parser: argparse.ArgumentParser, cls) -> None:
    """--config, then one flag per field of `cls` with the field's help. A flag not given is absent from the
    namespace, so a YAML value is overridden only by a flag the user typed."""
    parser.add_argument("--config", default=None, help="YAML file of these settings (field: value); flags given "
                                                        "on the command line override it")
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        kind, default = hints[f.name], _default(f)
        help_text = f.metadata.get("help", "")
        help_text += "" if "default" in help_text else f" (default: {default!r})"
        if kind is bool:
            parser.add_argument(f"--{f.name}", action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS,
                                help=help_text)
            continue
        base = next((a for a in typing.get_args(kind) if a is not type(None)), kind)
        parser.add_argument(f"--{f.name}", type=base, default=argparse.SUPPRESS, help=help_text,
                            **({"choices": f.metadata["choices"]} if "choices" in f.metadata else {}))


def from_namespace(cls, ns: argparse.Namespace, command: str = "this command"):
    """The config of parsed flags: the --config file's values, then every flag given."""
    values = read_yaml(ns.config, cls, command) if getattr(ns, "config", None) else {}
    values.update({f.name: getattr(ns, f.name) for f in dataclasses.fields(cls) if hasattr(ns, f.name)})
    return cls(**values)


def parse(cls, argv=None, description: str | None = None):
    """`cls` from the command line (and its --config file)."""
    parser = Parser(description=description or cls.__doc__)
    add_arguments(parser, cls)
    return from_namespace(cls, parser.parse_args(argv), Path(sys.argv[0]).name)


def read_yaml(path: str, cls, command: str = "this command") -> dict:
    """A YAML file's settings, each checked against its field's type; a mistake is one UserError naming it."""
    values = yaml_settings(path, command)
    hints = typing.get_type_hints(cls)
    check_known(path, values, hints, command)
    for key, value in values.items():
        if (expected := type_problem(value, hints[key], "null")) is not None:
            raise UserError(f"--config {path}: {key} is {value!r}, expected {expected}")
    return dict(values)


def type_problem(value, hint, none: str = "None") -> str | None:
    """None when `value` fits the type `hint` (an int fits a float; a bool fits only a bool), else the types it
    should have been, in words ("int or None")."""
    kinds = typing.get_args(hint) or (hint,)
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


def yaml_settings(path: str, command: str = "this command") -> dict:
    """The `field: value` mapping of a --config file, or one UserError saying what is wrong with the file."""
    import yaml

    file = Path(path)
    if not file.is_file():
        raise UserError(f"--config {path}: no such file; give a YAML file of {command}'s settings")
    try:
        values = yaml.safe_load(file.read_text()) or {}
    except yaml.YAMLError as exc:
        raise UserError(f"--config {path} is not YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(values, dict):
        raise UserError(f"--config {path} holds a {type(values).__name__}, not `field: value` lines")
    return values


def check_known(path: str, values: dict, names, command: str = "this command") -> None:
    """Every key of a --config file is a setting: a typo is named (with the nearest setting) before anything
    is built from the file, so it cannot surface as another field's error or silently stay a default."""
    for key in values:
        if key not in names:
            near = difflib.get_close_matches(str(key), list(names), n=1)
            raise UserError(f"--config {path}: unknown setting {key!r}" + (f" (did you mean {near[0]!r}?)" if near
                                                                           else f"; see {command} --help"))


def write_yaml(config, path) -> None:
    """The settings that differ from the defaults, as a file `--config` reads back to the same config."""
    import yaml

    changed = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)
               if getattr(config, f.name) != _default(f)}
    Path(path).write_text(yaml.safe_dump(changed, sort_keys=False))


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
