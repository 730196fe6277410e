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
RECIPES = {"sft": "sft-smollm2-135m-cpu.yaml", "dpo": "dpo-smollm2-135m-cpu.yaml", "grpo": "grpo-smollm2-135m-cpu-smoke.yaml"}


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
    # Every script's __main__ is the same line: its exit status is `command_line(main)`'s.
    assert (REPO / "training" / f"{script}.py").read_text().rstrip().endswith(
        'if __name__ == "__main__":\n    sys.exit(command_line(main))')
    if script == "sft":
        # At the command line, a process of its own (the script's __main__, its exit status, its stderr), the
        # mistake found last: after the recipe is read and the scripts have logged. One script: the others'
        # __main__ is the same line, and their mistakes go through the same entry below.
        args, words = cases[-1]
        done = run(script, *args, cwd=tmp_path)
        assert done.returncode == 2, done.stderr[-2000:]
        assert "Traceback" not in done.stderr and words in done.stderr, done.stderr[-2000:]
        assert "\nerror: " in "\n" + done.stderr  # a line of its own, after the scripts' logs
        cases = cases[:-1]
    # The others through the same entry, `command_line(main)`, in this process.
    module = _module(script)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [str(REPO / "training" / f"{script}.py")])
    for args, words in cases:
        assert command_line(lambda: module.main(args)) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and words in err and "\nerror: " in "\n" + err, err[-2000:]


def _recipe(tmp_path: Path, script: str, extra: bytes = b"", **settings) -> Path:
    """The script's recipe with `settings` changed and `extra` appended as written."""
    import yaml

    values = {**yaml.safe_load((REPO / "training" / "recipes" / RECIPES[script]).read_text()), **settings}
    path = tmp_path / f"{script}-recipe.yaml"
    path.write_bytes(yaml.safe_dump(values).encode() + extra)
    return path


# What a recipe must not be, and the words of its one line: each is found before anything loads, where TRL would
# take it silently (an alias, a key given twice, a list for an int, a choice that is none) or with a traceback.
RECIPE_MISTAKES = {
    "wrong-type": ({"per_device_train_batch_size": [1, 2]}, b"",
                   "per_device_train_batch_size is [1, 2], expected int"),
    "alias": ({}, b"max_grad_norm: &e 1.0\nweight_decay: *e\n", "uses a YAML anchor or alias"),
    "duplicate-key": ({}, b"learning_rate: 1.0\n", "gives 'learning_rate' twice"),  # the recipe sets it too
    "not-utf8": ({}, b"# caf\xe9\n", "is not UTF-8 text (byte 0xe9"),
    "not-a-choice": ({"lr_scheduler_type": "cosine_typo"}, b"", "lr_scheduler_type is 'cosine_typo'; give one of"),
}


def _main(script: str, args: list[str]) -> int:
    """The script's entry (`command_line(main)`) on `args`, in this process: its exit status."""
    from poolbench_data.finetune.common import command_line

    module = _module(script)
    try:
        return command_line(lambda: module.main(args))
    except SystemExit as e:  # the parser's own refusal (one_line_error)
        return e.code


@pytest.mark.parametrize("case", sorted(RECIPE_MISTAKES))
def test_a_recipe_mistake_names_its_setting_before_anything_loads(case, tmp_path, capsys, monkeypatch):
    """With a dataset that does not exist: the recipe's own mistake is the one reported, not the dataset's
    (another field's)."""
    settings, extra, words = RECIPE_MISTAKES[case]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [str(REPO / "training" / "sft.py")])
    recipe = _recipe(tmp_path, "sft", extra, **settings)
    assert _main("sft", ["--config", str(recipe), "--dataset_name", "nowhere"]) == 2
    err = capsys.readouterr().err
    assert words in err and "nowhere" not in err and len(err.strip().splitlines()) == 1, err[-2000:]


@pytest.mark.parametrize("script", sorted(RECIPES))
def test_a_folder_a_second_config_and_a_wrong_type_are_named(script, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [str(REPO / "training" / f"{script}.py")])
    recipe = str(REPO / "training" / "recipes" / RECIPES[script])
    for args, words in [(["--config", str(tmp_path)], f"--config {tmp_path} is a folder"),
                        (["--config", recipe, "--config", recipe], "argument --config: given twice"),
                        (["--config", str(_recipe(tmp_path, script, seed=4.5))], "seed is 4.5, expected int")]:
        code = _main(script, [*args, "--dataset_name", "nowhere"])
        err = capsys.readouterr().err
        assert code == 2 and words in err and len(err.strip().splitlines()) == 1, (args, err[-2000:])
