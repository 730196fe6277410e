"""The training scripts at the command line: a mistake in the recipe, the data or the model path, found before
training, is one message and exit 2, never a traceback (issue 22 item 12); what fails during training keeps its
traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")

REPO = Path(__file__).resolve().parents[1]
RECIPES = {"sft": "sft-smollm2-135m-cpu.yaml", "dpo": "smollm2-135m-cpu.yaml", "grpo": "grpo-smollm2-135m-cpu-smoke.yaml"}


def run(script: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "training" / f"{script}.py"), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(RECIPES))
def test_mistakes_are_one_message_and_exit_2(script, tmp_path):
    recipe = str(REPO / "training" / "recipes" / RECIPES[script])
    bad_key = tmp_path / "typo.yaml"
    bad_key.write_text((REPO / "training" / "recipes" / RECIPES[script]).read_text() + "\nlearning_rat: 1.0\n")
    cases = [
        (["--config", str(tmp_path / "missing.yaml")], "missing.yaml"),
        (["--config", str(bad_key)], "learning_rat"),
        (["--config", recipe, "--dataset_name", "no-such-folder", "--output_dir", str(tmp_path / "o")],
         "no-such-folder"),
    ]
    for args, words in cases:
        done = run(script, *args, cwd=tmp_path)
        assert done.returncode == 2, done.stderr[-2000:]
        assert "Traceback" not in done.stderr and words in done.stderr, done.stderr[-2000:]
        assert "\nerror: " in "\n" + done.stderr  # a line of its own, after the scripts' logs
