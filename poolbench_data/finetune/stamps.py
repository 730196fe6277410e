"""What built each output of the loop, so a resumed loop never trains on the wrong data.

A stage whose output exists is skipped (the loop resumes). Skipped blindly, a changed flag is lost without a
word: a loop resumed with other --tool_sources would train DPO on the pairs built with the old ones.
Each stage that ran leaves WORK_DIR/stamps/<key>.json: its command (or evaluation config) and the digests of the
stamps of the outputs it read. An existing output whose stamp says otherwise is refused in one line before the
stage would have run; an output without a stamp (built by hand, or by a version that keeps none) is used as it is.
A stamp also keeps the seconds its stage took (not part of what is compared), so a resumed pilot's time is the sum
of its stages' (report.pilot.stage_minutes), not the hours between them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from poolbench_data.core.errors import UserError


class Stamps:
    def __init__(self, folder: Path):
        self.folder = folder

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def digest(self, key: str) -> str | None:
        p = self.path(key)
        return hashlib.sha256(p.read_bytes()).hexdigest()[:16] if p.exists() else None

    def stamp(self, what, inputs: Sequence[str]) -> dict:
        return {"what": what, "inputs": {k: self.digest(k) for k in inputs}}

    def done(self, key: str, output: Path, what, inputs: Sequence[str]) -> bool:
        """True where `output` exists (skip the stage), False where it does not (run it); an output whose stamp
        names another command or other inputs is a UserError naming what differs."""
        if not output.exists():
            return False
        if not self.path(key).exists():
            return True
        have, want = json.loads(self.path(key).read_text()), self.stamp(what, inputs)
        have.pop("seconds", None)  # how long it took is not what built it
        if have == want:
            return True
        if have["what"] != want["what"]:
            differ = _difference(have["what"], want["what"])
        else:
            rebuilt = [k for k in want["inputs"] if have["inputs"].get(k) != want["inputs"][k]]
            differ = f"its input(s) {', '.join(rebuilt)} were rebuilt since"
        raise UserError(f"stage {key}: {output} is not what this run would build ({differ}); resume with the "
                        f"arguments that built it, or move it away to build it again")

    def record(self, key: str, what, inputs: Sequence[str], seconds: float | None = None) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.path(key).with_suffix(".tmp")
        timed = {} if seconds is None else {"seconds": round(seconds, 1)}
        tmp.write_text(json.dumps({**self.stamp(what, inputs), **timed}, sort_keys=True) + "\n")
        tmp.replace(self.path(key))


def _difference(have, want) -> str:
    """The words of a command, or the fields of a config, that differ: what the user changed."""
    if isinstance(have, dict) and isinstance(want, dict):
        keys = [k for k in sorted({*have, *want}) if have.get(k) != want.get(k)]
        return "; ".join(f"{k} was {have.get(k)!r}, now {want.get(k)!r}" for k in keys)
    gone, new = [w for w in have if w not in want], [w for w in want if w not in have]
    return f"built with {' '.join(gone) or 'the same words'}, this run gives {' '.join(new) or 'the same words'}"
