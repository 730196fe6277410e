"""Resuming a game evaluation: OUT/run.json holds the run's settings; a rerun with the same settings keeps every
finished episode on disk (episodes.jsonl, llm_turns.jsonl) and plays only the others; other settings are refused
before any work."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from poolbench_data.core.errors import UserError


@dataclass(frozen=True)
class Kept:
    """What a resumed run keeps of the stopped one: every finished episode's row (the baselines' and the model's)
    and the model's turns of those episodes."""

    episodes: tuple = ()
    turns: tuple = ()

    @property
    def model_done(self) -> tuple:
        return tuple(r for r in self.episodes if r["player_kind"] == "llm")


RUN_FILE = "run.json"  # the settings of the run in OUT: a rerun with the same settings resumes it


def resume(out: Path, stamp: dict, name: str) -> Kept:
    """Write OUT/run.json; where OUT holds a run's episodes, keep them if it was this run (the same settings),
    else refuse before any work. The model's episodes that did not finish (a stop, a failed request) are dropped
    with their turns, so they are played again from their start; both files are rewritten whole first (a
    temporary file renamed over each), so a second stop leaves them readable."""
    files = [out / "episodes.jsonl", out / "llm_turns.jsonl"]
    run = out / RUN_FILE
    if not any(f.exists() for f in files):
        run.write_text(json.dumps(stamp, indent=2, sort_keys=True, default=str) + "\n")
        return Kept()
    try:
        before = json.loads(run.read_text())
    except (OSError, ValueError):
        before = None
    now = json.loads(json.dumps(stamp, default=str))
    if before != now:
        differ = ("no run.json" if not isinstance(before, dict) else
                  ", ".join(f"{k}: {before.get(k)!r} there, {now[k]!r} now" for k in now if before.get(k) != now[k]))
        raise UserError(f"--out {out} holds the episodes of another run ({differ[:300]}); rerun with that run's "
                        "settings to resume it, or give another --out")
    episodes, turns = (read_rows(f) for f in files)
    finished = [r for r in episodes if r.get("player_kind") == "baseline" or
                (r.get("player_kind") == "llm" and r.get("player") == name and not r.get("request_failed"))]
    done = {(r["episode"], r["sample"]) for r in finished if r["player_kind"] == "llm"}
    turns = [t for t in turns if (t.get("episode"), t.get("sample")) in done]
    for f, kept in zip(files, (finished, turns)):
        tmp = f.with_name(f.name + ".tmp")
        tmp.write_text("".join(json.dumps(r, sort_keys=True, default=str) + "\n" for r in kept))
        tmp.replace(f)
    return Kept(tuple(finished), tuple(turns))


def read_rows(path: Path) -> list[dict]:
    """A JSON-lines file's rows; a last line a stop cut short is left out."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            break
    return rows
