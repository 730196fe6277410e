"""The wheel works without the repository: built, installed non-editable in a
fresh venv, it builds a dataset (the card template travels inside it). That
venv starts with an empty numba cache, so it also shows that a process which
compiles pooltool cold simulates a shot as one that loads it from the cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHOT = Path(__file__).with_name("one_shot.py")  # simulates a shot and prints its result


@pytest.mark.slow
def test_wheel_installed_non_editable_builds_a_dataset(tmp_path):
    uv = Path(sys.executable).with_name("uv")
    env = {**os.environ, "UV_LINK_MODE": "hardlink", "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    env.pop("PYTHONPATH", None)

    def run(*cmd, cwd=tmp_path):
        done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True)
        assert done.returncode == 0, f"{cmd}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done.stdout

    run(uv, "build", "--wheel", "--out-dir", tmp_path / "dist", ROOT, cwd=ROOT)
    (wheel,) = (tmp_path / "dist").glob("poolbench_data-*.whl")
    import zipfile

    assert "poolbench.py" in zipfile.ZipFile(wheel).namelist()  # the verifiers taskset module, top level
    run(uv, "venv", "-q", "--python", sys.executable, tmp_path / "venv")
    py = tmp_path / "venv" / "bin" / "python"
    run(uv, "pip", "install", "-q", "--python", py, "--override", ROOT / "requirements" / "overrides.txt", wheel)
    where = run(py, "-c", "import poolbench_data; print(poolbench_data.__file__)")
    assert str(tmp_path / "venv") in where  # the wheel, not the checkout
    cold = run(py, SHOT)  # the numba cache (NUMBA_CACHE_DIR) is empty: pooltool compiles here
    assert cold.startswith("ok ") and run(py, SHOT) == cold  # the second process loads it from the cache
    out = tmp_path / "ds"
    run(py, ROOT / "builders" / "build_dataset.py", "--output_dir", out, "--eval_n", "2", "--train_n", "0",
        "--workers", "1")
    card = (out / "README.md").read_text()
    assert "configs:" in card and "PoolBench" in card and (out / "eval.yaml").is_file()
    assert sorted(p.name for p in (out / "data").iterdir()) == ["episodes", "scenarios", "traces"]
