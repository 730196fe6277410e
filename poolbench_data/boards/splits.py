"""The one home of the rule that keeps evaluation boards out of training: the evaluation set's seed, the
splits that hold it, its board ids, and the one error for a leak."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

EVAL_SEED = 0  # base seed of the evaluation boards (the paper's 50 are its first 50)
EVAL_SPLITS = ("test",)  # dataset splits that hold evaluation boards: never training data


class SplitLeakError(ValueError):
    """Evaluation boards where training data belongs (the test split, or an evaluation board's id)."""


def id_prefix(base_seed: int) -> str:
    """pb<seed>-, the prefix of every board id of that base seed (the dash keeps pb1- from matching pb10-)."""
    return f"pb{base_seed}-"


def check_id_prefix(prefix: str, what: str = "test_id_prefix") -> str:
    """A prefix of that shape: any other matches no generated board, and the leak check would pass everything."""
    import re

    if not re.fullmatch(r"pb\d+-", prefix):
        raise SplitLeakError(f"{what}={prefix!r} is not a board id prefix, so it would match no evaluation board. "
                             f"Fix: give pb<eval_seed>- (e.g. {id_prefix(EVAL_SEED)!r}), or leave it out to read it "
                             "from the dataset's provenance.json")
    return prefix


def scenario_id(base_seed: int, k: int) -> str:
    return f"{id_prefix(base_seed)}{k:06d}"


def eval_id_prefix(dataset_dir: str | Path | None = None) -> str:
    """The evaluation boards' id prefix: from a dataset folder's provenance (its eval_seed) when it has one."""
    seed = EVAL_SEED
    provenance = Path(dataset_dir or "") / "provenance.json"
    if dataset_dir and provenance.is_file():
        seed = json.loads(provenance.read_text()).get("benchmark", {}).get("settings", {}).get("eval_seed", seed)
    return id_prefix(seed)


def leak_problem(row: Mapping[str, Any], prefix: str | None, id_key: str = "scenario_id") -> str | None:
    """Why a training row is an evaluation row (None when it is not): its split, or its board id's prefix."""
    split, sid = row.get("split"), row.get(id_key)
    if split in EVAL_SPLITS:
        return f"split={split!r}"
    if prefix and isinstance(sid, str) and sid.startswith(prefix):
        return f"{id_key}={sid!r} is an evaluation board (prefix {prefix!r})"
    return None


def refuse_eval_split(split: str, what: str = "dataset_train_split") -> None:
    """A training split that is an evaluation split is a SplitLeakError naming the setting and the fix."""
    if split in EVAL_SPLITS:
        raise SplitLeakError(f"{what}={split!r} is the evaluation split. Fix: train on the train split "
                             f"({what}: train).")
