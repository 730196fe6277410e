"""The local dataset folder, in exactly the Hub repo layout:

  README.md                         card + YAML (configs, data_files, features)
  provenance.json                   what built each config
  data/<config>/<split>-00000.parquet

Nothing lost: one writer at a time holds `.NAME.lock` beside the folder; each
run writes into its own hidden `.NAME.staging-*` folder, which becomes
`.NAME.new` when complete; then NAME -> `.NAME.old`, `.NAME.new` -> NAME, and
`.NAME.old` is deleted. The next run finishes a swap a kill interrupted.
"""

from __future__ import annotations

import glob
import json
import os
import secrets
import shutil
import sys
from collections.abc import Iterable
from contextlib import contextmanager, suppress
from pathlib import Path

from poolbench_data.core.shutdown import stop_if_requested, terminate_as_exit
from poolbench_data.hub.features import CONFIGS, features

ROWS_PER_SHARD = {"scenarios": 2000, "traces": 5000, "pairs": 5000, "sft": 5000, "sft_tools": 5000, "pairs_tools": 5000,
                  "episodes": 500,  # an episode row holds up to 15 shots' events
                  "sft_runout": 5000, "pairs_position": 5000,
                  "sft_runout_tools": 5000, "pairs_position_tools": 5000}
PARQUET_OPTIONS = dict(compression="zstd", compression_level=9, use_dictionary=True, write_statistics=True)
LOCK, STAGING, NEW, OLD = ".lock", ".staging", ".new", ".old"  # .NAME<kind> beside the folder NAME


class FolderBusy(FileExistsError):
    """Another run holds the dataset folder's lock."""


def check_config(name: str) -> str:
    if name not in CONFIGS:
        raise ValueError(f"unknown config {name!r}; available configs: {', '.join(CONFIGS)}")
    return name


def arrow_schema(config: str):
    f = features(config)
    meta = {"huggingface": json.dumps({"info": {"features": f.to_dict()}}, sort_keys=True)}
    return f.arrow_schema.with_metadata(meta)


class ShardWriter:
    """Stream rows of one (config, split) into fixed-size parquet shards."""

    def __init__(self, root: Path, config: str, split: str, rows_per_shard: int | None = None):
        self.dir = Path(root) / "data" / check_config(config)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.config, self.split = config, split
        self.rows_per_shard = rows_per_shard or ROWS_PER_SHARD[config]
        self.schema = arrow_schema(config)
        self.buffer: list[dict] = []
        self.shards = 0
        self.rows = 0

    def add(self, row: dict) -> None:
        stop_if_requested()
        self.buffer.append(row)
        if len(self.buffer) >= self.rows_per_shard:
            self._flush()

    def extend(self, rows: Iterable[dict]) -> None:
        for r in rows:
            self.add(r)

    def _flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self.buffer and self.shards:
            return
        table = pa.Table.from_pylist(self.buffer, schema=self.schema)
        pq.write_table(table, self.dir / f"{self.split}-{self.shards:05d}.parquet", **PARQUET_OPTIONS)
        self.rows += len(self.buffer)
        self.shards += 1
        self.buffer = []

    def close(self) -> int:
        self._flush()
        return self.rows


def require_dataset(folder: Path, field: str = "--dataset_dir") -> Path:
    """The folder, if it is a built dataset folder (it has the card) whose shards
    all open. A swap an interrupted run left half done is finished first."""
    folder = Path(folder)
    check_output_path(folder, field)
    if folder.parent.is_dir():
        with folder_lock(folder, field):
            recover(folder)
    if not (folder / "README.md").is_file():
        raise FileNotFoundError(f"{field} {folder} is not a dataset folder; build it with builders/build_dataset.py")
    check_shards(folder, field)
    return folder


def check_shards(folder: Path, field: str = "--dataset_dir") -> None:
    """Every parquet shard's footer reads: a damaged shard is found before any
    work, not by a traceback after hours of generation."""
    import pyarrow.parquet as pq

    for path in sorted((Path(folder) / "data").rglob("*.parquet")):
        try:
            pq.read_metadata(path)
        except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid is a ValueError
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise ValueError(f"{field} {folder}: shard {path.relative_to(folder)} is damaged ({reason}); restore "
                             f"it from a copy (e.g. the Hub repo) or rebuild the folder") from None


def remove_config(root: Path, config: str) -> None:
    shutil.rmtree(Path(root) / "data" / check_config(config), ignore_errors=True)


def first_scenarios(folder: Path, split: str, n: int, flag: str) -> list[dict]:
    """The first n scenarios of `split` in board order (the starts of run-out data); one UserError naming --split
    where the split holds none, or `flag` (the count's) where it holds fewer than n."""
    from poolbench_data.core.errors import UserError

    scenarios = read_rows(folder, "scenarios", split)
    build = "`builders/build_dataset.py --train_n N`"
    if not scenarios:
        raise UserError(f"--split {split!r}: {folder} has no scenarios in that split to start run-outs from; give "
                        f"a split it holds (a train split: {build})")
    if len(scenarios) < n:
        raise UserError(f"{flag} {n}: {folder} holds {len(scenarios)} scenarios in split {split!r}; give at most "
                        f"{len(scenarios)}, or build more ({build})")
    return scenarios[:n]


def read_rows(root: Path, config: str, split: str) -> list[dict]:
    """Rows of an existing (config, split) in shard order."""
    import pyarrow.parquet as pq

    rows = []
    for path in sorted((Path(root) / "data" / config).glob(f"{split}-*.parquet")):
        rows.extend(pq.read_table(path).to_pylist())
    return rows


def layout(root: Path) -> dict[str, dict[str, list[str]]]:
    """{config: {split: [relative shard paths]}} of what the folder holds."""
    out: dict = {}
    for config in CONFIGS:
        d = Path(root) / "data" / config
        for path in sorted(d.glob("*.parquet")):
            split = path.name.rsplit("-", 1)[0]
            out.setdefault(config, {}).setdefault(split, []).append(path.relative_to(root).as_posix())
    return out


def read_provenance(root: Path) -> dict:
    p = Path(root) / "provenance.json"
    return json.loads(p.read_text()) if p.exists() else {}


def write_provenance(root: Path, prov: dict) -> None:
    (Path(root) / "provenance.json").write_text(json.dumps(prov, indent=2, sort_keys=True) + "\n")


def sibling(out: Path, kind: str) -> Path:
    """The hidden folder (or lock file) of one kind that belongs to `out`."""
    return out.parent / f".{out.name}{kind}"


def check_output_path(out: Path, field: str) -> None:
    """A dataset folder can live at `out`: refused before any work otherwise."""
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"{field} {out} is a file, not a dataset folder; move it away or choose another "
                                 f"{field}")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise NotADirectoryError(f"{field} {out}: {parent} is a file, not a folder; choose another {field}")
            return


@contextmanager
def folder_lock(out: Path, field: str, wait: float = 0.0):
    """Hold `.NAME.lock` beside `out`: one writer per dataset folder. A held
    lock is refused after `wait` seconds instead of queueing forever behind
    a build that may take hours."""
    import filelock

    lock_path = sibling(out, LOCK)
    try:
        # Creating the file is the write probe: filelock would take a failed create for contention.
        os.close(os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644))
    except OSError as e:
        raise PermissionError(f"{field} {out}: cannot write in {out.parent} ({e.strerror}); choose a writable "
                              f"{field}") from None
    lock = filelock.FileLock(lock_path, timeout=wait)
    try:
        lock.acquire()
    except filelock.Timeout:
        raise FolderBusy(f"another build is writing {out}; wait for it or use another {field}") from None
    try:
        yield
    finally:
        if isinstance(lock, filelock.UnixFileLock):
            # Unlinked while still held, so a waiter that opened this inode sees it is dead and retries
            # (filelock checks st_nlink): no lock files pile up beside the datasets.
            with suppress(OSError):
                lock_path.unlink()
        lock.release()


def recover(out: Path) -> None:
    """Finish what a killed run left beside `out`; the caller holds the lock, so
    that run is gone. `.NAME.new` is complete by name: its swap is finished,
    never undone. Nothing that may be the only copy of a dataset is deleted."""
    new, old, legacy = sibling(out, NEW), sibling(out, OLD), sibling(out, STAGING)
    for p in (new, old, legacy):
        if p.exists() and not p.is_dir():
            raise FileExistsError(f"{p} is a file where a build keeps a folder (older versions move a file "
                                  f"at {out} there); move it away, e.g. `mv {p} {out}.file`, and rerun")
    for stale in out.parent.glob(glob.escape(f".{out.name}{STAGING}-") + "*"):
        shutil.rmtree(stale)  # never renamed to .new, so never complete
    if new.is_dir() and out.exists() and old.exists():
        raise FileExistsError(f"{out}, {new} and {old} all exist, which no interrupted build leaves; keep the "
                              f"one you want as {out} and remove the other two")
    if new.is_dir():
        _note(f"finishing the swap a killed run left: {new} -> {out}")
    elif old.is_dir() and not out.exists():
        # Only older versions' two-rename swap leaves this; its staging folder may be incomplete, so roll back.
        old.rename(out)
        _note(f"restored {out} from {old}")
    _finish_swap(out)
    if legacy.is_dir():
        _note(f"{legacy} is left over from an older version's swap and may hold a newer complete build; to use it: "
              f"`mv {out} {out}.prev && mv {legacy} {out}`, else `rm -r {legacy}`")


def _note(text: str) -> None:
    print(f"note: {text}", file=sys.stderr)


def _finish_swap(out: Path) -> None:
    new, old = sibling(out, NEW), sibling(out, OLD)
    if new.is_dir():
        if out.exists():
            out.rename(old)
        new.rename(out)
    if old.is_dir() and out.is_dir():
        shutil.rmtree(old)


def _swap_into_place(staging: Path, out: Path) -> None:
    # The first rename is the commit point: a run killed after it is finished by the next one (recover).
    staging.rename(sibling(out, NEW))
    _finish_swap(out)


@contextmanager
def staged_folder(out: Path, *, overwrite: bool = False, update: bool = False, field: str = "--output_dir",
                  wait: float = 0.0):
    """Yield a staging folder that replaces `out` only if the block succeeds.

    overwrite: replace an existing folder. update: start from a copy of it
    (to add or replace one config). Otherwise an existing folder is refused.
    The folder's lock is held throughout; each run stages in its own folder.
    """
    out = Path(out)
    if out.is_symlink():
        # The folder the link names is the dataset: replace it there, and the link still leads to it.
        out = out.resolve()
    check_output_path(out, field)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise PermissionError(f"{field} {out}: cannot create {out.parent} ({e.strerror}); choose another {field}") \
            from None
    with folder_lock(out, field, wait):
        recover(out)
        if out.exists() and not (overwrite or update):
            raise FileExistsError(f"{field} {out} already exists; pass --overwrite to replace it")
        if update and not out.exists():
            raise FileNotFoundError(f"dataset folder {out} does not exist; build it first (builders/build_dataset.py)")
        staging = sibling(out, f"{STAGING}-{os.getpid()}-{secrets.token_hex(4)}")
        with terminate_as_exit():
            try:
                if update:
                    shutil.copytree(out, staging)
                else:
                    staging.mkdir()
                yield staging
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
        _swap_into_place(staging, out)
