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
- an interrupted run resumes from the last `checkpoint-*` in `output_dir`
  (`--resume false` ignores it; `resume_from_checkpoint` picks one);
- outputs, under `output_dir`:
    adapter/   the LoRA adapter (+ tokenizer), loadable with peft;
    merged/    base + adapter merged (+ tokenizer), in the training dtype: a
               plain model folder that transformers and vLLM load directly
               (with use_peft false: the fine-tuned model, and no adapter/);
    checkpoint-*/, trainer_state.json, train_results.json.
- `model_name_or_path: embedded` means the packaged SmolLM2-135M-Instruct
  (`poolbench_data.llm.model.default_model_dir()`).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trl import DPOConfig, ModelConfig, ScriptArguments, TrlParser

logger = logging.getLogger("poolbench.dpo")

EMBEDDED = "embedded"
ADAPTER_DIR = "adapter"
MERGED_DIR = "merged"


@dataclass
class DPOScriptArguments(ScriptArguments):
    # PoolBench publishes its preference pairs as the `pairs` config.
    dataset_config: str | None = field(
        default="pairs", metadata={"help": "Dataset config name (`name` of `datasets.load_dataset`)."}
    )
    resume: bool = field(
        default=True,
        metadata={"help": "Resume from the last checkpoint-* in output_dir when there is one."},
    )
    save_merged: bool = field(
        default=True,
        metadata={"help": "Also save base + adapter merged into output_dir/merged (a plain model folder)."},
    )


@dataclass
class LoraModelConfig(ModelConfig):
    # LoRA by default: on CPU full fine-tuning is slow, and without PEFT TRL
    # loads a second full copy of the model as the reference.
    use_peft: bool = field(default=True, metadata={"help": "Train a LoRA adapter (default) instead of all weights."})


@dataclass
class DPORunResult:
    output_dir: Path
    adapter_dir: Path | None
    merged_dir: Path | None
    resumed_from: str | None
    global_step: int
    training_loss: float
    metrics: dict[str, Any]
    log_history: list[dict[str, Any]]


def make_parser() -> TrlParser:
    return TrlParser((DPOScriptArguments, DPOConfig, LoraModelConfig))


def resolve_model_path(name: str | None) -> str:
    """A local folder or Hub id as given; `embedded` is the packaged SmolLM2 folder."""
    if not name:
        raise ValueError(
            "model_name_or_path is not set. Fix: set it in the recipe or pass --model_name_or_path "
            f"(a local model folder, a Hub id, or `{EMBEDDED}` for the packaged SmolLM2-135M-Instruct)."
        )
    if name != EMBEDDED:
        return name
    try:
        # Imported here: the embedded model is optional and its module converts
        # a GGUF file on first use.
        from poolbench_data.llm.model import default_model_dir
    except ImportError as exc:
        raise RuntimeError(
            f"model_name_or_path={EMBEDDED!r} needs poolbench_data.llm.model.default_model_dir(), which could "
            f"not be imported ({exc}). Fix: install poolbench-data with its eval extra, or pass a local model "
            "folder as model_name_or_path."
        ) from exc
    return str(default_model_dir())


def load_pairs(script_args: DPOScriptArguments, split: str):
    """One split of the pairs dataset (a local folder in Hub layout, or a Hub id)."""
    from datasets import load_dataset

    if not script_args.dataset_name:
        raise ValueError(
            "dataset_name is not set. Fix: set it to a PoolBench dataset folder or Hub id "
            "(with dataset_config: pairs)."
        )
    dataset = load_dataset(script_args.dataset_name, name=script_args.dataset_config)
    if split not in dataset:
        raise ValueError(
            f"split {split!r} not found in {script_args.dataset_name} ({script_args.dataset_config}); "
            f"it has {list(dataset)}. Fix: set dataset_train_split / dataset_test_split."
        )
    return dataset[split]


def find_resume_checkpoint(training_args: DPOConfig, resume: bool) -> str | None:
    """An explicit resume_from_checkpoint wins; else the newest checkpoint-* in output_dir."""
    from transformers.trainer_utils import get_last_checkpoint

    if training_args.resume_from_checkpoint:
        return training_args.resume_from_checkpoint
    if resume and os.path.isdir(training_args.output_dir):
        return get_last_checkpoint(training_args.output_dir)
    return None


def load_tokenizer(model_path: str, model_args: ModelConfig):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path, revision=model_args.model_revision)
    if not tokenizer.chat_template:
        raise ValueError(
            f"the tokenizer of {model_path} has no chat_template, so conversational pairs cannot be rendered. "
            "Fix: use an instruct/chat model, or add a chat template to its tokenizer_config.json."
        )
    return tokenizer


def save_outputs(trainer, tokenizer, output_dir: Path, save_merged: bool) -> tuple[Path | None, Path | None]:
    """The adapter and/or a merged, directly servable model folder."""
    from peft import PeftModel

    model = trainer.accelerator.unwrap_model(trainer.model)
    adapter_dir = merged_dir = None
    if isinstance(model, PeftModel):
        adapter_dir = output_dir / ADAPTER_DIR
        trainer.save_model(str(adapter_dir))
        if save_merged:
            merged_dir = output_dir / MERGED_DIR
            # In place: the trainer's model is not used after this.
            merged = model.merge_and_unload()
            # Training turned the KV cache off in the config; a served model wants it.
            merged.config.use_cache = True
            merged.save_pretrained(merged_dir)
            tokenizer.save_pretrained(merged_dir)
    else:
        merged_dir = output_dir / MERGED_DIR
        model.config.use_cache = True
        trainer.save_model(str(merged_dir))
    return adapter_dir, merged_dir


def train(script_args: DPOScriptArguments, training_args: DPOConfig, model_args: LoraModelConfig) -> DPORunResult:
    from trl import DPOTrainer, get_peft_config, get_quantization_config

    from poolbench_data.prefs.check import check_pairs

    if not training_args.output_dir:
        raise ValueError("output_dir is not set. Fix: set it in the recipe or pass --output_dir.")
    output_dir = Path(training_args.output_dir)

    # Data first: a malformed dataset should fail before minutes of model loading.
    train_dataset = load_pairs(script_args, script_args.dataset_train_split)
    check_pairs(train_dataset)
    eval_dataset = None
    if training_args.eval_strategy != "no":
        eval_dataset = load_pairs(script_args, script_args.dataset_test_split)
        check_pairs(eval_dataset)

    model_path = resolve_model_path(model_args.model_name_or_path)
    tokenizer = load_tokenizer(model_path, model_args)
    model_init_kwargs = dict(
        revision=model_args.model_revision,
        attn_implementation=model_args.attn_implementation,
        dtype=model_args.dtype,
    )
    model_init_kwargs.update(training_args.model_init_kwargs or {})
    training_args.model_init_kwargs = model_init_kwargs

    resume_from = find_resume_checkpoint(training_args, script_args.resume)
    logger.info("model %s, %d training pairs, resume from %s", model_path, len(train_dataset), resume_from)

    trainer = DPOTrainer(
        model=model_path,
        args=training_args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        quantization_config=get_quantization_config(model_args),
        peft_config=get_peft_config(model_args),
    )
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

    result = trainer.train(resume_from_checkpoint=resume_from)
    trainer.log_metrics("train", result.metrics)
    trainer.save_metrics("train", result.metrics)
    trainer.save_state()
    adapter_dir, merged_dir = save_outputs(trainer, tokenizer, output_dir, script_args.save_merged)
    if hasattr(trainer, "end"):  # transformers >= 5.18: finishes trackers
        trainer.end()

    return DPORunResult(
        output_dir=output_dir,
        adapter_dir=adapter_dir,
        merged_dir=merged_dir,
        resumed_from=resume_from,
        global_step=trainer.state.global_step,
        training_loss=result.training_loss,
        metrics=dict(result.metrics),
        log_history=list(trainer.state.log_history),
    )


def main(argv: list[str] | None = None) -> DPORunResult:
    from transformers import set_seed

    script_args, training_args, model_args = make_parser().parse_args_and_config(args=argv)
    # Before anything random: dataset shuffling, LoRA init, dropout.
    set_seed(training_args.seed)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    return train(script_args, training_args, model_args)


if __name__ == "__main__":
    main()
