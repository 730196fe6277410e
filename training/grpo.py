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
from typing import Any

from trl import GRPOConfig, TrlParser

from poolbench_data.boards.splits import SplitLeakError, eval_id_prefix, leak_problem, refuse_eval_split

# training/ is a folder of scripts, not a package: `python training/grpo.py`
# puts this folder on sys.path, a test that loads the file by path does not.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
from common import (  # noqa: E402
    command_line,
    usage_errors,
    apply_speed_settings,
    LoraModelConfig,
    RunResult,
    TrainScriptArguments,
    check_model_path,
    run_script,
    find_resume_checkpoint,
    load_split,
    load_tokenizer,
    resolve_model_path,
    set_model_init_kwargs,
    train_and_save,
)

logger = logging.getLogger("poolbench.grpo")

# `prompt` for generation; the rest are physics_reward's keyword arguments.
REQUIRED_COLUMNS = ("prompt", "id", "category", "seed", "cue_ball", "balls")


class GRPODataError(ValueError):
    """The dataset cannot feed physics_reward: a missing column or a malformed board."""


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


# --- the data ---------------------------------------------------------------------


def check_scenario_rows(dataset: Any, test_id_prefix: str | None) -> None:
    """Raise unless every row has a prompt and a board physics_reward can rebuild, from a training split."""
    from poolbench_data.core.records import Scenario
    from poolbench_data.prefs.check import RowProblems

    columns = list(getattr(dataset, "column_names", None) or [])
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise GRPODataError(
            f"dataset is missing column(s) {missing} (has {columns}); physics_reward needs {list(REQUIRED_COLUMNS)}. "
            "Fix: load the `scenarios` config (dataset_config: scenarios), whose rows carry the prompt and the board."
        )
    if len(dataset) == 0:
        raise GRPODataError("dataset has no rows. Fix: check dataset_train_split and the data_files of the config.")

    bad, leaks = RowProblems(), RowProblems()
    for index, row in enumerate(dataset):
        if leak := leak_problem(row, test_id_prefix, id_key="id"):
            leaks.add(index, leak)
        prompt = row["prompt"]
        last = prompt[-1] if isinstance(prompt, list) and prompt else None
        if not isinstance(last, dict) or last.get("role") != "user":
            bad.add(index, "`prompt` must be a non-empty message list ending with the user's turn")
            continue
        try:
            # The same call physics_reward makes for every completion.
            Scenario.from_row({k: row[k] for k in ("id", "category", "seed", "cue_ball", "balls")})
        except (ValueError, KeyError, TypeError) as exc:  # InvalidScenario is a ValueError
            bad.add(index, str(exc))
    if leaks:
        # Checked before the format: a leak is the worse mistake, whatever else is wrong.
        raise SplitLeakError(
            f"{leaks.n} of {len(dataset)} training boards are evaluation boards (id prefix {test_id_prefix!r}):"
            f"{leaks.listing()}\nTraining on them leaks the evaluation boards into the model, and every score "
            "measured on them afterwards is void. Fix: train on a split built from a different seed "
            "(dataset_train_split: train)."
        )
    if bad:
        raise GRPODataError(
            f"{bad.n} of {len(dataset)} rows cannot be scored:{bad.listing()}"
            "\nFix: rebuild the `scenarios` config with builders/build_dataset.py rather than editing rows."
        )


def check_context(dataset, tokenizer, model_path: str, model_args: LoraModelConfig, args: GRPOConfig) -> int:
    """The longest prompt; raise when it plus max_completion_length does not fit the model's context."""
    from transformers import AutoConfig

    longest = max(
        len(tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True, tokenize=True,
                                          return_dict=True)["input_ids"])
        for row in dataset
    )
    need = longest + (args.max_completion_length or 0)
    config = AutoConfig.from_pretrained(model_path, revision=model_args.model_revision)
    context = getattr(config.get_text_config(), "max_position_embeddings", None)
    if context is not None and need > context:
        raise ValueError(
            f"the longest prompt is {longest} tokens; with max_completion_length={args.max_completion_length} that is "
            f"{need} tokens, more than the model's context (max_position_embeddings={context}). GRPOTrainer does not "
            "truncate prompts. Fix: lower max_completion_length, or use a model with a longer context."
        )
    if args.use_vllm and args.vllm_max_model_length is not None and need > args.vllm_max_model_length:
        raise ValueError(
            f"the longest prompt is {longest} tokens; with max_completion_length={args.max_completion_length} that is "
            f"{need} tokens, more than vllm_max_model_length={args.vllm_max_model_length}. "
            f"Fix: set vllm_max_model_length to at least {need}."
        )
    return longest


def use_tool_template(tokenizer, path: str | None) -> None:
    """Give the tokenizer a chat template that renders tool calls, and the parser of its <tool_call> turns."""
    if path is None:
        return  # the model's own template; TRL checks it and knows its parser, or says it does not
    from trl.chat_template_utils import qwen3_template, supports_tool_calling

    if Path(path).suffix not in (".jinja", ".j2") or not Path(path).is_file():
        raise FileNotFoundError(f"tool_chat_template {path!r} is not a .jinja file. Fix: give the template's path "
                                "(training/templates/smollm2-chatml-tools.jinja for SmolLM2).")
    tokenizer.chat_template = Path(path).read_text()
    if not supports_tool_calling(tokenizer):
        raise ValueError(f"tool_chat_template {path!r} does not render a tool call and its answer. Fix: render "
                         "assistant tool_calls and tool messages (see training/templates/smollm2-chatml-tools.jinja).")
    # Qwen's parser: ChatML turns with Hermes <tool_call>{json}</tool_call> blocks, the form the template writes.
    tokenizer.response_template = qwen3_template


# --- the run ------------------------------------------------------------------------


def make_trainer(
    script_args: GRPOScriptArguments,
    training_args: GRPOConfig,
    model_args: LoraModelConfig,
    reward_funcs: Sequence[Callable] | None = None,
):
    """Everything up to a ready GRPOTrainer: (trainer, tokenizer). The data is checked first.

    `reward_funcs` defaults to [physics_reward]; a caller may wrap it (e.g. to record its outputs).
    """
    from trl import GRPOTrainer, get_peft_config, get_quantization_config

    from poolbench_data.prefs.env import PoolBenchEnv, tool_physics_reward, tool_prompts
    from poolbench_data.prefs.reward import physics_reward

    if not training_args.output_dir:
        raise ValueError("output_dir is not set. Fix: set it in the recipe or pass --output_dir.")
    if training_args.remove_unused_columns:
        # Trainer would keep only `prompt`, and physics_reward would fail after the first generation.
        raise ValueError(
            "remove_unused_columns=true drops the board columns physics_reward reads. "
            "Fix: set remove_unused_columns: false (GRPOConfig's default)."
        )
    refuse_eval_split(script_args.dataset_train_split)

    # Data first: a malformed or leaking dataset should fail before minutes of model loading.
    prefix = script_args.test_id_prefix or eval_id_prefix(script_args.dataset_name)
    train_dataset = load_split(script_args, script_args.dataset_train_split)
    check_scenario_rows(train_dataset, test_id_prefix=prefix)
    eval_dataset = None
    if training_args.eval_strategy != "no":
        eval_dataset = load_split(script_args, script_args.dataset_test_split)
        check_scenario_rows(eval_dataset, test_id_prefix=None)  # rewards on held-out boards are the point
    # Only what generation and the reward read: the Oracle's columns never reach a reward function.
    train_dataset = train_dataset.select_columns(list(REQUIRED_COLUMNS))
    if eval_dataset is not None:
        eval_dataset = eval_dataset.select_columns(list(REQUIRED_COLUMNS))
    if script_args.tool_env:
        train_dataset = tool_prompts(train_dataset)
        eval_dataset = tool_prompts(eval_dataset) if eval_dataset is not None else None

    model_path = resolve_model_path(model_args.model_name_or_path)
    check_model_path(model_path)
    # The tokenizer (seconds) before the model: it measures the prompts against the context.
    tokenizer = load_tokenizer(model_path, model_args)
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
        quantization_config=get_quantization_config(model_args),
        peft_config=get_peft_config(model_args),
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
