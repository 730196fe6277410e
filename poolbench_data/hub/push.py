"""Push the dataset folder to the Hub as ONE commit.

The network boundary is thin on purpose: `plan_operations` is pure (local
files + the remote file list -> operations) and fully tested offline; only
`push` talks to the Hub (create the repo if missing, list it, one commit).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

KEEP_REMOTE = (".gitattributes",)  # the Hub creates it; never delete it


@dataclass
class PushArguments:
    """Hub options shared by every builder script."""

    push_to_hub: bool = field(default=False, metadata={"help": "Push the folder to the Hub as one commit."})
    repo_id: str = field(default="poolbench/poolbench", metadata={"help": "Hub dataset repo for --push_to_hub."})
    private: bool = field(default=False, metadata={"help": "Create the Hub repo as private."})
    dry_run: bool = field(default=False, metadata={"help": "With --push_to_hub: print the operations only."})

    def maybe_push(self, folder) -> None:
        if self.push_to_hub:
            push(folder, self.repo_id, private=self.private, dry_run=self.dry_run)


def local_files(folder: Path) -> list[str]:
    folder = Path(folder)
    if not (folder / "README.md").exists():
        raise FileNotFoundError(f"{folder} is not a built dataset folder (no README.md); build it first")
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def plan_operations(folder: Path, remote_files: list[str]):
    """Add every local file; delete remote files the folder no longer has
    (stale shards from a larger earlier build)."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    files = local_files(folder)
    ops = [CommitOperationAdd(path_in_repo=f, path_or_fileobj=str(Path(folder) / f)) for f in files]
    ops += [CommitOperationDelete(path_in_repo=f) for f in sorted(set(remote_files) - set(files))
            if f not in KEEP_REMOTE]
    return ops


def describe(ops) -> list[str]:
    from huggingface_hub import CommitOperationAdd

    return [f"{'add   ' if isinstance(op, CommitOperationAdd) else 'delete'} {op.path_in_repo}" for op in ops]


def push(folder: Path, repo_id: str, *, private: bool = False, token: str | None = None, dry_run: bool = False,
         commit_message: str = "Update PoolBench dataset", remote_files: list[str] | None = None) -> list[str]:
    """Push (or, with dry_run, only print) the one commit. The token comes from
    the standard places (HF_TOKEN, `hf auth login`) unless given."""
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    if dry_run:
        if remote_files is None:
            try:
                remote_files = api.list_repo_files(repo_id, repo_type="dataset")
            except Exception as e:  # offline, or the repo does not exist yet
                print(f"(remote file list unavailable: {type(e).__name__}; assuming an empty repo)")
                remote_files = []
        lines = describe(plan_operations(folder, remote_files))
        print(f"dry run: one commit to dataset {repo_id} ({'private' if private else 'public'}), "
              f"{len(lines)} operations")
        for line in lines:
            print("  " + line)
        return lines
    local_files(folder)  # fail before touching the network
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    remote = api.list_repo_files(repo_id, repo_type="dataset") if remote_files is None else remote_files
    ops = plan_operations(folder, remote)
    api.create_commit(repo_id, operations=ops, commit_message=commit_message, repo_type="dataset")
    return describe(ops)
