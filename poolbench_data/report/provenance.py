"""What produced an output: stored with every result and dataset."""

from __future__ import annotations

import functools
import platform
import sys
from importlib import metadata


def _version(pkg: str) -> str | None:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


@functools.cache
def versions() -> dict:
    from poolbench_data import __version__

    return {
        "poolbench_data": __version__,
        "pooltool": _version("pooltool-billiards"),
        "numba": _version("numba"),
        "numpy": _version("numpy"),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
    }


def provenance(**settings) -> dict:
    """Versions plus the caller's settings (seeds, sampling, prompt version)."""
    return {"versions": versions(), "settings": settings}
