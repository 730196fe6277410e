"""What the loop hands its stages' scripts besides their inputs: the tool track's builder settings (fields of the
loop, each a flag of the same name of its builder) and the --extra_<stage>_args strings, each checked against
the script it is handed to before the first stage runs."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from poolbench_data.core.errors import UserError

BUILDER_SETTINGS = ("tool_demo_order", "tool_demo_speeds", "tool_sources")  # the tool track's, for its builders
STAGE_SCRIPTS = (("sft_data", "builders/build_sft.py"), ("sft", "training/sft.py"), ("dpo", "training/dpo.py"),
                 ("grpo", "training/grpo.py"), ("pairs", "builders/build_pairs.py"))


def words(extra: str, flag: str) -> list[str]:
    """FLAG's value as the stage's command gets it: split as a shell would, so a quoted value stays one word."""
    try:
        return shlex.split(extra)
    except ValueError as e:
        raise UserError(f"{flag}: {e} in {extra!r}; close the quote (or quote the value once)") from None


def builder_flags(a, *names: str) -> list[str]:
    """The loop's builder settings among `names` that are set, as the builder's flags ('' leaves its default)."""
    return [word for name in names if getattr(a, name) for word in (f"--{name}", getattr(a, name))]


def setting(extra: str, flag: str, recipe: Path, key: str, default):
    """A training script's setting as its stage runs it: from FLAG's words where they give it, else its recipe."""
    given = words(extra, flag)
    if f"--{key}" in given[:-1]:
        return given[given.index(f"--{key}") + 1]
    import yaml

    return yaml.safe_load(recipe.read_text()).get(key, default)


def check_stage_args(root: Path, a) -> None:
    """Everything the loop `a` hands its stages' scripts in ROOT, checked as those scripts check it."""
    check_builder_settings(a)
    for name, script in STAGE_SCRIPTS:
        check_script_args(root, script, getattr(a, f"extra_{name}_args"), f"--extra_{name}_args")


def check_builder_settings(a) -> None:
    """The builder settings of the loop `a`, checked as their builders check them; read only by the tool track."""
    if a.track != "tools":
        for name in BUILDER_SETTINGS:
            if getattr(a, name):
                raise UserError(f"--{name} is read only with --track tools; add --track tools, or leave --{name} out")
        return
    from poolbench_data.core.errors import check_speeds
    from poolbench_data.demos.tools import DEMO_ORDERS
    from poolbench_data.pairs.sources import ALL_TOOL_SOURCES, check_sources

    if a.tool_demo_order and a.tool_demo_order not in DEMO_ORDERS:
        raise UserError(f"--tool_demo_order {a.tool_demo_order!r}: give one of {', '.join(DEMO_ORDERS)}")
    if a.tool_demo_speeds:
        check_speeds("--tool_demo_speeds", a.tool_demo_speeds)
    if a.tool_sources:
        check_sources("--tool_sources", a.tool_sources, ALL_TOOL_SOURCES)


def check_script_args(root: Path, script: str, extra: str, flag: str) -> None:
    """FLAG's words, each flag one SCRIPT takes: found now, not when its stage starts hours in."""
    given = words(extra, flag)
    if not given:
        return
    import dataclasses
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"loop_check_{Path(script).stem}", root / script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    if hasattr(module, "make_parser"):  # the TRL scripts: their parser holds TRL's flags too
        known = {o for action in module.make_parser()._actions for o in action.option_strings}
    else:  # a builder: its ScriptArguments are its flags
        known = {f"--{f.name}" for f in dataclasses.fields(module.ScriptArguments)}
    for word in given:
        if word.startswith("--") and word.split("=")[0] not in known:
            raise UserError(f"{flag}: {word.split('=')[0]} is not a flag of {script}; "
                            f"see python {script} --help")
