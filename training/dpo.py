"""DPO on PoolBench preference pairs with TRL: a thin script, configured by a YAML recipe.

    python training/dpo.py --config training/recipes/dpo-smollm2-135m-cpu.yaml
    python training/dpo.py --config training/recipes/dpo-smollm2-135m-cpu.yaml --max_steps 5 --output_dir runs/try

Beyond what every training script adds (poolbench_data/finetune/trainer.py: recipe and flags, seed first,
LoRA by default, the model and the leak checks before anything loads, resuming, adapter/ and merged/):
- with LoRA the reference model is the base with the adapter disabled (or, from
  an SFT LoRA, a frozen copy of it), so only one copy of the model is loaded;
- the pairs are validated (`poolbench_data.checks.pairs.check_pairs`) before the
  model is loaded, so a malformed dataset fails in seconds with the row and fix,
  and a set whose call-vs-answer pairs mostly choose one turn kind is refused
  (`max_turn_kind_share`);
- each pair's prompt runs through the model once (`share_prompt`).
"""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass, field

from trl import DPOConfig, TrlParser

from poolbench_data.checks.pairs import MAX_TURN_KIND_SHARE
from poolbench_data.finetune.common import (
    LoraModelConfig, RunResult, TrainScriptArguments, command_line, load_checked_splits, model_and_tokenizer,
    run_script, share_prompt_prefix, usage_errors,
)
from poolbench_data.finetune.trainer import build_trainer, fit

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
                                "poolbench_data.finetune.speed.share_prompt_prefix). Needs gradient_checkpointing "
                                "false."}
    )
    max_turn_kind_share: float = field(
        default=MAX_TURN_KIND_SHARE, metadata={"help": "Of the pairs whose chosen and rejected turns differ in kind "
                                               "(a tool call against an answer), the largest share that may choose "
                                               "the same kind; above it the run stops before the model loads. 1.0 "
                                               "turns the check off."}
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
    return fit(trainer, tokenizer, script_args, training_args,
               extra_metrics={"trainer_setup_seconds": setup["seconds"], "train_pairs": setup["kept"],
                              "precompute_ref_log_probs": bool(training_args.precompute_ref_log_probs)})


def make_trainer(script_args: DPOScriptArguments, training_args: DPOConfig, model_args: LoraModelConfig):
    """Everything up to a ready DPOTrainer, checks first: (trainer, tokenizer, {seconds, kept})."""
    from trl import DPOTrainer

    from poolbench_data.checks.pairs import check_pairs, check_turn_kinds

    # Data first: a malformed or leaking dataset should fail before minutes of model loading.
    train_dataset, eval_dataset = load_checked_splits(script_args, training_args, check_pairs)
    kinds = check_turn_kinds(train_dataset, script_args.max_turn_kind_share)
    model_path, tokenizer = model_and_tokenizer(model_args)
    logger.info("model %s, %d training pairs (chosen turn where the kinds differ: %s)", model_path,
                len(train_dataset), kinds)
    started = time.perf_counter()
    trainer = build_trainer(DPOTrainer, script_args, training_args, model_args, model_path, tokenizer, train_dataset,
                            eval_dataset, share_groups="pairs" if script_args.share_prompt else None)
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
        logger.warning("%d of %d pairs dropped: their prompt fills max_length=%d", len(train_dataset) - kept,
                       len(train_dataset), training_args.max_length)

    return trainer, tokenizer, {"seconds": setup_seconds, "kept": kept}


def main(argv: list[str] | None = None) -> DPORunResult:
    return run_script(make_parser(), train, argv)


if __name__ == "__main__":
    sys.exit(command_line(main))
