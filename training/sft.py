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

Beyond what every training script adds (poolbench_data/finetune/trainer.py: recipe and flags, seed first,
LoRA by default, the model and the leak checks before anything loads, resuming, adapter/ and merged/):
- before the model loads, the rows are validated (`check_sft_rows`) and every
  row is tokenized to find those that do not fit `max_length`; they are dropped,
  not truncated (a cut JSON action teaches a broken answer with no end of turn),
  and the run stops when more than `max_dropped_share` of them would be (TRL
  would silently drop rows whose prompt alone fills max_length, and cut the others);
- the loss is on the completion only (`completion_only_loss`, required);
- train_results.json also holds the row counts.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field

from trl import SFTConfig, TrlParser

from poolbench_data.checks.pairs import column_names
from poolbench_data.checks.demos import SFT_COLUMNS, TOOL_COLUMNS, check_sft_rows, is_tool_dataset
from poolbench_data.finetune.common import (
    LoraModelConfig, RunResult, TrainScriptArguments, command_line, load_checked_splits, model_and_tokenizer,
    resolve_model_path, run_script, usage_errors,
)
from poolbench_data.finetune.lengths import LengthReport, fit_rows
from poolbench_data.finetune.speed import train_rows_apart
from poolbench_data.finetune.templates import check_tool_template
from poolbench_data.finetune.trainer import build_trainer, fit

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
                                 "poolbench_data.finetune.speed.share_prompt_prefix, train_rows_apart). Needs "
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
    resolve_model_path(model_args.model_name_or_path)
    # Then the data: a malformed or leaking dataset should fail before minutes of model loading.
    train_dataset, eval_dataset = load_checked_splits(script_args, training_args, check_sft_rows)
    tools = is_tool_dataset(column_names(train_dataset))
    if tools:
        check_tool_template(training_args)
    # The tokenizer (seconds) before the model: it measures the rows against max_length.
    model_path, tokenizer = model_and_tokenizer(model_args)
    train_dataset, eval_dataset, report = fit_rows(train_dataset, eval_dataset, tokenizer, training_args.max_length,
                                                   script_args.max_dropped_share,
                                                   list(TOOL_COLUMNS if tools else SFT_COLUMNS))
    logger.info("model %s, %d training rows (of %d)", model_path, report.kept, report.rows)
    trainer = build_trainer(SFTTrainer, script_args, training_args, model_args, model_path, tokenizer, train_dataset,
                            eval_dataset, share_groups="batch" if script_args.share_prompt else None)
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
    result = fit(trainer, tokenizer, script_args, training_args, extra_metrics=report.metrics())
    return SFTRunResult(**vars(result), lengths=report)


def main(argv: list[str] | None = None) -> SFTRunResult:
    return run_script(make_parser(), train, argv)


if __name__ == "__main__":
    sys.exit(command_line(main))
