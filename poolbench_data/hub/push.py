"""Push the dataset folder to the Hub as ONE commit.

The network boundary is thin on purpose: `plan_operations` is pure (local
files + the remote file list -> operations) and fully tested offline; only
`push` talks to the Hub (create the repo if missing, list it, one commit),
and a dry run never does. Only the dataset's own files are ever added or
deleted: anything else in the folder (a stray token file, notes) stays local.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from poolbench_data.hub.features import CONFIGS

DATASET_ROOT_FILES = ("README.md", "eval.yaml", "provenance.json")
SHARD = re.compile(r"data/(?P<config>[^/]+)/\w+-\d{5}\.parquet")  # ShardWriter's names


@dataclass(frozen=True)
class PushArguments:
    """Hub options shared by every builder script."""

    push_to_hub: bool = field(default=False, metadata={"help": "Push the folder to the Hub as one commit."})
    repo_id: str = field(default="poolbench/poolbench", metadata={"help": "Hub dataset repo for --push_to_hub."})
    private: bool = field(default=False, metadata={"help": "Create the Hub repo as private."})
    dry_run: bool = field(default=False, metadata={"help": "With --push_to_hub: print the operations only "
                                                            "(no network call)."})

    def __post_init__(self):
        check_repo_id(self.repo_id)  # at parse time, not after the whole build (and pushed or not: a typo is a typo)

    def maybe_push(self, folder) -> None:
        if self.push_to_hub:
            push(folder, self.repo_id, private=self.private, dry_run=self.dry_run)


class PushFailed(ConnectionError):
    """The Hub could not be reached or refused the commit; the built folder is kept."""


def check_repo_id(repo_id: str) -> str:
    """A Hub dataset id `owner/name`, checked offline by huggingface_hub's own rule."""
    from poolbench_data.report.eval_results import check_repo_id as check_hub_id

    return check_hub_id(repo_id, "--repo_id", "you/poolbench")


def is_dataset_file(path: str) -> bool:
    """README.md, eval.yaml, provenance.json or a shard of a known config."""
    shard = SHARD.fullmatch(path)
    return path in DATASET_ROOT_FILES or bool(shard and shard["config"] in CONFIGS)


def _all_files(folder: Path) -> list[str]:
    folder = Path(folder)
    if not (folder / "README.md").exists():
        raise FileNotFoundError(f"{folder} is not a built dataset folder (no README.md); build it first")
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def local_files(folder: Path) -> list[str]:
    """The dataset's own files in the folder: exactly what a push uploads."""
    return [f for f in _all_files(folder) if is_dataset_file(f)]


def skipped_files(folder: Path) -> list[str]:
    """Files in the folder a push leaves out; a hidden folder (.git/) is one entry."""
    out = set()
    for f in _all_files(folder):
        if is_dataset_file(f):
            continue
        parts = f.split("/")
        hidden = next((i for i, part in enumerate(parts[:-1]) if part.startswith(".")), None)
        out.add(f if hidden is None else "/".join(parts[:hidden + 1]) + "/")
    return sorted(out)


def plan_operations(folder: Path, remote_files: list[str]):
    """Add every dataset file; delete remote dataset files the folder no longer
    has (stale shards from a larger build). Other remote files stay."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    files = local_files(folder)
    ops = [CommitOperationAdd(path_in_repo=f, path_or_fileobj=str(Path(folder) / f)) for f in files]
    ops += [CommitOperationDelete(path_in_repo=f) for f in sorted(set(remote_files) - set(files))
            if is_dataset_file(f)]
    return ops


def describe(ops) -> list[str]:
    from huggingface_hub import CommitOperationAdd

    return [f"{'add   ' if isinstance(op, CommitOperationAdd) else 'delete'} {op.path_in_repo}" for op in ops]


def _print_skipped(folder: Path) -> None:
    skipped = skipped_files(folder)
    if skipped:
        print(f"not pushed ({len(skipped)}, not dataset files): {', '.join(skipped)}")


def push(folder: Path, repo_id: str, *, private: bool = False, token: str | None = None, dry_run: bool = False,
         commit_message: str = "Update PoolBench dataset", remote_files: list[str] | None = None) -> list[str]:
    """Push (or, with dry_run, only print) the one commit. The token comes from
    the standard places (HF_TOKEN, `hf auth login`) unless given. A Hub that cannot be reached or refuses is
    one PushFailed naming the repo and the kept folder."""
    check_repo_id(repo_id)
    if dry_run:
        # No network call at all, not even an authenticated listing: a dry run must work offline and leak nothing.
        against = "the given remote file list" if remote_files is not None else (
            "no network call: assuming an empty repo, so no stale files are deleted")
        lines = describe(plan_operations(folder, remote_files or []))
        print(f"dry run: one commit to dataset {repo_id} ({'private' if private else 'public'}), "
              f"{len(lines)} operations ({against})")
        for line in lines:
            print("  " + line)
        _print_skipped(folder)
        return lines
    from huggingface_hub import HfApi

    local_files(folder)  # fail before touching the network
    _print_skipped(folder)
    api = HfApi(token=token)
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        remote = api.list_repo_files(repo_id, repo_type="dataset") if remote_files is None else remote_files
        ops = plan_operations(folder, remote)
        api.create_commit(repo_id, operations=ops, commit_message=commit_message, repo_type="dataset")
    except Exception as exc:  # noqa: BLE001 - HTTP, connection, offline, auth: the same advice for each
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise PushFailed(f"push to dataset {repo_id} failed ({type(exc).__name__}: {reason}); nothing was "
                         f"committed and the built folder {folder} is kept: push it later with "
                         f"`python -c \"from poolbench_data.hub.push import push; push('{folder}', '{repo_id}')\"`"
                         ) from exc
    return describe(ops)
