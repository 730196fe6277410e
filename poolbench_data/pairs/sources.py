"""The pair sources builders/build_pairs.py takes by name, and the check of a comma-separated list of them: the
builder's --sources and --tool_sources, and the loop's --tool_sources, which it hands to the builder."""

from __future__ import annotations

from poolbench_data.core.errors import UserError
from poolbench_data.pairs.further_call import CALL_AGAIN
from poolbench_data.pairs.speed import CAP_SPEED, SPEED
from poolbench_data.pairs.tools import TOOL_SOURCES

ALL_TOOL_SOURCES = (*TOOL_SOURCES, SPEED, CAP_SPEED, CALL_AGAIN)  # every name --tool_sources takes


def check_sources(flag: str, value: str, available) -> list[str]:
    """A comma-separated list of pair sources, each one of `available`; else one UserError naming the flag."""
    sources = [s for s in value.split(",") if s.strip()]
    unknown = [s for s in sources if s not in available]
    if not sources or unknown:
        raise UserError(f"{flag} {value!r}: " + (f"unknown source(s) {unknown}" if unknown else "no source")
                        + f"; give one or more of {','.join(available)}")
    return sources
