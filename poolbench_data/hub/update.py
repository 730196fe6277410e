"""Add or replace rows in one (config, split) of an existing dataset folder,
staged like a build (same lock, same swap): the folder is replaced only when
everything is written."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from poolbench_data.hub.card import write_card
from poolbench_data.hub.folder import (ShardWriter, read_provenance, read_rows, remove_config, staged_folder,
                                      write_provenance)

# Another update holds the lock for seconds: wait that long. A build holding it
# for hours is refused after this instead of queueing forever.
UPDATE_WAIT_S = 30.0


def replace_rows(folder: Path, config: str, split: str, rows: Sequence[dict], drop: Callable[[dict], bool],
                 provenance_key: str | None = None, provenance: dict | None = None) -> int:
    """Keep existing rows except those `drop` selects, append `rows`; rerunning
    the same evaluation therefore replaces its rows instead of duplicating them."""
    with staged_folder(folder, update=True, field="--dataset_dir", wait=UPDATE_WAIT_S) as root:
        kept = [r for r in read_rows(root, config, split) if not drop(r)]
        for old in (Path(root) / "data" / config).glob(f"{split}-*.parquet"):
            old.unlink()
        w = ShardWriter(root, config, split)
        w.extend(kept)
        w.extend(rows)
        n = w.close()
        if provenance_key:
            prov = read_provenance(root)
            prov.setdefault("evaluations", {})[provenance_key] = provenance
            write_provenance(root, prov)
        write_card(root)
    return n


def write_config(folder: Path, config: str, splits: dict[str, Sequence[dict]], provenance_key: str,
                 provenance: dict) -> dict[str, int]:
    """Replace a whole config (e.g. `pairs`) in an existing folder."""
    counts = {}
    with staged_folder(folder, update=True, field="--dataset_dir", wait=UPDATE_WAIT_S) as root:
        remove_config(root, config)
        for split, rows in splits.items():
            w = ShardWriter(root, config, split)
            w.extend(rows)
            counts[split] = w.close()
        prov = read_provenance(root)
        prov[provenance_key] = provenance
        write_provenance(root, prov)
        write_card(root)
    return counts
