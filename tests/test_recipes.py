"""Every shipped recipe parses with the script its header names, reads a config the builders write, and
points at files that exist: a recipe with a misspelt key, a moved template or a config nobody builds fails
here, not minutes into a run. New recipes are covered as they are added."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("trl")

from poolbench_data.config import in_project_style  # noqa: E402
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
def test_a_recipe_s_name_starts_with_the_script_it_is_for(recipe):
    """dpo-smollm2-135m-cpu.yaml, not smollm2-135m-cpu.yaml: a recipe's name says which stage it trains."""
    script = re.search(r"training/(sft|dpo|grpo|loop)\.py", recipe.read_text())
    assert script and recipe.name.startswith(f"{script.group(1)}-"), recipe.name


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.stem)
def test_every_recipe_parses_with_its_script(recipe):
    script = re.search(r"training/(sft|dpo|grpo|loop)\.py", recipe.read_text())
    assert script, f"{recipe.name}: its header names no training script"
    if script.group(1) == "loop":
        _check_loop_recipe(recipe)
        return
    # bf16 needs a GPU at parse time; everything else is checked as written.
    gpu = ["--bf16", "false", "--use_cpu", "true"] if "gpu" in recipe.stem else []
    parser, args = _script(script.group(1)).make_parser(), ["--config", str(recipe), *gpu]
    in_project_style(parser, args, f"{script.group(1)}.py")  # the scripts' own check of each value first
    script_args, training_args, model_args = parser.parse_args_and_config(args=args)
    assert script_args.dataset_config in CONFIGS, script_args.dataset_config
    for path in (getattr(training_args, "chat_template_path", None), getattr(script_args, "tool_chat_template", None)):
        assert path is None or (REPO / path).is_file(), path
    assert training_args.seed is not None and training_args.output_dir
    if script.group(1) in ("sft", "dpo"):
        assert training_args.max_length and training_args.max_length >= 2048  # a PoolBench prompt is ~1,450 tokens


def _check_loop_recipe(recipe: Path) -> None:
    """A recipe of training/loop.py: the loop's settings, checked as the loop checks them before its first stage
    (but the models, which a recipe names before they are trained), each TRL recipe it names a shipped one."""
    from poolbench_data.config import parse
    from poolbench_data.finetune.extra_args import check_builder_settings
    from poolbench_data.finetune.loop import RECIPE_FIELDS, LoopArguments

    args = parse(LoopArguments, ["--config", str(recipe)])
    check_builder_settings(args)
    assert all((REPO / getattr(args, name)).is_file() for name in RECIPE_FIELDS), recipe.name


def test_the_headline_recipe_names_the_headlines_settings():
    """The tool track's headline (README, docs/results.md#tool-track) is one recipe of the loop."""
    from poolbench_data.config import parse
    from poolbench_data.finetune.loop import LoopArguments

    args = parse(LoopArguments, ["--config", str(REPO / "training/recipes/loop-tools-headline.yaml")])
    assert (args.track, args.eval_n, args.train_n, args.sft_examples, args.sample_n, args.samples,
            args.dpo_steps) == ("tools", 200, 400, 0, 100, 4, 0)
    assert (args.tool_demo_order, args.tool_demo_speeds) == ("listed", "5,8,10,12")
    assert args.tool_sources == "tool-at-cap,tool-recovery,tool-answer,tool-call-again,tool-speed"
    assert args.free_text_model == "runs/loop/sft/merged"
    for doc in ("README.md", "docs/results.md"):
        assert "training/loop.py --config training/recipes/loop-tools-headline.yaml" in (REPO / doc).read_text()


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
