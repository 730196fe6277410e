"""The one configuration system of the project's own entry points: every `poolbench` subcommand, builder,
benchmark and analysis script, and the training loop, reads a frozen dataclass whose fields carry their help.
The settings come from a YAML file (`--config`) and command-line flags that override it, in one flag style
(underscores, as TRL and lm-evaluation-harness), and a user's mistake ends a run the same way everywhere: one
line naming the field and the fix, exit code 2. The training scripts use TRL's `TrlParser`, the same shape
with transformers' types, put in this error style by `in_project_style`. A --config file is plain `field: value`
lines, read once (a second --config is refused), each value checked against its field's type; YAML anchors and
aliases and a key given twice are refused, and an error shows at most a bounded cut of any value.

What a field's type and metadata make of it:
    bool                          --flag / --no-flag (a field no_X: --no_X / --X)
    int, float, str (or | None)   --flag VALUE of that type; metadata "choices" limits the values
    tuple[str, ...]               --flag VALUE, repeated: one item a flag (a YAML list in --config)
    metadata "positional": True   an argument without a flag (a tuple: several); one without a default is
                                  required on the command line, as argparse requires positionals
    no default (a flag)           required: from the command line or the --config file

Only the entry points read command lines, so this module sits on the floor under them (cli, finetune), above
the library they call: the library takes config objects and never parses."""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import enum
import functools
import os
import reprlib
import sys
import types
import typing
from collections.abc import Callable
from pathlib import Path

from poolbench_data.core.errors import SimulatorError, UserError

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
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message):
        one_line_error(self, message)


def one_line_error(parser: argparse.ArgumentParser, message: str):
    """What Parser.error does, for a parser of another class (TRL's): `parser.error = partial(...)`."""
    print(f"error: {parser.prog}: {message}; see {parser.prog} --help", file=sys.stderr)
    raise SystemExit(2)


def in_project_style(parser: argparse.ArgumentParser, args: list[str], command: str) -> None:
    """Another library's parser (TRL's) in this error style, and its --config file checked first, as `read_yaml`
    checks ours: TRL reports unknown recipe keys only after building the configs, and passes a recipe's values
    to the dataclasses unchecked (a list for an int), so either would surface as another field's error."""
    parser.error = functools.partial(one_line_error, parser)
    if "--config" not in args:
        return
    if args.count("--config") > 1:
        parser.error("argument --config: given twice; give one recipe file (flags override its settings)")
    if args[-1] == "--config":
        parser.error("argument --config: expected one argument")
    path = args[args.index("--config") + 1]
    values = yaml_settings(path, command)
    actions = {a.dest: a for a in parser._actions}
    check_known(path, values, set(actions) | {"env"}, command)
    hints = {"env": dict[str, typing.Any]}
    for cls in getattr(parser, "dataclass_types", ()):
        hints.update(typing.get_type_hints(cls))
    for key, value in values.items():
        if key in hints:
            check_value(path, key, value, hints[key])
        choices = getattr(actions.get(key), "choices", None)
        if choices and value is not None and value not in choices:  # argparse checks a flag's, not a default's
            raise UserError(f"--config {path}: {key} is {shown(value)}; give one of {', '.join(map(str, choices))}")


def _required(f: dataclasses.Field) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _default(f: dataclasses.Field):
    return f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]


def _items(kind) -> type | None:
    """The item type of a tuple[X, ...] field, else None."""
    return typing.get_args(kind)[0] if typing.get_origin(kind) is tuple else None


class _Once(argparse.Action):
    """--config: a second one is refused, not silently the one that counts."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest, None) is not None:
            parser.error(f"argument {option_string}: given twice; give one file (flags override its settings)")
        setattr(namespace, self.dest, values)


class _Negated(argparse.Action):
    """A bool field named no_X: --no_X sets it and --X clears it (BooleanOptionalAction would add --no-no_X)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, option_string == self.option_strings[0])


def add_arguments(parser: argparse.ArgumentParser, cls) -> None:
    """--config, then one argument per field of `cls` with the field's help. An argument not given is absent
    from the namespace, so a YAML value is overridden only by what the user typed. The parser keeps `cls` as
    `config_class`, so whoever walks the parsers sees which dataclass each one reads."""
    parser.add_argument("--config", default=None, action=_Once,
                        help="YAML file of these settings (field: value); flags given on the command line override it")
    parser.config_class = cls
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        kind = hints[f.name]
        help_text = f.metadata.get("help", "")
        if not _required(f) and "default" not in help_text:
            help_text += f" (default: {_default(f)!r})"
        extra = {"choices": f.metadata["choices"]} if "choices" in f.metadata else {}
        items = _items(kind)
        if f.metadata.get("positional"):
            # Required: argparse asks for it (so positionals and flags interleave as usual); a --config file
            # can still set one with a default.
            nargs = ("+" if _required(f) else "*") if items else (None if _required(f) else "?")
            parser.add_argument(f.name, nargs=nargs, type=items or kind, default=argparse.SUPPRESS, help=help_text,
                                **extra)
        elif kind is bool and f.name.startswith("no_"):
            parser.add_argument(f"--{f.name}", f"--{f.name[3:]}", dest=f.name, action=_Negated,
                                default=argparse.SUPPRESS, help=f"{help_text}; --{f.name[3:]} turns it off")
        elif kind is bool:
            parser.add_argument(f"--{f.name}", action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS,
                                help=help_text)
        elif items:
            parser.add_argument(f"--{f.name}", action="append", type=items, default=argparse.SUPPRESS,
                                help=help_text + " (repeat the flag for more)", **extra)
        else:
            base = next((a for a in typing.get_args(kind) if a is not type(None)), kind)
            parser.add_argument(f"--{f.name}", type=base, default=argparse.SUPPRESS, help=help_text, **extra)


def from_namespace(cls, ns: argparse.Namespace, command: str = "this command"):
    """The config of parsed arguments: the --config file's values, then every argument given. A required field
    given in neither is one UserError, worded as argparse words it."""
    hints = typing.get_type_hints(cls)
    values = read_yaml(ns.config, cls, command) if getattr(ns, "config", None) else {}
    for f in dataclasses.fields(cls):
        if hasattr(ns, f.name):
            value = getattr(ns, f.name)
            values[f.name] = tuple(value) if _items(hints[f.name]) else value
    missing = [f.name if f.metadata.get("positional") else f"--{f.name}" for f in dataclasses.fields(cls)
               if _required(f) and f.name not in values]
    if missing:
        raise UserError(f"{command}: the following arguments are required: {', '.join(missing)}; "
                        f"see {command} --help")
    return cls(**values)


def parse(cls, argv=None, description: str | None = None, prog: str | None = None):
    """`cls` from the command line (and its --config file): a script's whole argument parsing."""
    parser = Parser(description=description or cls.__doc__, prog=prog)
    add_arguments(parser, cls)
    return from_namespace(cls, parser.parse_args(argv), parser.prog)


def _matches(value, kind) -> bool:
    """A YAML value is of a field's type: bool is no int, an int is a float, a list of items is a tuple. TRL's
    fields add unions, `list[X]` (a list, or one item: TrlParser passes it as given), dict, Literal and Enum."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is typing.Any:
        return True
    if kind is type(None):
        return value is None
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, k) for k in args)
    if (items := _items(kind)) is not None:
        return isinstance(value, list) and all(_matches(v, items) for v in value)
    if origin is list:
        item = args[0] if args else typing.Any
        return all(_matches(v, item) for v in (value if isinstance(value, list) else [value]))
    if origin is dict:
        return isinstance(value, dict)
    if origin is typing.Literal:
        return value in args
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return isinstance(value, kind) or value in [m.value for m in kind]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return True
    if not isinstance(kind, type):
        return True  # a type hint none of the above reads: left to the parser
    return isinstance(value, kind) and not (isinstance(value, bool) and kind is not bool)


def _name(kind) -> str:
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is type(None):
        return "null"
    if origin in (typing.Union, types.UnionType):
        return " or ".join(map(_name, args))
    if (items := _items(kind) or (args[0] if origin is list and args else None)) is not None:
        return f"a list of {_name(items)}"
    if origin is dict:
        return "a mapping"
    if origin is typing.Literal:
        return "one of " + ", ".join(map(repr, args))
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return "one of " + ", ".join(repr(m.value) for m in kind)
    return getattr(kind, "__name__", str(kind))


def shown(value, limit: int = 80) -> str:
    """`value` as an error message shows it: its repr, cut to `limit` characters (and built with bounded depth
    and length, so a huge value costs nothing to show)."""
    text = _REPR.repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = 80
_REPR.maxlevel = 3


def check_value(path: str, key: str, value, kind) -> None:
    """A --config file's value is of its field's type (`kind`), else one UserError naming the setting."""
    kinds = (kind,) if _items(kind) else typing.get_args(kind) if typing.get_origin(kind) in (
        typing.Union, types.UnionType) else (kind,)
    if not any(_matches(value, k) for k in kinds):
        raise UserError(f"--config {path}: {key} is {shown(value)}, expected {' or '.join(map(_name, kinds))}")


def read_yaml(path: str, cls, command: str = "this command") -> dict:
    """A YAML file's settings, each checked against its field's type; a mistake is one UserError naming it."""
    values = yaml_settings(path, command)
    hints = typing.get_type_hints(cls)
    check_known(path, values, hints, command)
    for key, value in values.items():
        check_value(path, key, value, hints[key])
        if _items(hints[key]):
            values[key] = tuple(value)
    return dict(values)


class _Refused(Exception):
    """What `_loader` does not read in a --config file: the message says what and how to write it instead."""


@functools.cache
def _loader():
    """PyYAML's safe loader, stricter for a settings file: no anchors or aliases (nested aliases expand a few
    hundred bytes into gigabytes), and a key given twice is refused, not the last one silently kept."""
    import yaml

    class Loader(yaml.SafeLoader):
        def compose_node(self, parent, index):
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise _Refused(f"uses a YAML anchor or alias (line {event.start_mark.line + 1}), which settings "
                               "files do not; write each value out in full")
            return super().compose_node(parent, index)

        def construct_mapping(self, node, deep=False):
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if isinstance(key, typing.Hashable) and key in seen:
                    raise _Refused(f"gives {shown(key)} twice (line {key_node.start_mark.line + 1}); keep one")
                if isinstance(key, typing.Hashable):
                    seen.add(key)
            return super().construct_mapping(node, deep)

    return Loader


def yaml_settings(path: str, command: str = "this command") -> dict:
    """The `field: value` mapping of a --config file, or one UserError saying what is wrong with the file."""
    import yaml

    file = Path(path)
    if file.is_dir():
        raise UserError(f"--config {path} is a folder; give a YAML file of {command}'s settings")
    if not file.is_file():
        raise UserError(f"--config {path}: no such file; give a YAML file of {command}'s settings")
    try:
        text = file.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"--config {path} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset "
                        f"{exc.start}); save it as UTF-8") from None
    except OSError as exc:
        raise UserError(f"--config {path} cannot be read ({exc.strerror or exc}); give a YAML file you can "
                        "read") from None
    try:
        values = yaml.load(text, Loader=_loader()) or {}
    except _Refused as exc:
        raise UserError(f"--config {path} {exc}") from None
    except yaml.YAMLError as exc:
        raise UserError(f"--config {path} is not YAML ({str(exc).splitlines()[0][:200]})") from None
    if not isinstance(values, dict):
        raise UserError(f"--config {path} holds a {type(values).__name__}, not `field: value` lines")
    return values


def check_known(path: str, values: dict, names, command: str = "this command") -> None:
    """Every key of a --config file is a setting: a typo is named (with the nearest setting) before anything
    is built from the file, so it cannot surface as another field's error or silently stay a default."""
    for key in values:
        if key not in names:
            near = difflib.get_close_matches(str(key), list(names), n=1)
            raise UserError(f"--config {path}: unknown setting {shown(key)}" + (f" (did you mean {near[0]!r}?)"
                                                                                if near else f"; see {command} --help"))


def write_yaml(config, path) -> None:
    """The settings that differ from the defaults, as a file `--config` reads back to the same config."""
    import yaml

    changed = {f.name: list(v) if isinstance(v := getattr(config, f.name), tuple) else v
               for f in dataclasses.fields(config) if _required(f) or getattr(config, f.name) != _default(f)}
    Path(path).write_text(yaml.safe_dump(changed, sort_keys=False))


def error_line(exc: BaseException, limit: int = 1000) -> str:
    """The line a mistake prints, `error: ...`, at most about `limit` characters: a value a message quotes (a
    YAML setting, a path) may be megabytes long. Its middle goes, so the fix at the end stays."""
    text = f"error: {exc}"
    if len(text) <= limit:
        return text
    return f"{text[:limit * 2 // 3]} [... {len(text) - limit:,} characters ...] {text[-limit // 3:]}"


def run_main(fn: Callable[[], int | None]) -> int:
    """Run a command: a user's mistake prints `error: ...` and returns 2, a simulator that failed every shot
    (SimulatorError) the same line and 1; a closed pipe (`| head`) ends quietly."""
    try:
        return fn() or 0
    except BrokenPipeError:  # before USER_ERRORS: it is a ConnectionError, and no mistake
        # Python would complain again when flushing stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except USER_ERRORS as e:
        print(error_line(e), file=sys.stderr)
        return 2
    except SimulatorError as e:  # the simulator failed every shot: one line, as a mistake, but exit 1
        print(error_line(e), file=sys.stderr)
        return 1
