"""Merge K shard folders (build_benchmark(shard=(I, K))) into one dataset
folder: the same bytes a one-piece build writes.

Shards may be built anywhere (any scheduler, any machine); the merge refuses
a set that is incomplete, has a shard twice, or mixes seeds, settings or
versions, naming the shard folder at fault.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from poolbench_data.boards.splits import scenario_id
from poolbench_data.hub.build import EVAL_SPLIT, SHARD_FILE, results_table, shard_range
from poolbench_data.hub.card import write_card
from poolbench_data.hub.episodes import EpisodePlan, episode_id
from poolbench_data.hub.folder import ShardWriter, check_shards, read_rows, staged_folder, write_provenance

CONFIGS = ("scenarios", "traces")
SHARD_KEYS = ("shard", "of", "ranges", "benchmark")
SETTINGS_KEYS = ("eval_n", "eval_seed", "train_n", "train_seed", "players")


def read_shard(folder: Path) -> dict:
    path = Path(folder) / SHARD_FILE
    if not path.is_file():
        raise FileNotFoundError(f"--shards_dir: {folder} is not a shard folder (no {SHARD_FILE}); build shards "
                                f"with builders/build_dataset.py --shard I/K")
    check_shards(folder, "--shards_dir")
    try:
        meta = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"--shards_dir: {path} is not valid JSON ({exc}); rebuild this shard") from None
    missing = [k for k in SHARD_KEYS if not isinstance(meta, dict) or k not in meta]
    if not missing:
        bench = meta["benchmark"] if isinstance(meta["benchmark"], dict) else {}
        missing = [f"benchmark.{k}" for k in ("versions", "settings") if not isinstance(bench.get(k), dict)]
    if not missing:
        missing = [f"benchmark.settings.{k}" for k in SETTINGS_KEYS if k not in meta["benchmark"]["settings"]]
    if missing:
        raise ValueError(f"--shards_dir: {path} lacks {', '.join(missing)}; rebuild this shard with "
                         f"builders/build_dataset.py --shard I/K")
    return meta


def configs_of(settings: dict) -> tuple[str, ...]:
    return (*CONFIGS, "episodes") if settings.get("episodes") else CONFIGS


def check_shard_rows(folder: Path, config: str, split: str, rows: list[dict], meta: dict) -> None:
    """The rows a shard folder holds are exactly those its shard.json promises: its index range's boards,
    each once, one trace of each player for each board, and its range of each game's episodes."""
    settings = meta["benchmark"]["settings"]
    seed = settings["eval_seed"] if split == EVAL_SPLIT else settings["train_seed"]
    ids = [scenario_id(seed, k) for k in range(*meta["ranges"][split])]
    if config == "scenarios":
        got, want = [r.get("id") for r in rows], ids
    elif config == "episodes":
        plan = EpisodePlan.from_settings(settings["episodes"])
        n = settings["eval_n"] if split == EVAL_SPLIT else settings["train_n"]
        lo, hi = shard_range(plan.count(n), (meta["shard"], meta["of"]))
        got = [(r.get("id"), r.get("player")) for r in rows]
        want = [(episode_id(g, seed, k), p) for g, p, k in plan.keys(lo, hi)]
    else:
        got = [(r.get("scenario_id"), r.get("player")) for r in rows]
        want = [(i, p) for i in ids for p in settings["players"]]
    if sorted(got, key=str) == sorted(want, key=str):
        return
    extra = len(got) - len(set(got)) + len(set(got) - set(want))
    raise ValueError(f"--shards_dir: {folder} holds {len(got)} {config}/{split} rows where its {SHARD_FILE} promises "
                     f"{len(want)} ({len(set(want) - set(got))} missing, {extra} duplicated or foreign); rebuild "
                     f"this shard")


def _comparable(benchmark: dict) -> dict:
    # The platform string names the machine, not the software: shards may come from different hosts.
    versions = {k: v for k, v in benchmark["versions"].items() if k != "platform"}
    return {"versions": versions, "settings": benchmark["settings"]}


def check_shard_set(metas: dict[Path, dict]) -> list[Path]:
    """The shard folders in shard order, once all K are present and consistent."""
    first_dir, first = next(iter(metas.items()))
    k = first["of"]
    by_index: dict[int, Path] = {}
    for folder, meta in metas.items():
        if meta["of"] != k:
            raise ValueError(f"--shards_dir: {folder} is shard {meta['shard']}/{meta['of']} but {first_dir} is "
                             f"one of {k}; merge shards of one build only")
        if _comparable(meta["benchmark"]) != _comparable(first["benchmark"]):
            raise ValueError(f"--shards_dir: {folder} was built with other seeds, settings or versions than "
                             f"{first_dir}; rebuild it with the same arguments and environment")
        if meta["shard"] in by_index:
            raise ValueError(f"--shards_dir: shard {meta['shard']}/{k} appears twice ({by_index[meta['shard']]} "
                             f"and {folder}); keep one")
        by_index[meta["shard"]] = folder
    missing = sorted(set(range(k)) - set(by_index))
    if missing:
        raise ValueError(f"--shards_dir: shard(s) {missing} of {k} missing; build them with --shard I/{k}")
    settings = first["benchmark"]["settings"]
    for i, folder in sorted(by_index.items()):
        for split, n in ((EVAL_SPLIT, settings["eval_n"]), ("train", settings["train_n"])):
            if n and metas[folder]["ranges"].get(split) != list(shard_range(n, (i, k))):
                raise ValueError(f"--shards_dir: {folder} does not hold the {split} rows of shard {i}/{k}; "
                                 f"rebuild it")
    return [by_index[i] for i in range(k)]


def merge_shards(shard_dirs: Sequence[Path], out: Path, *, overwrite: bool = False) -> dict:
    if not shard_dirs:
        raise ValueError("--shards_dir holds no shard folders; build them with builders/build_dataset.py --shard I/K")
    metas = {Path(d): read_shard(Path(d)) for d in shard_dirs}
    ordered = check_shard_set(metas)
    first = metas[ordered[0]]["benchmark"]
    platforms = sorted({metas[d]["benchmark"]["versions"]["platform"] for d in ordered})
    benchmark = {**first, "versions": {**first["versions"], "platform": "; ".join(platforms)}}
    settings = benchmark["settings"]
    counts, test_traces = {}, []
    with staged_folder(out, overwrite=overwrite) as root:
        for split, n in ((EVAL_SPLIT, settings["eval_n"]), ("train", settings["train_n"])):
            if not n:
                continue
            counts[split] = {}
            for config in configs_of(settings):
                writer = ShardWriter(root, config, split)
                for d in ordered:  # rows one shard at a time: memory stays one shard's worth
                    rows = read_rows(d, config, split)
                    check_shard_rows(d, config, split, rows, metas[d])
                    writer.extend(rows)
                    if config == "traces" and split == EVAL_SPLIT:
                        test_traces.extend(rows)
                counts[split][config] = writer.close()
        write_provenance(root, {"benchmark": benchmark,
                                "results_table": results_table(test_traces, settings["players"])})
        write_card(root)
    return counts
