"""GRPO on the pool simulator with TRL: a thin script, configured by a YAML recipe.

    python training/grpo.py --config training/recipes/grpo-smollm2-135m-cpu-smoke.yaml
    python training/grpo.py --config training/recipes/grpo-llama-3.1-8b-gpu.yaml --max_steps 50 --output_dir runs/try

The data is the dataset's `scenarios` config (the boards): its `prompt` column
is the conversation the model answers, and its board columns (id, category,
seed, cue_ball, balls) let `poolbench_data.prefs.reward.physics_reward` rebuild
each board and simulate every sampled completion: 0 unparseable, 1 foul,
2 legal contact, 3 legal pot (the evaluator's parser and scoring). No pairs,
no reference answers: the simulator is the reward.

Every field of TRL's `ScriptArguments`, `GRPOConfig` and `ModelConfig`, and the
few below, can be set in the recipe or on the command line (the command line
wins); unknown keys are errors, so a typo in a recipe does not silently fall
back to a default.

What this script adds to `trl/scripts/grpo.py`:
- the seed is set before anything random happens (LoRA init, data order);
- LoRA is on by default (`use_peft: false` trains all weights);
- before the model is loaded: the columns the reward reads are checked, every
  board is rebuilt once (a malformed board would otherwise fail mid-run, after
  minutes of generation), rows from the test split are refused (they would
  leak the evaluation boards), and every prompt is tokenized to check that
  prompt + max_completion_length fits the model's context (this TRL version
  neither truncates prompts nor warns);
- an interrupted run resumes from the last `checkpoint-*` in `output_dir`
  (`--resume false` ignores it; `resume_from_checkpoint` picks one);
- outputs, under `output_dir`:
    adapter/   the LoRA adapter (+ tokenizer), loadable with peft;
    merged/    base + adapter merged (+ tokenizer), in the training dtype: a
               plain model folder that transformers and vLLM load directly
               (with use_peft false: the fine-tuned model, and no adapter/);
    checkpoint-*/, trainer_state.json (rewards/physics_reward/mean per step),
    train_results.json.
- `model_name_or_path: embedded` means the packaged SmolLM2-135M-Instruct.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from trl import GRPOConfig, TrlParser

from poolbench_data.prefs.check import SCENARIO_COLUMNS, check_scenario_rows
from poolbench_data.training.lengths import check_context
from poolbench_data.training.templates import use_tool_template
from poolbench_data.training.common import (
    LoraModelConfig,
    RunResult,
    TrainScriptArguments,
    apply_speed_settings,
    command_line,
    find_resume_checkpoint,
    load_checked_splits,
    model_and_tokenizer,
    peft_and_quantization,
    run_script,
    set_model_init_kwargs,
    train_and_save,
    usage_errors,
)

logger = logging.getLogger("poolbench.grpo")

@dataclass
class GRPOScriptArguments(TrainScriptArguments):
    # PoolBench publishes its boards, with prompts, as the `scenarios` config.
    dataset_config: str | None = field(
        default="scenarios", metadata={"help": "Dataset config name (`name` of `datasets.load_dataset`)."}
    )
    tool_env: bool = field(
        default=False,
        metadata={"help": "Play with the ghost_ball tool: PoolBenchEnv through TRL's environment_factory, the prompt "
                  "with the tool's paragraph (as `poolbench eval --tools`), the reward on the final action."},
    )
    tool_chat_template: str | None = field(
        default=None,
        metadata={"help": "With tool_env: a .jinja chat template that renders tool calls (SmolLM2's own does not: "
                  "training/templates/smollm2-chatml-tools.jinja); its Hermes <tool_call> turns are parsed with "
                  "TRL's ChatML/Hermes response template. None: the model's template, as TRL supports it."},
    )


def make_parser() -> TrlParser:
    return TrlParser((GRPOScriptArguments, GRPOConfig, LoraModelConfig))


def make_trainer(
    script_args: GRPOScriptArguments,
    training_args: GRPOConfig,
    model_args: LoraModelConfig,
    reward_funcs: Sequence[Callable] | None = None,
):
    """Everything up to a ready GRPOTrainer: (trainer, tokenizer). The data is checked first.

    `reward_funcs` defaults to [physics_reward]; a caller may wrap it (e.g. to record its outputs).
    """
    from trl import GRPOTrainer

    from poolbench_data.prefs.env import PoolBenchEnv, tool_physics_reward, tool_prompts
    from poolbench_data.prefs.reward import physics_reward

    if training_args.remove_unused_columns:
        # Trainer would keep only `prompt`, and physics_reward would fail after the first generation.
        raise ValueError(
            "remove_unused_columns=true drops the board columns physics_reward reads. "
            "Fix: set remove_unused_columns: false (GRPOConfig's default)."
        )
    # Data first: a malformed or leaking dataset should fail before minutes of model loading.
    train_dataset, eval_dataset = load_checked_splits(script_args, training_args, check_scenario_rows)
    # Only what generation and the reward read: the Oracle's columns never reach a reward function.
    train_dataset = train_dataset.select_columns(list(SCENARIO_COLUMNS))
    if eval_dataset is not None:
        eval_dataset = eval_dataset.select_columns(list(SCENARIO_COLUMNS))
    if script_args.tool_env:
        train_dataset = tool_prompts(train_dataset)
        eval_dataset = tool_prompts(eval_dataset) if eval_dataset is not None else None

    # The tokenizer (seconds) before the model: it measures the prompts against the context.
    model_path, tokenizer = model_and_tokenizer(model_args)
    if script_args.tool_env:
        use_tool_template(tokenizer, script_args.tool_chat_template)
    longest = check_context(train_dataset, tokenizer, model_path, model_args, training_args)
    apply_speed_settings(script_args, training_args, model_args)
    set_model_init_kwargs(training_args, model_args)

    logger.info("model %s, %d training boards, longest prompt %d tokens", model_path, len(train_dataset), longest)
    trainer = GRPOTrainer(
        model=model_path,
        reward_funcs=list(reward_funcs) if reward_funcs is not None else
        [tool_physics_reward if script_args.tool_env else physics_reward],
        environment_factory=PoolBenchEnv if script_args.tool_env else None,
        args=training_args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        **peft_and_quantization(model_args),
    )
    return trainer, tokenizer


def train(
    script_args: GRPOScriptArguments,
    training_args: GRPOConfig,
    model_args: LoraModelConfig,
    reward_funcs: Sequence[Callable] | None = None,
) -> RunResult:
    with usage_errors():
        trainer, tokenizer = make_trainer(script_args, training_args, model_args, reward_funcs)
    resume_from = find_resume_checkpoint(training_args, script_args.resume)
    if resume_from:
        logger.info("resuming from %s", resume_from)
    return train_and_save(trainer, tokenizer, Path(training_args.output_dir), script_args.save_merged, resume_from,
                          merged_dtype=script_args.merged_dtype)


def main(argv: list[str] | None = None, reward_funcs: Sequence[Callable] | None = None) -> RunResult:
    return run_script(make_parser(), train, argv, reward_funcs=reward_funcs)


if __name__ == "__main__":
    sys.exit(command_line(main))
