"""A ShotRecord as a trace row: the `traces` config's columns, and the
evaluator's llm_traces.jsonl. One writer for both."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from poolbench_data.core.records import Shot
from poolbench_data.players.diagnostics import fired, oracle_diagnostics, played_shot
from poolbench_data.players.play import ShotRecord


def trace_row(rec: ShotRecord, oracle_shot: Shot | None, *, model: str | None = None,
              prompt_version: str | None = None, temperature: float | None = None,
              seed: int | None = None) -> dict:
    r = rec.result
    shot = played_shot(rec)
    return {
        "scenario_id": rec.scenario_id, "category": rec.category, "player": rec.player, "player_kind": rec.kind,
        "sample": rec.sample, "model": model, "prompt_version": prompt_version, "temperature": temperature,
        "seed": seed, "raw_response": rec.raw_response, "parse_status": rec.parse_status,
        "parse_message": rec.parse_message,
        "action": shot.to_row() if shot is not None else None,
        "decision_how": rec.how, "decision_sims": rec.sims,
        "sim_status": r.status if r is not None else "not-fired",
        "sim_message": r.message if r is not None else "",
        "events": [e.to_row() for e in r.events] if r is not None else [],
        "event_text": r.event_text() if r is not None else "",
        "first_contact": r.first_contact if r is not None else None,
        "cushion_contacts": [{"ball": b, "cushion": c} for b, c in r.cushion_contacts] if r is not None else [],
        "pocketed": [{"ball": b, "pocket": p} for b, p in r.pocketed] if r is not None else [],
        "final_positions": [{"id": i, "x": x, "y": y} for i, x, y in r.final_positions] if r is not None else [],
        **rec.metrics.to_row(),
        **oracle_diagnostics(rec, oracle_shot),
    }


def oracle_shots(records: Iterable[ShotRecord]) -> dict[str, Shot]:
    """{scenario id: the Oracle's shot}, the reference every diagnostic uses."""
    return {r.scenario_id: r.shot for r in records if r.player == "oracle"}


FIX = "pass the llm_traces.jsonl of a `poolbench eval` run"


def load_traces(path: Path, fix: str = FIX, check=None) -> list[dict]:
    """The rows of an llm_traces.jsonl (or any JSON-lines file of objects). A file that is not one is an error
    naming the file, the line and `fix` (an empty file is no rows); so is a row for which `check(row)` returns
    a problem (a string)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist or is not a file; {fix}")
    rows = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except (ValueError, RecursionError):
                raise ValueError(f"{path}: line {i} is not JSON; {fix}") from None
            if not isinstance(row, dict):
                raise ValueError(f"{path}: line {i} is not a JSON object; {fix}")
            if check is not None and (problem := check(row)):
                raise ValueError(f"{path}: line {i}: {problem}; {fix}")
            rows.append(row)
    return rows
