"""What the game and server benchmarks print and write: the metric table, the load average around the run, and
the JSON (its command, the machine, the load, the benchmark's numbers, provenance)."""

from __future__ import annotations

import json
from pathlib import Path


def load_row(start: tuple[float, ...], end: tuple[float, ...]) -> tuple[str, str]:
    """The table's row of the load average (1, 5, 15 min) at the run's start and end (os.getloadavg)."""
    return ("load average (1, 5, 15 min) at start -> end",
            ", ".join(f"{v:.2f}" for v in start) + " -> " + ", ".join(f"{v:.2f}" for v in end))


def print_metrics(rows: list[tuple[str, str]]) -> None:
    w = max(len(k) for k, _ in rows)
    print(f"{'metric'.ljust(w)}  value\n{'-' * w}  -----")
    for k, v in rows:
        print(f"{k.ljust(w)}  {v}")


def write_result(out: Path, command: str, benchmark: str, start_load, end_load, **numbers) -> None:
    from poolbench_data.report.pilot import machine
    from poolbench_data.report.provenance import provenance

    out.write_text(json.dumps({"command": command, "machine": machine(), "load_average_start": start_load,
                               "load_average_end": end_load, **numbers,
                               "provenance": provenance(benchmark=benchmark)}, indent=2, sort_keys=True, default=str))
    print(f"wrote {out}")
