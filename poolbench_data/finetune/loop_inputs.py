"""What the loop checks before its first stage (check_inputs), and the folder a checkpoint is served from."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from poolbench_data.core.errors import UserError
from poolbench_data.finetune.extra_args import check_stage_args
from poolbench_data.llm.model import EMBEDDED, resolve_model


def servable(checkpoint: Path) -> Path:
    """A folder vLLM can load: the checkpoint itself, or its LoRA adapter merged."""
    if not (checkpoint / "adapter_config.json").exists():
        return checkpoint
    merged = checkpoint / "merged"
    if not merged.exists():
        from peft import AutoPeftModelForCausalLM
        from transformers import AutoTokenizer

        from poolbench_data.finetune.common import MERGED_DIR, merge_lora

        # fp32, as the recipes' merged/: merged into bf16 weights most of a LoRA update rounds away.
        model = AutoPeftModelForCausalLM.from_pretrained(checkpoint, dtype="float32")
        merge_lora(model, AutoTokenizer.from_pretrained(checkpoint), checkpoint / MERGED_DIR, "float32")
    return merged


RECIPE_FIELDS = ("sft_recipe", "dpo_recipe", "tools_sft_recipe", "tools_dpo_recipe", "grpo_recipe", "runout_sft_recipe",
                 "position_dpo_recipe", "runout_tools_sft_recipe", "position_tools_dpo_recipe")


def check_inputs(loop) -> None:
    """Every input a stage may read, before the first stage runs: the recipes, the evaluation's arguments, what the
    stages' scripts are handed (finetune.extra_args), the models named by path (made absolute: the stages run from
    the repository root), output paths."""
    from poolbench_data.core.errors import check_output_dir, check_output_file
    from poolbench_data.llm.vllm_backend import parse_model_args

    a = loop.a
    # Every recipe, whichever stages run: a typo in one named for a later run is still a typo.
    for name in RECIPE_FIELDS:
        if not getattr(a, name) or not (loop.root / getattr(a, name)).is_file():
            raise UserError(f"--{name} {getattr(a, name)!r}: no such recipe (paths are from the repository root, "
                            f"{loop.root}); pick one in training/recipes/")
    for name in ("eval_model_args", "sample_model_args"):
        try:
            parse_model_args(getattr(a, name))
        except ValueError as e:
            raise UserError(f"--{name}: {e}") from None
    check_stage_args(loop.root, a)
    for name in ("model", "free_text_model"):
        path = getattr(a, name)
        if path != EMBEDDED and (path or name == "model"):  # free_text_model '' means none; --model '' is a mistake
            try:  # a local folder is made absolute: the stages run from the repository root
                loop.a = replace(loop.a, **{name: resolve_model(path, field=f"--{name}")})
            except (OSError, ValueError) as e:
                raise UserError(str(e)) from None
    if a.results_json:
        check_output_file(a.results_json, "--results_json")
    check_output_dir(loop.work, "--work_dir", make=False)  # the first stage makes it
