"""Every shipped recipe parses with the script its header names, reads a config the builders write, and
points at files that exist: a recipe with a misspelt key, a moved template or a config nobody builds fails
here, not minutes into a run. New recipes are covered as they are added."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("trl")

from poolbench_data.hub.features import CONFIGS  # noqa: E402
from test_tool_sft import _load  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RECIPES = sorted((REPO / "training" / "recipes").glob("*.yaml"))
SCRIPTS: dict = {}


def _script(name: str):
    if name not in SCRIPTS:
        SCRIPTS[name] = _load(f"training/{name}")
    return SCRIPTS[name]


def test_the_recipes_are_found():
    assert len(RECIPES) >= 9


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.stem)
def test_every_recipe_parses_with_its_script(recipe):
    script = re.search(r"training/(sft|dpo|grpo)\.py", recipe.read_text())
    assert script, f"{recipe.name}: its header names no training script"
    # bf16 needs a GPU at parse time; everything else is checked as written.
    gpu = ["--bf16", "false", "--use_cpu", "true"] if "gpu" in recipe.stem else []
    script_args, training_args, model_args = _script(script.group(1)).make_parser().parse_args_and_config(
        args=["--config", str(recipe), *gpu])
    assert script_args.dataset_config in CONFIGS, script_args.dataset_config
    for path in (getattr(training_args, "chat_template_path", None), getattr(script_args, "tool_chat_template", None)):
        assert path is None or (REPO / path).is_file(), path
    assert training_args.seed is not None and training_args.output_dir
    if script.group(1) in ("sft", "dpo"):
        assert training_args.max_length and training_args.max_length >= 2048  # a PoolBench prompt is ~1,450 tokens


@pytest.mark.parametrize("name", ["sft", "dpo", "grpo"])
def test_a_misspelt_recipe_key_is_named_before_anything_is_built(name, tmp_path, capsys):
    # Alone in a recipe, the typo would surface as transformers' bf16/use_cpu error (TRL builds the configs
    # before it looks for unknown keys), which names neither the key nor the fix.
    recipe = tmp_path / "typo.yaml"
    recipe.write_text("model_name_or_pathh: embedded\n")
    from poolbench_data.finetune.common import command_line

    module = _script(name)
    assert command_line(lambda: module.main(["--config", str(recipe)])) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "'model_name_or_pathh'" in err and "did you mean 'model_name_or_path'" in err
