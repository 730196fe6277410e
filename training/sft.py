"""Supervised fine-tuning on PoolBench's Oracle demonstrations with TRL: a thin script, configured by a YAML recipe.

    python training/sft.py --config training/recipes/sft-smollm2-135m-cpu.yaml
    python training/sft.py --config training/recipes/sft-smollm2-135m-cpu.yaml --max_steps 5 --output_dir runs/try

The data is the dataset's `sft` config (builders/build_sft.py): TRL's
conversational prompt-completion format, `prompt` = [system, user] messages and
`completion` = [{"role": "assistant", "content": "<the protocol's JSON action>"}].
The warm start teaches the action format before DPO (training/dpo.py).
Or the `sft_tools` config (builders/build_sft.py --tools): `messages` rows in
which the model calls the ghost_ball tool, reads its answer and writes the
action; the loss is on the model's turns only (`assistant_only_loss`, required
for such rows, with a chat template that marks them: recipe
sft-tools-smollm2-135m-cpu.yaml), never on the prompt or the tool's answers.

Every field of TRL's `ScriptArguments`, `SFTConfig` and `ModelConfig`, and the
few below, can be set in the recipe or on the command line (the command line
wins); unknown keys are errors, so a typo in a recipe does not silently fall
back to a default.

What this script adds to `trl/scripts/sft.py`:
- the seed is set before anything random happens (LoRA init, data order);
- LoRA is on by default (`use_peft: false` trains all weights);
- a model that does not exist is refused before anything is read; then,
  before the model is loaded, the rows are validated (`check_sft_rows`), rows
  from the test split are refused (they would leak the evaluation boards), and
  every row is tokenized to find those that do not fit `max_length`;
- rows that do not fit are dropped, not truncated (a cut JSON action teaches a
  broken answer with no end of turn), and the run stops when more than
  `max_dropped_share` of them would be (TRL would silently drop rows whose
  prompt alone fills max_length, and cut the others);
- the loss is on the completion only (`completion_only_loss`, required);
- an interrupted run resumes from the last `checkpoint-*` in `output_dir`
  (`--resume false` ignores it; `resume_from_checkpoint` picks one);
- outputs, under `output_dir`:
    adapter/   the LoRA adapter (+ tokenizer), loadable with peft;
    merged/    base + adapter merged (+ tokenizer), in `merged_dtype` (else the
               training dtype): a plain model folder that transformers and vLLM
               load directly (with use_peft false: the fine-tuned model, and no
               adapter/);
    checkpoint-*/, trainer_state.json, train_results.json (with the row counts).
- `model_name_or_path: embedded` means the packaged SmolLM2-135M-Instruct.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path

from trl import SFTConfig, TrlParser

from poolbench_data.prefs.check import column_names
from poolbench_data.prefs.check_sft import SFT_COLUMNS, TOOL_COLUMNS, check_sft_rows, is_tool_dataset
from poolbench_data.training.speed import train_rows_apart
from poolbench_data.training.templates import check_tool_template
from poolbench_data.training.lengths import LengthReport, enforce_max_length, measure_lengths
from poolbench_data.training.common import (
    LoraModelConfig,
    RunResult,
    TrainScriptArguments,
    apply_speed_settings,
    check_model_path,
    command_line,
    find_resume_checkpoint,
    load_checked_splits,
    load_sharing_prompts,
    model_and_tokenizer,
    peft_and_quantization,
    resolve_model_path,
    run_script,
    set_model_init_kwargs,
    train_and_save,
    usage_errors,
)

logger = logging.getLogger("poolbench.sft")


@dataclass
class SFTScriptArguments(TrainScriptArguments):
    # PoolBench publishes its demonstrations as the `sft` config.
    dataset_config: str | None = field(
        default="sft", metadata={"help": "Dataset config name (`name` of `datasets.load_dataset`)."}
    )
    max_dropped_share: float = field(
        default=0.0,
        metadata={
            "help": "Largest share of training rows (0-1) that may be dropped for not fitting max_length before "
            "the run stops. 0.0: every row must fit."
        },
    )
    share_prompt: bool = field(
        default=False, metadata={"help": "Run the prefix a batch's rows share (the system prompt) through the model "
                                 "once, not once a row, then each row's continuation and backward alone against it "
                                 "(same numbers; a batch of 4 shares it 4 ways at about one row's activation memory: "
                                 "poolbench_data.training.speed.share_prompt_prefix, train_rows_apart). Needs "
                                 "gradient_checkpointing false; pays off with per_device_train_batch_size > 1."}
    )

    def __post_init__(self):
        super().__post_init__()
        # At parse time: a recipe typo should not wait for the tokenizer to surface.
        if not 0.0 <= self.max_dropped_share <= 1.0:
            raise ValueError(
                f"max_dropped_share={self.max_dropped_share} is not a share. Fix: set it between 0.0 and 1.0."
            )


@dataclass
class SFTRunResult(RunResult):
    lengths: LengthReport | None = None


def make_parser() -> TrlParser:
    return TrlParser((SFTScriptArguments, SFTConfig, LoraModelConfig))


def make_trainer(script_args: SFTScriptArguments, training_args: SFTConfig, model_args: LoraModelConfig):
    """Everything up to a ready SFTTrainer: (trainer, tokenizer, length report). Cheapest checks first: the
    arguments, the model path, the rows, their lengths (tokenizer only); the model loads last."""
    from trl import SFTTrainer

    if training_args.completion_only_loss is False:
        # The prompt is ~25x the answer: a loss over it would mostly fit the board description.
        raise ValueError(
            "completion_only_loss=false would train on the prompt too. Fix: set completion_only_loss: true "
            "(or leave it unset)."
        )
    # TRL's default (None) already means completion-only for prompt-completion rows; set it so it cannot drift.
    training_args.completion_only_loss = True
    # A misspelt model fails in milliseconds, before the data is read.
    check_model_path(resolve_model_path(model_args.model_name_or_path))
    # Then the data: a malformed or leaking dataset should fail before minutes of model loading.
    train_dataset, eval_dataset = load_checked_splits(script_args, training_args, check_sft_rows)
    tools = is_tool_dataset(column_names(train_dataset))
    if tools:
        check_tool_template(training_args)
    # The tokenizer (seconds) before the model: it measures the rows against max_length.
    model_path, tokenizer = model_and_tokenizer(model_args)
    report = measure_lengths(train_dataset, tokenizer, training_args.max_length)
    train_dataset = enforce_max_length(train_dataset, report, script_args.max_dropped_share)
    if eval_dataset is not None:
        eval_report = measure_lengths(eval_dataset, tokenizer, training_args.max_length)
        # Evaluation rows that do not fit are dropped with a warning; only an empty eval set stops the run.
        eval_dataset = enforce_max_length(eval_dataset, eval_report, max_dropped_share=1.0)
    # Only what TRL reads: outcome columns (structs, bools) and a stray `tools`
    # or `chat_template_kwargs` column never reach tokenization or collation.
    keep = list(TOOL_COLUMNS if tools else SFT_COLUMNS)
    train_dataset = train_dataset.select_columns(keep)
    if eval_dataset is not None:
        eval_dataset = eval_dataset.select_columns(keep)

    apply_speed_settings(script_args, training_args, model_args)
    set_model_init_kwargs(training_args, model_args)
    logger.info("model %s, %d training rows (of %d)", model_path, report.kept, report.rows)
    extra = peft_and_quantization(model_args)
    model = model_path
    if script_args.share_prompt:
        model = load_sharing_prompts(model_path, training_args, extra.pop("quantization_config"), groups="batch")
    trainer = SFTTrainer(
        model=model,
        args=training_args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        **extra,
    )
    if script_args.share_prompt:
        train_rows_apart(trainer)  # the batch's prefix once, one row's activations at a time
    if len(trainer.train_dataset) != report.kept:
        # measure_lengths disagrees with TRL's own preparation: a TRL change to look at.
        logger.warning(
            "SFTTrainer kept %d rows where %d fit max_length=%s", len(trainer.train_dataset), report.kept,
            training_args.max_length,
        )
    return trainer, tokenizer, report


def train(script_args: SFTScriptArguments, training_args: SFTConfig, model_args: LoraModelConfig) -> SFTRunResult:
    with usage_errors():
        trainer, tokenizer, report = make_trainer(script_args, training_args, model_args)
    resume_from = find_resume_checkpoint(training_args, script_args.resume)
    if resume_from:
        logger.info("resuming from %s", resume_from)
    result = train_and_save(
        trainer, tokenizer, Path(training_args.output_dir), script_args.save_merged, resume_from,
        extra_metrics=report.metrics(), merged_dtype=script_args.merged_dtype,
    )
    return SFTRunResult(**vars(result), lengths=report)


def main(argv: list[str] | None = None) -> SFTRunResult:
    return run_script(make_parser(), train, argv)


if __name__ == "__main__":
    sys.exit(command_line(main))
