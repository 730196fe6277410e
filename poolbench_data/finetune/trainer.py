"""The trainer set-up SFT, DPO and GRPO share, and what every training script adds to TRL's own:

- the recipe (YAML) and the command line set every field of TRL's `ScriptArguments`, its trainer's config and
  `ModelConfig`, and the script's own (the command line wins); unknown keys are errors (`run_script`);
- the seed is set before anything random happens (LoRA init, data order);
- LoRA is on by default (`use_peft: false` trains all weights); `model_name_or_path: embedded` is the packaged
  SmolLM2-135M-Instruct, and a model that does not exist is refused in milliseconds (`resolve_model_path`);
- the data is checked before the model loads: rows from evaluation boards (the test split, or ids
  `pb<eval_seed>-`) are refused with the row number (`load_checked_splits`);
- an interrupted run resumes from the last `checkpoint-*` in `output_dir` (`--resume false` ignores it;
  `resume_from_checkpoint` picks one); one already at `max_steps` is the run, one past it is refused before
  the model loads;
- outputs, under `output_dir`: adapter/ (the LoRA adapter and tokenizer), merged/ (base + adapter merged, in
  `merged_dtype`, else the training dtype: a plain folder transformers and vLLM load; with `use_peft: false`
  the fine-tuned model, and no adapter/), checkpoint-*/, trainer_state.json, train_results.json.
"""

from __future__ import annotations

import logging
from pathlib import Path

from poolbench_data.finetune.common import (
    RunResult,
    apply_speed_settings,
    at_max_steps,
    find_resume_checkpoint,
    load_sharing_prompts,
    peft_and_quantization,
    set_model_init_kwargs,
    train_and_save,
)

logger = logging.getLogger("poolbench.training")


def build_trainer(trainer_cls, script_args, training_args, model_args, model_path: str, tokenizer, train_dataset,
                  eval_dataset, share_groups: str | None = None, **trainer_kwargs):
    """The trainer, once the data and the tokenizer are checked: the speed settings (they change how the model
    loads), ModelConfig's loading options, LoRA/quantization as TRL's scripts pass them, and with
    `share_groups` the policy loaded here with its shared prompt prefix (speed.share_prompt_prefix)."""
    resume_from = find_resume_checkpoint(training_args, script_args.resume)
    if resume_from:  # a checkpoint past max_steps is refused here, not after the model has loaded
        at_max_steps(resume_from, training_args.max_steps)
    apply_speed_settings(script_args, training_args, model_args)
    set_model_init_kwargs(training_args, model_args)
    extra = peft_and_quantization(model_args)
    model = model_path
    if share_groups:
        model = load_sharing_prompts(model_path, training_args, extra.pop("quantization_config"), share_groups)
    return trainer_cls(model=model, args=training_args, train_dataset=train_dataset, eval_dataset=eval_dataset,
                       processing_class=tokenizer, **extra, **trainer_kwargs)


def fit(trainer, tokenizer, script_args, training_args, extra_metrics: dict | None = None) -> RunResult:
    """Train (from the last checkpoint when there is one and `resume` allows it) and save the outputs."""
    resume_from = find_resume_checkpoint(training_args, script_args.resume)
    if resume_from:
        logger.info("resuming from %s", resume_from)
    return train_and_save(trainer, tokenizer, Path(training_args.output_dir), script_args.save_merged, resume_from,
                          extra_metrics=extra_metrics, merged_dtype=script_args.merged_dtype)
