"""The local dataset folder, in exactly the Hub repo layout:

  README.md                         card + YAML (configs, data_files, features)
  provenance.json                   what built each config
  data/<config>/<split>-00000.parquet

Writes are staged in a hidden sibling folder and renamed into place at the
end, so an interrupted build never leaves a folder that looks complete.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from contextlib import contextmanager
from pathlib import Path

from poolbench_data.hub.features import CONFIGS, features

ROWS_PER_SHARD = {"scenarios": 2000, "traces": 5000, "pairs": 5000}
PARQUET_OPTIONS = dict(compression="zstd", compression_level=9, use_dictionary=True, write_statistics=True)


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
    """The folder, if it is a built dataset folder (it has the card)."""
    folder = Path(folder)
    if not (folder / "README.md").is_file():
        raise FileNotFoundError(f"{field} {folder} is not a dataset folder; build it with builders/build_dataset.py")
    return folder


def remove_config(root: Path, config: str) -> None:
    shutil.rmtree(Path(root) / "data" / check_config(config), ignore_errors=True)


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


@contextmanager
def staged_folder(out: Path, *, overwrite: bool = False, update: bool = False):
    """Yield a staging folder that replaces `out` only if the block succeeds.

    overwrite: replace an existing folder. update: start from a copy of it
    (to add or replace one config). Otherwise an existing folder is refused.
    A staging folder left by a crashed run is discarded: a rerun starts clean.
    """
    out = Path(out)
    if out.exists() and not (overwrite or update):
        raise FileExistsError(f"output folder {out} already exists; pass --overwrite to replace it")
    if update and not out.exists():
        raise FileNotFoundError(f"dataset folder {out} does not exist; build it first (builders/build_dataset.py)")
    staging = out.parent / f".{out.name}.staging"
    old = out.parent / f".{out.name}.old"
    shutil.rmtree(staging, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    if update:
        shutil.copytree(out, staging)
    else:
        staging.mkdir()
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)
    if out.exists():
        out.rename(old)
    staging.rename(out)
    shutil.rmtree(old, ignore_errors=True)
