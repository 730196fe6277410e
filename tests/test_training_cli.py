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


def _module(script: str):
    """training/<script>.py loaded as a module (the folder is scripts, not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"training_cli_{script}", REPO / "training" / f"{script}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(RECIPES))
def test_mistakes_are_one_message_and_exit_2(script, tmp_path, capsys, monkeypatch):
    from poolbench_data.finetune.common import command_line

    recipe = str(REPO / "training" / "recipes" / RECIPES[script])
    bad_key = tmp_path / "typo.yaml"
    bad_key.write_text((REPO / "training" / "recipes" / RECIPES[script]).read_text() + "\nlearning_rat: 1.0\n")
    cases = [
        (["--config", str(tmp_path / "missing.yaml")], "missing.yaml"),
        (["--config", str(bad_key)], "learning_rat"),
        (["--config", recipe, "--dataset_name", "no-such-folder", "--output_dir", str(tmp_path / "o")],
         "no-such-folder"),
    ]
    # At the command line, a process of its own (the script's __main__, its exit status, its stderr), the mistake
    # found last: after the recipe is read and the scripts have logged.
    args, words = cases[-1]
    done = run(script, *args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and words in done.stderr, done.stderr[-2000:]
    assert "\nerror: " in "\n" + done.stderr  # a line of its own, after the scripts' logs
    # The others through the same entry, `command_line(main)`, in this process.
    module = _module(script)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [str(REPO / "training" / f"{script}.py")])
    for args, words in cases[:-1]:
        assert command_line(lambda: module.main(args)) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and words in err and "\nerror: " in "\n" + err, err[-2000:]
