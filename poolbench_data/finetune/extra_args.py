"""The loop's --extra_<stage>_args, checked against the flags of the script they are handed to."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from poolbench_data.core.errors import UserError


def words(extra: str, flag: str) -> list[str]:
    """FLAG's value as the stage's command gets it: split as a shell would, so a quoted value stays one word."""
    try:
        return shlex.split(extra)
    except ValueError as e:
        raise UserError(f"{flag}: {e} in {extra!r}; close the quote (or quote the value once)") from None


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
