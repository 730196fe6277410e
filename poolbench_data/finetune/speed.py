"""How a run computes on the device it has: the compact LM head and the CPU's precision."""

from __future__ import annotations

import logging
from contextlib import contextmanager
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
        # A TRL that does not decide it this way: the speed-up is gone, the numbers are not wrong.
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
            "dtype=%s, bf16=%s (emulated bf16 matmuls are many times slower). --cpu_fp32_fallback false keeps bf16.",
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


def share_prompt_prefix(model, groups: str = "pairs") -> None:
    """Run the backbone once over the prefix a group of rows shares, not once a row.

    `pairs` (DPO): the batch is [chosen_1..chosen_n, rejected_1..rejected_n], each the same prompt (~1,450 tokens
    here) followed by a different completion (~40-60): the prompt is ~95% of a pair's tokens, so each pair is a
    group; with several pairs in a batch, what all of them open with (the system prompt) runs once for the batch,
    then each pair's own prompt against it, each pair cut to its own length. `batch` (SFT): the whole batch is a
    group; every PoolBench prompt opens with the same system prompt (~735 tokens, ~60% of a demonstration), so a
    batch of 4 rows runs it once where 4 batches of 1 ran it 4 times.
    The backbone runs over a group's common prefix once (keeping its keys and values), then over the
    continuations, batched, against them: the same sums in another order, so the same log-probs and gradients
    (to rounding, tests/test_train_speed.py). The prefix's keys and values are the cache, so gradient
    checkpointing (which drops the cache) must be off. Any other call (generation, a batch that is not pairs,
    explicit positions) goes to the original forward.
    """
    if groups not in ("pairs", "batch"):
        raise ValueError(f"groups={groups!r}: use pairs (DPO) or batch (SFT)")
    backbone = _backbone(model)
    if "unshared_forward" in backbone.__dict__:
        return
    original = backbone.forward

    def forward(input_ids=None, attention_mask=None, **kwargs):
        if (input_ids is None or attention_mask is None or (groups == "pairs" and input_ids.size(0) % 2)
                or any(kwargs.get(k) is not None for k in ("position_ids", "past_key_values", "inputs_embeds"))):
            return original(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        import torch
        from transformers.modeling_outputs import BaseModelOutputWithPast

        kwargs.pop("use_cache", None)
        state = backbone.__dict__.get("prefix_state")
        if state is not None:  # one row of train_rows_apart's batch: its continuation against the kept prefix
            prefix, pairs, head = state
            tail = _tail(original, input_ids[:, prefix:], attention_mask, _cache_of(pairs), kwargs)
            return BaseModelOutputWithPast(last_hidden_state=torch.cat([head, tail], dim=1))
        if groups == "batch":
            return BaseModelOutputWithPast(last_hidden_state=_shared_hidden(original, input_ids, attention_mask,
                                                                             kwargs, apart=True))
        return BaseModelOutputWithPast(last_hidden_state=_pairs_hidden(original, input_ids, attention_mask, kwargs))

    backbone.forward = forward
    backbone.unshared_forward = original


def _backbone(model):
    causal = model.get_base_model() if hasattr(model, "get_base_model") else model
    return causal.base_model


@contextmanager
def prompt_sharing_off(model):
    """The backbone's own forward for a while (a reference to compare with)."""
    backbone = _backbone(model)
    shared = backbone.__dict__.get("forward")
    if shared is None:
        yield
        return
    backbone.forward = backbone.unshared_forward
    try:
        yield
    finally:
        backbone.forward = shared


def _shared_hidden(original, ids, mask, kwargs, apart: bool = False, after=None):
    """Hidden states (B, L, d) of B right-padded rows: their common prefix once, then every continuation; all
    continuations in one padded call, or `apart`, one call a row against the same prefix (no padding: SFT's
    continuations differ by hundreds of tokens, and padding them to the longest would hold a GB of activations
    more at a batch of 4). `after` = (start, the keys and values of the `start` tokens every row opens with,
    already run): the rows go on from there, and the states returned are those of positions `start` onwards."""
    import torch

    rows = ids.size(0)
    start, before = after or (0, None)
    prefix = _common_prefix(ids, mask)
    if prefix is None and before is None:
        return original(input_ids=ids, attention_mask=mask, use_cache=False, **kwargs).last_hidden_state
    prefix = max(prefix or 0, start)
    cache, parts = (None if before is None else _cache_of(before)), []
    if prefix > start:
        head = original(input_ids=ids[:1, start:prefix], attention_mask=mask[:1, :prefix], past_key_values=cache,
                        use_cache=True, **kwargs)
        cache = head.past_key_values
        parts.append(head.last_hidden_state.expand(rows, -1, -1))
    if apart:
        kept, lengths, tails = _pairs(cache), [int(n) for n in mask.sum(dim=1)], []
        for r in range(rows):
            own = _tail(original, ids[r : r + 1, prefix : lengths[r]], mask[r : r + 1, : lengths[r]],
                        _cache_of(kept), kwargs)
            tails.append(torch.nn.functional.pad(own, (0, 0, 0, ids.size(1) - lengths[r])))  # zeros where padded
        tail = torch.cat(tails)
    else:
        cache.batch_repeat_interleave(rows)
        tail = _tail(original, ids[:, prefix:], mask, cache, kwargs)
    return torch.cat(parts + [tail], dim=1)


def _pairs_hidden(original, ids, mask, kwargs):
    """Hidden states of DPO's [chosen_1..chosen_n, rejected_1..rejected_n]: the batch's common prefix once, then
    per pair its own common prefix against it and both completions, each pair unpadded beyond its longer row
    (zeros there); one pair, or pairs that share nothing, as `_shared_hidden` a pair."""
    import torch

    n = ids.size(0) // 2
    batch = _common_prefix(ids, mask) if n > 1 else None
    if batch is None:
        pairs = [_shared_hidden(original, ids[[i, i + n]], mask[[i, i + n]], kwargs) for i in range(n)]
    else:
        head = original(input_ids=ids[:1, :batch], attention_mask=mask[:1, :batch], use_cache=True, **kwargs)
        kept, pairs = _pairs(head.past_key_values), []
        for i in range(n):
            rows = [i, i + n]
            width = int(mask[rows].sum(dim=1).max())
            own = _shared_hidden(original, ids[rows, :width], mask[rows, :width], kwargs, after=(batch, kept))
            hidden = torch.cat([head.last_hidden_state.expand(2, -1, -1), own], dim=1)
            pairs.append(torch.nn.functional.pad(hidden, (0, 0, 0, ids.size(1) - width)))
    return torch.cat([p[:1] for p in pairs] + [p[1:] for p in pairs])


def _tail(original, ids, mask, cache, kwargs):
    out = original(input_ids=ids, attention_mask=mask, past_key_values=cache, use_cache=True, **kwargs)
    return out.last_hidden_state


def _common_prefix(ids, mask) -> int | None:
    """Tokens every row of a right-padded batch opens with, each row keeping at least one of its own; None where
    there is nothing to share (one row, no common token, left padding)."""
    rows = ids.size(0)
    lengths = [int(n) for n in mask.sum(dim=1)]
    shortest = min(lengths)
    right_padded = all(bool(mask[r, : lengths[r]].all()) for r in range(rows))
    same = (ids[:, :shortest] == ids[:1, :shortest]).all(dim=0)
    prefix = shortest if bool(same.all()) else int((~same).nonzero()[0])
    prefix = min(prefix, shortest - 1)  # each continuation keeps a token: the cache is never the whole row
    return prefix if rows >= 2 and prefix >= 1 and right_padded else None


def _pairs(prefix_cache) -> list[tuple[Any, Any]]:
    return [(layer.keys, layer.values) for layer in prefix_cache.layers]


def _cache_of(pairs):
    """A cache holding the prefix's keys and values themselves (no copy; autograd reaches the prefix through them):
    each continuation extends its own."""
    from transformers import DynamicCache

    cache = DynamicCache()
    for i, (keys, values) in enumerate(pairs):
        cache.update(keys, values, i)
    return cache


def train_rows_apart(trainer) -> None:
    """SFT's shared prefix with one row's activations alive at a time: a training step runs the batch's common
    prefix once, keeps its keys and values as detached leaves, then gives each row (unpadded) to the trainer's own
    step (TRL's loss over the batch's `num_items_in_batch` tokens, its backward), which runs only the row's
    continuation against those leaves; the leaves' summed gradients then go back through the prefix once. The same
    loss and gradients as the batch run whole (tests/test_train_speed.py), at about one row's activation memory
    instead of the batch's (docs/benchmarks.md#training). Needs share_prompt_prefix(model, groups="batch")
    installed. A batch with nothing to share, or with a labelled token inside the prefix, takes the trainer's own
    step."""
    import torch

    step = trainer.training_step  # bound: TRL's, inside its activation-offload context

    def training_step(model, inputs, num_items_in_batch=None):
        ids, mask, labels = inputs.get("input_ids"), inputs.get("attention_mask"), inputs.get("labels")
        prefix = None if ids is None or mask is None or labels is None else _common_prefix(ids, mask)
        if prefix is None or bool((labels[:, 1 : prefix + 1] != -100).any()):
            return step(model, inputs, num_items_in_batch)
        if num_items_in_batch is None:  # each row's loss must be over the batch's tokens, as the batch's would be
            num_items_in_batch = (labels[:, 1:] != -100).sum()
        backbone = _backbone(model)
        model.train()
        with trainer.compute_loss_context_manager():
            head = backbone.unshared_forward(input_ids=ids[:1, :prefix], attention_mask=mask[:1, :prefix],
                                             use_cache=True)
        kept = _pairs(head.past_key_values)
        leaves = [(k.detach().requires_grad_(), v.detach().requires_grad_()) for k, v in kept]
        backbone.prefix_state = (prefix, leaves, head.last_hidden_state.detach())
        total = None
        try:
            for r, n in enumerate(int(n) for n in mask.sum(dim=1)):
                row = {k: v[r : r + 1, :n] if torch.is_tensor(v) and v.shape[:2] == ids.shape else v
                       for k, v in inputs.items()}
                loss = step(model, row, num_items_in_batch)
                total = loss if total is None else total + loss
        finally:
            del backbone.prefix_state
        torch.autograd.backward([t for pair in kept for t in pair], [t.grad for pair in leaves for t in pair])
        return total

    training_step.unshared = step
    trainer.training_step = training_step


def load_sharing_prompts(model_path: str, training_args, quantization_config=None, groups: str = "pairs"):
    """The policy loaded here as TRL would load it (its own `create_model_from_path` and the run's
    `model_init_kwargs`), with `share_prompt_prefix` installed before TRL's set-up runs its first forward (the
    precomputed reference log-probs)."""
    from trl.trainer.utils import create_model_from_path

    if training_args.gradient_checkpointing:
        raise ValueError("share_prompt: true needs gradient_checkpointing: false (a checkpointed forward drops the "
                         "prompt's cache). Fix: set one of them false.")
    if quantization_config is not None:
        raise ValueError("share_prompt: true loads the model itself, without quantization. Fix: set share_prompt "
                         "false to train a quantized model.")
    kwargs = dict(training_args.model_init_kwargs or {})
    kwargs.setdefault("trust_remote_code", training_args.trust_remote_code)
    model = create_model_from_path(model_path, **kwargs)
    share_prompt_prefix(model, groups)
    training_args.model_init_kwargs = None  # used here; TRL would warn that it ignores them
    return model
