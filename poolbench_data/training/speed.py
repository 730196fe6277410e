"""How a run computes on the device it has: the compact LM head and the CPU's precision (issue 19)."""

from __future__ import annotations

import logging
from typing import Any

from poolbench_data.llm.model import cpu_has_native_bf16  # one definition: training and vLLM

logger = logging.getLogger("poolbench.training")


def use_compact_lm_head(enabled: bool) -> None:
    """Make TRL's fused LM head score only the labelled positions on every device, or restore TRL's choice.

    `trl.trainer.utils` decides this per call with `_use_triton(device)`: compact on Triton devices, every
    position elsewhere (static tile shapes for compilers such as Neuron's). On a CPU running eagerly nothing
    recompiles, and the loss is the same sum over the same labelled positions. The kernel itself keeps its own
    `_use_triton` (`trl.kernels.chunked_logprob`), so this changes which rows reach it, not how they are computed.
    """
    import trl.trainer.utils as trl_utils
    from trl.kernels import chunked_logprob

    if not hasattr(trl_utils, "_use_triton"):
        # A TRL that no longer decides it this way: the speed-up is gone, the numbers are not wrong.
        logger.warning("this TRL has no trl.trainer.utils._use_triton: compact_lm_head has no effect")
        return
    trl_utils._use_triton = (lambda device: True) if enabled else chunked_logprob._use_triton


def apply_speed_settings(script_args, training_args, model_args) -> None:
    """The compact LM head and the CPU precision; before the model loads (they change how it is loaded)."""
    import torch

    use_compact_lm_head(script_args.compact_lm_head)
    on_cpu = training_args.use_cpu or not torch.cuda.is_available()
    asked_bf16 = model_args.dtype == "bfloat16" or bool(training_args.bf16)
    if on_cpu and asked_bf16 and script_args.cpu_fp32_fallback and not cpu_has_native_bf16():
        logger.warning(
            "this CPU has no native bf16 (no AVX512-BF16, no AMX: %s): training in float32 instead of the recipe's "
            "dtype=%s, bf16=%s (emulated bf16 matmuls measured ~40x slower). --cpu_fp32_fallback false keeps bf16.",
            torch.backends.cpu.get_cpu_capability(), model_args.dtype, training_args.bf16,
        )
        if model_args.dtype == "bfloat16":
            model_args.dtype = "float32"
        training_args.bf16 = False
        # TrainingArguments derived this from bf16 at parse time; the accelerator reads it.
        if training_args.mixed_precision == "bf16":
            training_args.mixed_precision = "no"


def speed_record(trainer) -> dict[str, Any]:
    """How the run computed, read off the trainer: for train_results.json beside the timings."""
    import trl.trainer.utils as trl_utils

    device = trainer.accelerator.device
    decides = getattr(trl_utils, "_use_triton", None)  # see use_compact_lm_head
    record = {
        "train_dtype": str(trainer.accelerator.unwrap_model(trainer.model).dtype).removeprefix("torch."),
        "train_bf16_autocast": bool(trainer.args.bf16),
        "compact_lm_head": bool(decides(device)) if decides else "unknown",
    }
    if device.type == "cpu":
        record["cpu_native_bf16"] = cpu_has_native_bf16()
    return record
