"""DPO on PoolBench preference pairs with TRL: a thin script, configured by a YAML recipe.

    python training/dpo.py --config training/recipes/smollm2-135m-cpu.yaml
    python training/dpo.py --config training/recipes/smollm2-135m-cpu.yaml --max_steps 5 --output_dir runs/try

Every field of TRL's `ScriptArguments`, `DPOConfig` and `ModelConfig` can be set
in the recipe or on the command line (the command line wins); unknown keys are
errors, so a typo in a recipe does not silently fall back to a default.

What this script adds to `trl/scripts/dpo.py`:
- the seed is set before anything random happens (LoRA init, data order);
- LoRA is on by default; the reference model is then the base model with the
  adapter disabled, so only one copy of the model is loaded;
- the pairs are validated (`poolbench_data.prefs.check.check_pairs`) before the
  model is loaded, so a malformed dataset fails in seconds with the row and fix;
  pairs from evaluation boards (the test split, or ids `pb<eval_seed>-`) are
  refused, as in SFT and GRPO;
- a model that does not exist (a local path, or a Hub id) is refused before
  the tokenizer or the model is loaded;
- an interrupted run resumes from the last `checkpoint-*` in `output_dir`
  (`--resume false` ignores it; `resume_from_checkpoint` picks one);
- outputs, under `output_dir`:
    adapter/   the LoRA adapter (+ tokenizer), loadable with peft;
    merged/    base + adapter merged (+ tokenizer), in `merged_dtype` (else the
               training dtype): a plain model folder that transformers and vLLM
               load directly (with use_peft false: the fine-tuned model, and no
               adapter/);
    checkpoint-*/, trainer_state.json, train_results.json.
- `model_name_or_path: embedded` means the packaged SmolLM2-135M-Instruct
  (`poolbench_data.llm.model.default_model_dir()`).
The pieces shared with training/sft.py and grpo.py live in poolbench_data/training/.
"""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from trl import DPOConfig, TrlParser

from poolbench_data.training.common import (
    LoraModelConfig,
    RunResult,
    TrainScriptArguments,
    apply_speed_settings,
    command_line,
    find_resume_checkpoint,
    load_checked_splits,
    load_sharing_prompts,
    model_and_tokenizer,
    peft_and_quantization,
    run_script,
    set_model_init_kwargs,
    share_prompt_prefix,
    train_and_save,
    usage_errors,
)

logger = logging.getLogger("poolbench.dpo")

# The result of a run; the name DPO callers know.
DPORunResult = RunResult


@dataclass
class DPOScriptArguments(TrainScriptArguments):
    # PoolBench publishes its preference pairs as the `pairs` config.
    dataset_config: str | None = field(
        default="pairs", metadata={"help": "Dataset config name (`name` of `datasets.load_dataset`)."}
    )
    share_prompt: bool = field(
        default=True, metadata={"help": "Run each pair's shared prompt through the model once, not once for chosen "
                                "and once for rejected (same numbers, about half the FLOPs: "
                                "poolbench_data.training.speed.share_prompt_prefix). Needs gradient_checkpointing "
                                "false."}
    )
    max_turn_kind_share: float = field(
        default=0.75, metadata={"help": "Of the pairs whose chosen and rejected turns differ in kind (a tool call "
                                "against an answer), the largest share that may choose the same kind; above it "
                                "the run stops before the model loads. 1.0 turns the check off."}
    )

    def __post_init__(self):
        super().__post_init__()
        if not 0.5 <= self.max_turn_kind_share <= 1.0:
            raise ValueError(f"max_turn_kind_share={self.max_turn_kind_share}: the larger kind's share is between "
                             "0.5 and 1.0. Fix: give a value in [0.5, 1.0] (1.0: no check).")


def make_parser() -> TrlParser:
    return TrlParser((DPOScriptArguments, DPOConfig, LoraModelConfig))


def train(script_args: DPOScriptArguments, training_args: DPOConfig, model_args: LoraModelConfig) -> DPORunResult:
    with usage_errors():
        trainer, tokenizer, setup = make_trainer(script_args, training_args, model_args)
    return train_and_save(
        trainer, tokenizer, Path(training_args.output_dir), script_args.save_merged, setup["resume_from"],
        merged_dtype=script_args.merged_dtype,
        extra_metrics={"trainer_setup_seconds": setup["seconds"], "train_pairs": setup["kept"],
                       "precompute_ref_log_probs": bool(training_args.precompute_ref_log_probs)},
    )


def make_trainer(script_args: DPOScriptArguments, training_args: DPOConfig, model_args: LoraModelConfig):
    """Everything up to a ready DPOTrainer, checks first: (trainer, tokenizer, {resume_from, seconds, kept})."""
    from trl import DPOTrainer

    from poolbench_data.prefs.check import check_pairs, check_turn_kinds

    # Data first: a malformed or leaking dataset should fail before minutes of model loading.
    train_dataset, eval_dataset = load_checked_splits(script_args, training_args, check_pairs)
    kinds = check_turn_kinds(train_dataset, script_args.max_turn_kind_share)
    model_path, tokenizer = model_and_tokenizer(model_args)
    apply_speed_settings(script_args, training_args, model_args)
    set_model_init_kwargs(training_args, model_args)

    resume_from = find_resume_checkpoint(training_args, script_args.resume)
    logger.info("model %s, %d training pairs (chosen turn where the kinds differ: %s), resume from %s", model_path,
                len(train_dataset), kinds, resume_from)

    started = time.perf_counter()
    extra = peft_and_quantization(model_args)
    model = model_path
    if script_args.share_prompt:
        model = load_sharing_prompts(model_path, training_args, extra.pop("quantization_config"))
    trainer = DPOTrainer(
        model=model,
        args=training_args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        **extra,
    )
    if script_args.share_prompt and trainer.ref_model is not None:
        share_prompt_prefix(trainer.ref_model)
    # With precompute_ref_log_probs the reference forwards run here, not in train_runtime: record them.
    setup_seconds = time.perf_counter() - started
    # TRL drops pairs whose prompt alone reaches max_length, without an error.
    kept = len(trainer.train_dataset)
    if kept == 0:
        raise ValueError(
            f"every prompt is at least max_length={training_args.max_length} tokens, so DPOTrainer dropped all "
            f"{len(train_dataset)} pairs. Fix: raise max_length (PoolBench's system prompt alone is ~500 tokens)."
        )
    if kept < len(train_dataset):
        logger.warning(
            "%d of %d pairs dropped: their prompt fills max_length=%d",
            len(train_dataset) - kept,
            len(train_dataset),
            training_args.max_length,
        )

    return trainer, tokenizer, {"resume_from": resume_from, "seconds": setup_seconds, "kept": kept}


def main(argv: list[str] | None = None) -> DPORunResult:
    return run_script(make_parser(), train, argv)


if __name__ == "__main__":
    sys.exit(command_line(main))
