"""What training/sft.py, dpo.py and grpo.py share: arguments, model lookup, resuming, saving, the command line."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trl import ModelConfig, ScriptArguments

from poolbench_data.config import error_line, in_project_style
from poolbench_data.report.pilot import BATCH_RECORD  # the loop reads what write_batch_record writes
from poolbench_data.finetune.speed import (  # noqa: F401 - the scripts' API
    apply_speed_settings,
    load_sharing_prompts,
    share_prompt_prefix,
    speed_record,
)

logger = logging.getLogger("poolbench.training")

ADAPTER_DIR = "adapter"
MERGED_DIR = "merged"
MERGED_DTYPES = ("float32", "bfloat16", "float16")


@dataclass
class TrainScriptArguments(ScriptArguments):
    resume: bool = field(
        default=True,
        metadata={"help": "Resume from the last checkpoint-* in output_dir when there is one."},
    )
    save_merged: bool = field(
        default=True,
        metadata={"help": "Also save base + adapter merged into output_dir/merged (a plain model folder)."},
    )
    compact_lm_head: bool = field(
        default=True,
        metadata={
            "help": "Project only the positions that carry a loss (the completion) through the LM head, on every "
            "device. TRL does so only where Triton runs; on a CPU it projects all ~1,450 prompt positions through "
            "the 49,152-word head for a loss that is masked there. Same loss and gradients (tests/test_train_speed.py)."
        },
    )
    cpu_fp32_fallback: bool = field(
        default=True,
        metadata={
            "help": "On a CPU without native bf16 arithmetic (neither AVX512-BF16 nor AMX), train in float32 where "
            "the recipe asks for bf16 (dtype: bfloat16 or bf16: true): there bf16 matmuls are emulated, many times "
            "slower than float32 (docs/benchmarks.md#training). Logged, and recorded in train_results.json."
        },
    )
    test_id_prefix: str | None = field(
        default=None,
        metadata={
            "help": "Scenario ids starting with this are evaluation boards and are refused in training. Default: "
            "pb<eval_seed>- with eval_seed from the dataset folder's provenance.json, else pb0- (the builder's "
            "default)."
        },
    )
    merged_dtype: str | None = field(
        default=None,
        metadata={
            "help": "dtype of output_dir/merged (float32, bfloat16, float16); default: the training dtype. A small "
            "LoRA update merged into bf16 weights mostly rounds away, so merge a bf16 model in float32.",
            "choices": [None, *MERGED_DTYPES],
        },
    )

    def __post_init__(self):
        if hasattr(super(), "__post_init__"):
            super().__post_init__()
        # argparse checks `choices` on the command line only, not on recipe values.
        if self.merged_dtype not in (None, *MERGED_DTYPES):
            raise ValueError(
                f"merged_dtype={self.merged_dtype!r} is not a dtype. Fix: use one of {', '.join(MERGED_DTYPES)}, "
                "or leave it unset for the training dtype."
            )


@dataclass
class LoraModelConfig(ModelConfig):
    # LoRA by default: on CPU full fine-tuning is slow, its optimizer state is
    # twice the model, and under DPO without PEFT TRL loads a second full copy
    # of the model as the reference.
    use_peft: bool = field(default=True, metadata={"help": "Train a LoRA adapter (default) instead of all weights."})


@dataclass
class RunResult:
    output_dir: Path
    adapter_dir: Path | None
    merged_dir: Path | None
    resumed_from: str | None
    global_step: int
    training_loss: float
    metrics: dict[str, Any]
    log_history: list[dict[str, Any]]


def resolve_model_path(name: str | None) -> str:
    """The model to train: `llm.model.resolve_model`'s one check (a local folder with a config.json, a Hub id
    that exists, or `embedded`, the packaged SmolLM2-135M-Instruct), in milliseconds, before any data loads."""
    from poolbench_data.llm.model import EMBEDDED, resolve_model

    if not name:
        raise ValueError(
            "model_name_or_path is not set. Fix: set it in the recipe or pass --model_name_or_path "
            f"(a local model folder, a Hub id, or `{EMBEDDED}` for the packaged SmolLM2-135M-Instruct)."
        )
    return resolve_model(name, field="model_name_or_path")


def resolve_dataset(name: str) -> str:
    """An existing local folder (absolute), or a Hub id `owner/name`; anything else is an error.

    `datasets.load_dataset("poolbench")` with no ./poolbench folder silently reads a cached copy of some
    other build: a name that is not a folder here must be a Hub id, never a cache lookup.
    """
    local = Path(name).expanduser()
    if local.is_dir():
        return str(local.resolve())
    head = name.split("/")[0]
    if name.startswith(("/", ".", "~")) or name.count("/") != 1 or Path(head).is_dir():
        raise FileNotFoundError(
            f"dataset_name={name!r}: no such folder (relative to {Path.cwd()}). Fix: pass the path of a PoolBench "
            "dataset folder (builders/build_dataset.py --output_dir), or a Hub dataset id owner/name."
        )
    return name


def load_split(script_args: ScriptArguments, split: str):
    """One split of a config of the PoolBench dataset (a local folder in Hub layout, or a Hub id)."""
    from datasets import load_dataset

    config = script_args.dataset_config
    if not script_args.dataset_name:
        raise ValueError(
            "dataset_name is not set. Fix: set it to a PoolBench dataset folder or Hub id "
            f"(with dataset_config: {config})."
        )
    source = resolve_dataset(script_args.dataset_name)
    # datasets caches a local folder under its name and card, not its files'
    # contents: a rebuilt folder of the same name could be read back stale.
    local = Path(source).is_dir()
    dataset = load_dataset(source, name=config, download_mode="force_redownload" if local else None)
    if split not in dataset:
        raise ValueError(
            f"split {split!r} not found in {source} ({config}); "
            f"it has {list(dataset)}. Fix: set dataset_train_split / dataset_test_split."
        )
    logger.info("data: %s, config %s, split %s, %d rows", source, config, split, len(dataset[split]))
    return dataset[split]


def load_checked_splits(script_args: TrainScriptArguments, training_args, check) -> tuple[Any, Any]:
    """The set-up every script starts with, before any model: output_dir set, the train split not an evaluation
    split, then (train, eval or None) loaded and checked with `check(dataset, test_id_prefix)`: the train rows
    against the evaluation boards' ids, the eval rows without (held-out boards are their point)."""
    from poolbench_data.boards.splits import check_id_prefix, eval_id_prefix, refuse_eval_split

    if not training_args.output_dir:
        raise ValueError("output_dir is not set. Fix: set it in the recipe or pass --output_dir.")
    refuse_eval_split(script_args.dataset_train_split)
    prefix = check_id_prefix(script_args.test_id_prefix) if script_args.test_id_prefix else \
        eval_id_prefix(script_args.dataset_name)
    train_dataset = load_split(script_args, script_args.dataset_train_split)
    check(train_dataset, prefix)
    eval_dataset = None
    if training_args.eval_strategy != "no":
        eval_dataset = load_split(script_args, script_args.dataset_test_split)
        check(eval_dataset, None)
    return train_dataset, eval_dataset


def model_and_tokenizer(model_args: ModelConfig) -> tuple[str, Any]:
    """The model's path (`embedded` resolved, checked to exist in milliseconds) and its tokenizer (seconds),
    before the model itself loads (minutes)."""
    model_path = resolve_model_path(model_args.model_name_or_path)
    return model_path, load_tokenizer(model_path, model_args)


def peft_and_quantization(model_args: ModelConfig) -> dict[str, Any]:
    """The trainer's `peft_config` and `quantization_config` from ModelConfig, as TRL's scripts pass them."""
    from trl import get_peft_config, get_quantization_config

    return {"peft_config": get_peft_config(model_args), "quantization_config": get_quantization_config(model_args)}


def find_resume_checkpoint(training_args, resume: bool) -> str | None:
    """An explicit resume_from_checkpoint wins; else the newest checkpoint-* in output_dir."""
    from transformers.trainer_utils import get_last_checkpoint

    if training_args.resume_from_checkpoint:
        return training_args.resume_from_checkpoint
    if resume and os.path.isdir(training_args.output_dir):
        return get_last_checkpoint(training_args.output_dir)
    return None


def at_max_steps(checkpoint: str, max_steps: int) -> bool:
    """Whether the checkpoint already has the run's `max_steps`. transformers checks
    max_steps only after a step, so resuming such a checkpoint trained one step past the recipe (an interrupt
    between the last checkpoint and merged/). A checkpoint past max_steps is refused: loading it would give a
    model trained longer than the command says."""
    import json

    if max_steps <= 0:  # epoch-based: transformers' epoch loop is already empty at the end
        return False
    step = json.loads((Path(checkpoint) / "trainer_state.json").read_text())["global_step"]
    if step > max_steps:
        raise ValueError(f"{checkpoint} is at step {step}, past max_steps={max_steps}. Fix: --max_steps {step} "
                         "or more, or --resume false (trains from the start), or another output_dir.")
    return step == max_steps


def load_finished(trainer, checkpoint: str):
    """A checkpoint at max_steps: its weights and state, no training step. training_loss is the mean of its
    logged losses (transformers' own over a run logged every step)."""
    from transformers import TrainerState
    from transformers.trainer_utils import TrainOutput

    trainer._load_from_checkpoint(checkpoint)
    trainer.state = TrainerState.load_from_json(str(Path(checkpoint) / "trainer_state.json"))
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    loss = sum(losses) / len(losses) if losses else float("nan")
    logger.info("%s already has max_steps=%d: its weights are the run's, nothing trained", checkpoint,
                trainer.state.global_step)
    return TrainOutput(trainer.state.global_step, loss, {"train_loss": loss, "resumed_at_max_steps": True})


def load_tokenizer(model_path: str, model_args: ModelConfig):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path, revision=model_args.model_revision)
    if not tokenizer.chat_template:
        raise ValueError(
            f"the tokenizer of {model_path} has no chat_template, so conversational rows cannot be rendered. "
            "Fix: use an instruct/chat model, or add a chat template to its tokenizer_config.json."
        )
    return tokenizer


def set_model_init_kwargs(training_args, model_args: ModelConfig) -> None:
    """ModelConfig's loading options, for the trainer that loads the model from its path."""
    model_init_kwargs = dict(
        revision=model_args.model_revision,
        attn_implementation=model_args.attn_implementation,
        dtype=model_args.dtype,
    )
    model_init_kwargs.update(training_args.model_init_kwargs or {})
    training_args.model_init_kwargs = model_init_kwargs


def save_outputs(
    trainer, tokenizer, output_dir: Path, save_merged: bool, merged_dtype: str | None = None
) -> tuple[Path | None, Path | None]:
    """The adapter and/or a merged, directly servable model folder (in `merged_dtype`, else the training dtype)."""
    import torch
    from peft import PeftModel

    model = trainer.accelerator.unwrap_model(trainer.model)
    if not isinstance(model, PeftModel):
        if merged_dtype:
            model.to(getattr(torch, merged_dtype))
        model.config.use_cache = True
        trainer.save_model(str(output_dir / MERGED_DIR))
        return None, output_dir / MERGED_DIR
    trainer.save_model(str(output_dir / ADAPTER_DIR))
    # In place: the trainer's model is not used after this.
    merged = merge_lora(model, tokenizer, output_dir / MERGED_DIR, merged_dtype) if save_merged else None
    return output_dir / ADAPTER_DIR, merged


def merge_lora(model, tokenizer, folder: Path, dtype: str | None) -> Path:
    """A LoRA model merged into its base (in place) and saved as a plain folder vLLM serves. The dtype is set
    before the merge, so W + BA is summed in it: bf16 weights are exact in float32, and the update is then kept
    whole instead of rounded to the bf16 grid."""
    import torch

    if dtype:
        model.to(getattr(torch, dtype))
    merged = model.merge_and_unload()
    merged.config.use_cache = True  # training turned the KV cache off in the config; a served model wants it
    merged.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def write_batch_record(trainer, output_dir: Path) -> None:
    """How many rows an optimizer step consumes, in JSON, so a reader of the checkpoints (the loop's scaling
    table) converts steps to examples without unpickling training_args.bin."""
    import json

    args = trainer.args
    per_step = args.per_device_train_batch_size * args.gradient_accumulation_steps * max(1, args.world_size)
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / BATCH_RECORD).write_text(json.dumps({
        "per_device_train_batch_size": args.per_device_train_batch_size,
        "gradient_accumulation_steps": args.gradient_accumulation_steps, "world_size": args.world_size,
        "examples_per_step": per_step}) + "\n")


def train_and_save(
    trainer,
    tokenizer,
    output_dir: Path,
    save_merged: bool,
    resume_from: str | None,
    extra_metrics: dict[str, Any] | None = None,
    merged_dtype: str | None = None,
) -> RunResult:
    """Train (resuming if asked), record metrics and state, save adapter/ and merged/.

    `extra_metrics` (e.g. how many rows the script dropped) join the run's
    metrics in train_results.json.
    """
    write_batch_record(trainer, output_dir)
    with usage_errors():
        finished = bool(resume_from) and at_max_steps(resume_from, trainer.args.max_steps)
    if finished:
        result = load_finished(trainer, resume_from)
    else:
        result = trainer.train(resume_from_checkpoint=resume_from)
    result.metrics.update(speed_record(trainer))
    result.metrics.update(extra_metrics or {})
    trainer.log_metrics("train", result.metrics)
    trainer.save_metrics("train", result.metrics)
    trainer.save_state()
    adapter_dir, merged_dir = save_outputs(trainer, tokenizer, output_dir, save_merged, merged_dtype)
    if hasattr(trainer, "end"):  # transformers >= 5.18: finishes trackers
        trainer.end()
    return RunResult(
        output_dir=output_dir,
        adapter_dir=adapter_dir,
        merged_dir=merged_dir,
        resumed_from=resume_from,
        global_step=trainer.state.global_step,
        training_loss=result.training_loss,
        metrics=dict(result.metrics),
        log_history=list(trainer.state.log_history),
    )


@contextlib.contextmanager
def usage_errors():
    """Mistakes found while checking a run before it trains (recipe, data, model path, lengths): marked, so
    the command line prints them in one message and exits 2 (`command_line`). Errors during training are not
    marked and keep their traceback."""
    try:
        yield
    except (ValueError, OSError, KeyError) as exc:
        exc.poolbench_usage = True
        raise


def command_line(main) -> int:
    """`python training/<script>.py`: a marked mistake is `error: ...` and exit 2, no traceback."""
    try:
        main()
    except Exception as exc:  # noqa: BLE001 - re-raised unless marked
        if not getattr(exc, "poolbench_usage", False):
            raise
        print(error_line(exc), file=sys.stderr)
        return 2
    return 0


def run_script(parser, train, argv=None, **extra):
    """Every script's main: parse (YAML recipe + flags), seed, then train."""
    from transformers import set_seed

    args = list(sys.argv[1:] if argv is None else argv)
    with usage_errors():
        in_project_style(parser, args, Path(sys.argv[0]).name)
        script_args, training_args, model_args = parser.parse_args_and_config(args=args)
    # Before anything random: dataset shuffling, LoRA init, dropout, sampling.
    set_seed(training_args.seed)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    return train(script_args, training_args, model_args, **extra)
