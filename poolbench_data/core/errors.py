"""A user's mistake, and the checks that name the field and the fix: any layer raises them, the command
line prints one line and exits 2 (poolbench_data.config.run_main)."""

from __future__ import annotations

import os
from pathlib import Path

from poolbench_data.core.vocab import MAX_SEED, V0_RANGE


class UserError(ValueError):
    """A mistake in the user's input: printed as one line, exit code 2."""


class SimulatorError(RuntimeError):
    """Not the user's mistake: the simulator failed every shot of a run, so the run measures nothing. The command
    line prints it as one line and exits 1 (poolbench_data.config.run_main)."""


def check_output_file(path: str, flag: str = "--out") -> Path:
    """Make sure `path` can be written before any work starts, so a run's
    results are never lost to a typo: parent folders are created, and an
    existing file is left untouched until the results replace it."""
    out = Path(path)
    fix = f"give {flag} a file path in a folder you can write to"
    if out.is_dir():
        raise UserError(f"{flag} {path} is a folder; {fix}, e.g. {out / 'results.json'}")
    try:
        probe_file(out)
    except OSError as e:
        raise UserError(f"{flag} {path} cannot be written ({e.strerror or e}); {fix}") from None
    return out


def probe_file(out: Path, keep_folders: bool = True) -> None:
    """Open `out` for writing as a run will, changing nothing: an existing file in append mode, a new one
    created and removed; missing parent folders are made, and removed again unless `keep_folders`. Raises the
    OSError the write would."""
    made: list[Path] = []
    try:
        made = [p for p in (out.parent, *out.parent.parents) if not p.exists()]  # deepest first
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.exists():
            open(out, "a").close()
        else:
            open(out, "x").close()
            out.unlink()
    finally:
        for folder in [] if keep_folders else made:
            try:
                folder.rmdir()
            except OSError:
                break


def check_output_dir(path: str, flag: str = "--out", make: bool = True) -> Path:
    """A folder a run will write into, checked before any work starts (and made, with its parents, if `make`;
    else nothing is created, so a later mistake leaves no trace): an empty value or a path that cannot be a
    writable folder is one UserError naming the flag."""
    if not str(path).strip():
        raise UserError(f"{flag} is empty; give a folder, or leave the flag out for its default")
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise UserError(f"{flag} {path} is a file; give a folder")
    base = next(p for p in (out.absolute(), *out.absolute().parents) if p.exists())
    if not base.is_dir() or not os.access(base, os.W_OK | os.X_OK):
        why = "not writable" if base.is_dir() else "not a folder"
        raise UserError(f"{flag} {path}: cannot create the folder ({base} is {why}); give a folder you can write to")
    if make:
        out.mkdir(parents=True, exist_ok=True)
    return out


def check_whole(flag: str, value, low: int, high: int | None = None, what: str = "a whole number",
                why: str = "") -> int:
    """A whole number in [low, high] as a harness passes it (a JSON or YAML value: a bool, a float or a string
    is none), else one UserError naming the flag and what to give (and `why`, if given)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bounds = f">= {low}" if high is None else f"from {low} to {high}"
        raise UserError(f"{flag} is {value!r}; give {what} {bounds}" + (f" ({why})" if why else ""))
    return value


def check_at_least(flag: str, value: int, low: int) -> None:
    if value < low:
        raise UserError(f"{flag} must be >= {low} (got {value})")


def check_seed(flag: str, value: int) -> None:
    if not 0 <= value <= MAX_SEED:
        raise UserError(f"{flag} must be in [0, 2**63 - 1] (got {value}); seeds are stored as int64")


def check_speeds(flag: str, value: str) -> tuple[float, ...]:
    """Comma-separated cue speeds (m/s) within the protocol's range, in the order given."""
    try:
        speeds = tuple(float(v) for v in value.split(",") if v.strip())
    except ValueError:
        speeds = ()
    if not speeds or any(not V0_RANGE[0] <= v <= V0_RANGE[1] for v in speeds):
        raise UserError(f"{flag} {value!r}: give one or more comma-separated cue speeds in "
                        f"[{V0_RANGE[0]:g}, {V0_RANGE[1]:g}] m/s, e.g. 5 or 4,5,6")
    return speeds
