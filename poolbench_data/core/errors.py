"""A user's mistake, and the checks that name the field and the fix: any layer raises them, the command
line prints one line and exits 2 (core.config.run_main)."""

from __future__ import annotations

from pathlib import Path

from poolbench_data.core.vocab import MAX_SEED


class UserError(ValueError):
    """A mistake in the user's input: printed as one line, exit code 2."""


def check_output_file(path: str, flag: str = "--out") -> Path:
    """Make sure `path` can be written before any work starts, so a run's
    results are never lost to a typo: parent folders are created, and an
    existing file is left untouched until the results replace it."""
    out = Path(path)
    fix = f"give {flag} a file path in a folder you can write to"
    if out.is_dir():
        raise UserError(f"{flag} {path} is a folder; {fix}, e.g. {out / 'results.json'}")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.exists():
            open(out, "a").close()  # append mode: the probe changes nothing
        else:
            open(out, "x").close()
            out.unlink()
    except OSError as e:
        raise UserError(f"{flag} {path} cannot be written ({e.strerror or e}); {fix}") from None
    return out


def check_at_least(flag: str, value: int, low: int) -> None:
    if value < low:
        raise UserError(f"{flag} must be >= {low} (got {value})")


def check_seed(flag: str, value: int) -> None:
    if not 0 <= value <= MAX_SEED:
        raise UserError(f"{flag} must be in [0, 2**63 - 1] (got {value}); seeds are stored as int64")
