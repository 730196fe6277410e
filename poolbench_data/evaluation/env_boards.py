"""The boards an environment built on PoolBench plays (the verifiers environment's `load_environment`): a
dataset folder's split, or `n` boards of a base seed, under the project's split rules (boards.splits): an
environment built for training refuses the evaluation split, the evaluation seed and any evaluation board.
Every mistake is a ValueError naming the argument, raised before any board is generated or engine started."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from poolbench_data.boards.generate import DEFAULT_N
from poolbench_data.boards.splits import (
    EVAL_SEED,
    SplitLeakError,
    eval_id_prefix,
    leak_problem,
    refuse_eval_split,
)
from poolbench_data.core.vocab import MAX_SEED

TRAIN_SEED = 1  # the train split's base seed that builders/build_dataset.py and training/loop.py default to
BOARD_COLUMNS = ("id", "category", "seed", "cue_ball", "balls")


@dataclass(frozen=True)
class BoardSource:
    """Where the boards come from: `dataset_dir` + `split` (every board of the split, or its first `n`), else
    `n` boards of base seed `seed` (default: the evaluation set's, or TRAIN_SEED when `train`)."""

    dataset_dir: str = ""
    split: str = "test"
    n: int | None = None
    seed: int | None = None
    train: bool = False

    def check(self) -> BoardSource:
        """This source, checked (cheap: reads the split's ids at most, generates nothing)."""
        if self.n is not None and (isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1):
            raise ValueError(f"n must be a whole number >= 1 (got {self.n!r}); leave it out for every board")
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, int)
                                      or not 0 <= self.seed <= MAX_SEED):
            raise ValueError(f"seed must be a whole number in [0, 2**63 - 1] (got {self.seed!r})")
        if self.dataset_dir:
            if self.seed is not None:
                raise ValueError("seed is read off the dataset split's board ids; give dataset_dir and split, "
                                 "or n and seed, not both")
            self._dataset_rows()
            return self
        if self.split != "test":
            raise ValueError(f"split {self.split!r} is read only with dataset_dir; add dataset_dir, or leave split "
                             "out")
        if self.train and self.base_seed == EVAL_SEED:
            raise SplitLeakError(f"seed {EVAL_SEED} is the evaluation boards' seed, and this environment is built "
                                 f"for training (train=True). Fix: train on another seed (e.g. seed={TRAIN_SEED}), "
                                 "or build it for evaluation (train=False)")
        return self

    @property
    def base_seed(self) -> int:
        return self.seed if self.seed is not None else TRAIN_SEED if self.train else EVAL_SEED

    def describe(self) -> str:
        if self.dataset_dir:
            return f"{self.dataset_dir} split {self.split!r}" + (f" (first {self.n})" if self.n else "")
        return f"{self.n or DEFAULT_N} boards of seed {self.base_seed}"

    def _dataset_rows(self) -> list[dict]:
        from poolbench_data.hub.folder import layout, read_rows

        folder = Path(self.dataset_dir)
        if not (folder / "README.md").is_file():
            what = "does not exist" if not folder.exists() else "is not a dataset folder (no README.md)"
            raise ValueError(f"dataset_dir {self.dataset_dir} {what}; build one with builders/build_dataset.py, or "
                             "give n and seed instead")
        if self.train:
            refuse_eval_split(self.split, "split")
        held = sorted(layout(folder).get("scenarios", {}))
        if self.split not in held:
            raise ValueError(f"split {self.split!r}: dataset_dir {self.dataset_dir} holds no scenarios of it; give a "
                             f"split it holds ({', '.join(held) or 'none: rebuild it with builders/build_dataset.py'})")
        rows = sorted(read_rows(folder, "scenarios", self.split), key=lambda r: r["id"])
        if not rows:
            raise ValueError(f"split {self.split!r} of dataset_dir {self.dataset_dir} holds no boards; give another "
                             f"split ({', '.join(held)})")
        if self.train:
            prefix = eval_id_prefix(folder)
            leaks = [p for r in rows if (p := leak_problem({"scenario_id": r["id"]}, prefix))]
            if leaks:
                raise SplitLeakError(f"split {self.split!r} of dataset_dir {self.dataset_dir} holds evaluation "
                                     f"boards ({leaks[0]}), and this environment is built for training. Fix: give "
                                     "a split of training boards")
        return rows[:self.n] if self.n else rows

    def boards(self) -> Iterator:
        """The Scenarios, in board order, each made as it is read: the first of n = 10**9 comes at once."""
        from poolbench_data.boards.generate import iter_scenarios
        from poolbench_data.core.records import Scenario

        if self.dataset_dir:
            return (Scenario.from_row({c: r[c] for c in BOARD_COLUMNS}) for r in self._dataset_rows())
        return iter_scenarios(self.n or DEFAULT_N, self.base_seed)
