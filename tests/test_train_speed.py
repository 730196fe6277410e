"""The fast training path computes the same numbers as the reference computation.

The reference: the model's own forward with the full `(batch, seq, vocab)`
logits, `log_softmax`, the label token's log-probability at each position
whose label is not -100. The fast path: TRL's fused LM head, restricted to the
labelled positions (`poolbench_data.finetune.speed.use_compact_lm_head`), as the
training scripts run it, DPO's reference log-probs precomputed in the
trainer's set-up, and each DPO pair's shared prompt run once
(`share_prompt_prefix`). Stated tolerance, fp32 on the tiny model: the mean SFT loss
and each summed DPO log-prob agree within rtol 1e-5 / atol 1e-4 (different
summation order: a chunked log-sum-exp against one log_softmax), gradients
within rtol 1e-4 / atol 1e-6.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")

import torch  # noqa: E402

from poolbench_data.finetune import speed  # noqa: E402
import test_dpo  # noqa: E402  (its folder builders and its loaded training/dpo.py)
import test_sft  # noqa: E402

LOSS_TOL = dict(rtol=1e-5, atol=1e-4)
GRAD_TOL = dict(rtol=1e-4, atol=1e-6)
# Precision is not what these tests compare: fp32 everywhere, whatever the CPU.
FP32 = dict(dtype="float32", bf16="false")


def reference_token_logps(model, input_ids, attention_mask, labels):
    """log p(label) at every labelled position from the full logits (0 elsewhere), shifted as causal LMs are."""
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1].float()
    targets = labels[:, 1:]
    mask = targets != -100
    logps = torch.log_softmax(logits, dim=-1).gather(-1, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return logps * mask, mask


@pytest.fixture
def restore_head():
    yield
    speed.use_compact_lm_head(True)  # the scripts' default


def test_compact_head_scores_only_the_labelled_positions_with_the_same_loss_and_gradients(tiny_model, restore_head):
    from transformers import AutoModelForCausalLM
    from trl.trainer import utils as trl_utils

    torch.manual_seed(0)
    # Two rows of different length (right padding), the loss on the last few tokens of each.
    input_ids = torch.randint(10, 1000, (2, 96))
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 80:] = 0
    labels = input_ids.masked_fill(attention_mask == 0, -100)
    labels[0, :85] = -100
    labels[1, :70] = -100
    labelled = int((labels[:, 1:] != -100).sum())

    model = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32)
    logps, mask = reference_token_logps(model, input_ids, attention_mask, labels)
    (-(logps.sum() / mask.sum())).backward()
    reference_loss = -(logps.sum() / mask.sum()).detach()
    reference_grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()

    trl_utils.add_fused_lm_head(model, outputs=("log_probs", "entropy", "is_top1"))
    rows_scored = []
    apply = trl_utils._ChunkedLogProbFunction.apply

    def spy(hidden, *args):
        rows_scored.append(hidden.shape[0])
        return apply(hidden, *args)

    for compact, expected_rows in ((True, labelled), (False, input_ids.numel() - 2)):
        speed.use_compact_lm_head(compact)
        rows_scored.clear()
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(trl_utils._ChunkedLogProbFunction, "apply", spy)
            out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels, fused_lm_head=True)
        assert rows_scored == [expected_rows]  # compact: the 25 + 9 labelled positions, not all 190
        torch.testing.assert_close(out.loss, reference_loss, **LOSS_TOL)
        torch.testing.assert_close(out.log_probs, logps.detach(), **LOSS_TOL)
        out.loss.backward()
        for name, param in model.named_parameters():
            torch.testing.assert_close(param.grad, reference_grads[name], **GRAD_TOL, msg=name)
        model.zero_grad()


def test_sft_script_loss_equals_the_model_own_loss(tiny_model, tmp_path):
    """training/sft.py's trainer on real rows (a batch of 2, their common prefix run once): its loss is the
    model's own masked cross-entropy, each row run whole."""
    folder = test_sft.write_sft_folder(tmp_path / "poolbench", test_sft.make_sft_rows(4))
    argv = test_sft.tiny_args(tiny_model, folder, tmp_path / "out", use_peft="false", **FP32)
    trainer, _, _ = test_sft.sft.make_trainer(*test_sft.parse(argv))
    from trl.trainer import utils as trl_utils

    assert trl_utils._use_triton(torch.device("cpu"))  # the script turned the compact head on
    batch = trainer.data_collator([trainer.train_dataset[i] for i in range(2)])
    model = trainer.model
    assert "unshared_forward" in model.model.__dict__  # the recipe shares the batch's common prefix
    fast = trainer.compute_loss(model, dict(batch))
    with torch.no_grad(), speed.prompt_sharing_off(model):
        own = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"]).loss
    torch.testing.assert_close(fast.detach(), own, **LOSS_TOL)


def test_an_sft_step_runs_the_prefix_once_then_each_row_apart_with_the_batch_loss_and_gradients(tiny_model, tmp_path):
    """training/sft.py with share_prompt (the CPU recipe's): a training step runs the batch's common prefix once,
    then each row's continuation alone against it (one row's activations alive at a time); its loss and every
    gradient equal TRL's own step on the batch run whole."""
    folder = test_sft.write_sft_folder(tmp_path / "poolbench", test_sft.make_sft_rows(4))
    argv = test_sft.tiny_args(tiny_model, folder, tmp_path / "out", use_peft="false", per_device_train_batch_size=3,
                              **FP32)
    trainer, _, _ = test_sft.sft.make_trainer(*test_sft.parse(argv))
    model = trainer.model
    batch = trainer.data_collator([trainer.train_dataset[i] for i in range(3)])
    items = (batch["labels"][:, 1:] != -100).sum()
    lengths = batch["attention_mask"].sum(dim=1).tolist()
    seen = count_calls(model.model.layers[0], "hidden_states")

    def step(train_step):
        model.zero_grad()
        loss = train_step(model, dict(batch), items)
        return loss, {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    shared, shared_grads = step(trainer.training_step)
    prefix = seen[0][1]
    assert 0 < prefix < min(lengths) and seen == [(1, prefix)] + [(1, n - prefix) for n in lengths]
    assert "prefix_state" not in model.model.__dict__
    seen.clear()
    with speed.prompt_sharing_off(model):
        whole, whole_grads = step(trainer.training_step.unshared)
    assert seen == [(3, max(lengths))]  # TRL's step, the batch run whole
    torch.testing.assert_close(shared, whole, **LOSS_TOL)
    assert shared_grads.keys() == whole_grads.keys() and len(whole_grads) == len(list(model.parameters()))
    for name, grad in shared_grads.items():
        torch.testing.assert_close(grad, whole_grads[name], **GRAD_TOL, msg=name)


def test_dpo_chosen_and_rejected_logps_equal_the_reference(tiny_model, tmp_path):
    """training/dpo.py with the CPU recipe and reference log-probs precomputed: the precomputed columns and the
    trainer's own log-probs (each pair's prompt run once, share_prompt) equal the full-logits reference, each
    sequence run whole, on the same pairs, chosen and rejected."""
    folder = tmp_path / "poolbench"
    test_dpo.build_pairs_folder(folder)
    script_args, training_args, model_args = test_dpo.dpo.make_parser().parse_args_and_config(
        args=test_dpo.tiny_args(tiny_model, folder, tmp_path / "out", max_steps=1, precompute_ref_log_probs="true",
                                **FP32)
    )
    # The trainer as the script builds it (the reference precomputed), before any step.
    trainer, _, _ = test_dpo.dpo.make_trainer(script_args, training_args, model_args)
    n = min(3, len(trainer.train_dataset))
    batch = trainer.data_collator([trainer.train_dataset[i] for i in range(n)])
    labels = batch["input_ids"].masked_fill(batch["completion_mask"] == 0, -100)
    assert "unshared_forward" in trainer.model.get_base_model().model.__dict__  # the recipe shares each prompt
    with torch.no_grad(), adapter_off(trainer.model), speed.prompt_sharing_off(trainer.model):
        logps, _ = reference_token_logps(trainer.model, batch["input_ids"], batch["attention_mask"], labels)
    ref_chosen, ref_rejected = logps.sum(dim=1).chunk(2)
    # Precomputed in the set-up (compact head, adapter off) ...
    torch.testing.assert_close(batch["ref_chosen_logps"].float(), ref_chosen, **LOSS_TOL)
    torch.testing.assert_close(batch["ref_rejected_logps"].float(), ref_rejected, **LOSS_TOL)
    assert not torch.equal(ref_chosen, ref_rejected)  # the two sides really differ
    # ... and the policy's log-probs as the loss reads them (before any step the adapter is a no-op).
    model_inputs = {k: v for k, v in batch.items() if k in ("input_ids", "attention_mask")}
    with torch.no_grad():
        fast = trainer.model(**model_inputs, labels=labels, fused_lm_head=True).log_probs.sum(dim=1)
    chosen, rejected = fast.chunk(2)
    torch.testing.assert_close(chosen, ref_chosen, **LOSS_TOL)
    torch.testing.assert_close(rejected, ref_rejected, **LOSS_TOL)
    # ... and the reference forward the shipped CPU recipe runs beside each step instead.
    step_chosen, step_rejected = trainer.compute_ref_log_probs(trainer.model, batch)
    torch.testing.assert_close(step_chosen, ref_chosen, **LOSS_TOL)
    torch.testing.assert_close(step_rejected, ref_rejected, **LOSS_TOL)


def count_calls(module, first: str) -> list[tuple[int, int]]:
    """The (rows, length) of the input `first` of each call of `module` from now on, its forward still its own."""
    seen = []
    own = module.forward

    def counting(*args, **kwargs):
        seen.append(tuple((args[0] if args else kwargs[first]).shape[:2]))
        return own(*args, **kwargs)

    module.forward = counting
    return seen


def count_backbone_calls(model) -> list[tuple[int, int]]:
    return count_calls(model.model, "input_ids")


def right_padded(rows: list, answer_starts: list[int]):
    """input_ids, attention_mask and labels of rows of different lengths, right-padded; each row labelled from its
    answer's start."""
    width = max(len(r) for r in rows)
    input_ids = torch.zeros(len(rows), width, dtype=torch.long)
    attention_mask = torch.zeros_like(input_ids)
    labels = torch.full_like(input_ids, -100)
    for k, (r, start) in enumerate(zip(rows, answer_starts)):
        input_ids[k, : len(r)], attention_mask[k, : len(r)] = r, 1
        labels[k, start : len(r)] = r[start:]
    return input_ids, attention_mask, labels


def adapter_off(model):
    """The reference as TRL defines it under LoRA: the base model with the adapter disabled."""
    return model.disable_adapter() if hasattr(model, "disable_adapter") else torch.no_grad()


# --- precision on a CPU without native bf16 ----------------------------------------------------------------------


def parsed(script, recipe: Path, *extra: str):
    return script.make_parser().parse_args_and_config(args=["--config", str(recipe), *extra])


@pytest.mark.parametrize("native, fallback, expect_fp32", [(False, True, True), (False, False, False),
                                                            (True, True, False)])
def test_bf16_recipes_train_in_fp32_only_where_the_cpu_emulates_bf16(monkeypatch, native, fallback, expect_fp32):
    monkeypatch.setattr(speed, "cpu_has_native_bf16", lambda: native)
    flag = ["--cpu_fp32_fallback", str(fallback).lower()]
    # SFT: fp32 weights under bf16 autocast; DPO: bf16 weights, no autocast.
    for script, recipe, dtype, bf16 in ((test_sft.sft, test_sft.CPU_RECIPE, "float32", True),
                                        (test_dpo.dpo, test_dpo.CPU_RECIPE, "bfloat16", False)):
        script_args, training_args, model_args = parsed(script, recipe, *flag)
        assert (model_args.dtype, training_args.bf16) == (dtype, bf16)  # the recipe as written
        speed.apply_speed_settings(script_args, training_args, model_args)
        if expect_fp32:
            assert (model_args.dtype, training_args.bf16, training_args.mixed_precision) == ("float32", False, "no")
        else:
            assert (model_args.dtype, training_args.bf16) == (dtype, bf16)


def test_a_float32_recipe_is_never_touched(monkeypatch):
    monkeypatch.setattr(speed, "cpu_has_native_bf16", lambda: False)
    script_args, training_args, model_args = parsed(test_sft.sft, test_sft.CPU_RECIPE, "--bf16", "false")
    speed.apply_speed_settings(script_args, training_args, model_args)
    assert (model_args.dtype, training_args.bf16) == ("float32", False)


def test_a_shared_prompt_runs_once_with_the_same_log_probs_and_gradients(tiny_model):
    """DPO's batch layout: [chosen_1, chosen_2, rejected_1, rejected_2], each pair one prompt and two completions
    of different lengths, right-padded. Shared: the backbone sees each prompt once; the numbers do not move."""
    from transformers import AutoModelForCausalLM
    from trl.trainer import utils as trl_utils

    torch.manual_seed(0)
    prompts = [torch.randint(10, 1000, (70,)), torch.randint(10, 1000, (50,))]
    completions = [[torch.randint(10, 1000, (k,)) for k in (12, 7)], [torch.randint(10, 1000, (k,)) for k in (5, 9)]]
    completions[1][1][:2] = completions[1][0][:2]  # a completion that starts like the other: shared further
    rows = [torch.cat([prompts[i], completions[i][side]]) for side in (0, 1) for i in (0, 1)]
    width = max(len(r) for r in rows)
    input_ids, attention_mask, labels = right_padded(rows, [len(prompts[k % 2]) for k in range(4)])

    model = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32)
    trl_utils.add_fused_lm_head(model)

    def run():
        out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels, fused_lm_head=True)
        logps = out.log_probs.sum(dim=1)
        (logps * torch.tensor([1.0, -0.5, 2.0, 0.3])).sum().backward()  # every row its own weight
        grads = {n: p.grad.clone() for n, p in model.named_parameters()}
        model.zero_grad()
        return logps.detach(), grads

    reference, reference_grads = run()
    seen = count_backbone_calls(model)
    speed.share_prompt_prefix(model)
    speed.share_prompt_prefix(model)  # once is enough: a second call changes nothing
    shared, shared_grads = run()
    # each pair: its common prefix once (prompt 70; prompt 50 + 2 shared completion tokens), then both tails
    assert seen == [(1, 70), (2, width - 70), (1, 52), (2, width - 52)]
    torch.testing.assert_close(shared, reference, **LOSS_TOL)
    for name, grad in shared_grads.items():
        torch.testing.assert_close(grad, reference_grads[name], **GRAD_TOL, msg=name)
    with speed.prompt_sharing_off(model):
        seen.clear()
        torch.testing.assert_close(run()[0], reference, **LOSS_TOL)
        assert seen == [(4, width)]


def test_pairs_in_one_batch_run_their_common_prefix_once_with_the_same_log_probs_and_gradients(tiny_model):
    """DPO with several pairs a batch (the tool recipe's 4): every prompt opens with the same system prompt, then
    its own board, so the batch's common prefix runs once, then each pair's own prompt against it, then its two
    completions, each pair cut to its own length; the log-probs and gradients are those of each row run whole,
    and of the pairs one batch each (per_device_train_batch_size 1 with gradient accumulation)."""
    from transformers import AutoModelForCausalLM
    from trl.trainer import utils as trl_utils

    torch.manual_seed(1)
    system = torch.randint(10, 1000, (40,))
    prompts = [torch.cat([system, torch.randint(10, 1000, (k,))]) for k in (30, 8, 55)]
    prompts[1][40:42] = prompts[0][40:42]  # two boards that open alike do not lengthen what all three share
    lengths = [(6, 11), (9, 4), (3, 3)]
    completions = [[torch.randint(10, 1000, (k,)) for k in pair] for pair in lengths]
    rows = [torch.cat([prompts[i], completions[i][side]]) for side in (0, 1) for i in range(3)]
    width = max(len(r) for r in rows)
    input_ids, attention_mask, labels = right_padded(rows, [len(prompts[k % 3]) for k in range(6)])
    weights = torch.tensor([1.0, -0.5, 2.0, 0.3, -1.2, 0.7])  # every row its own weight

    model = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32)
    trl_utils.add_fused_lm_head(model)

    def run(batches):
        logps = torch.zeros(6)
        for rows_ in batches:
            out = model(input_ids=input_ids[rows_], attention_mask=attention_mask[rows_], labels=labels[rows_],
                        fused_lm_head=True)
            own = out.log_probs.sum(dim=1)
            (own * weights[rows_]).sum().backward()
            logps[rows_] = own.detach()
        grads = {n: p.grad.clone() for n, p in model.named_parameters()}
        model.zero_grad()
        return logps, grads

    whole, whole_grads = run([list(range(6))])
    seen = count_backbone_calls(model)
    speed.share_prompt_prefix(model)
    shared, shared_grads = run([[0, 1, 2, 3, 4, 5]])
    own_width = [max(len(rows[i]), len(rows[i + 3])) for i in range(3)]
    assert seen == [(1, 40)] + [call for i in range(3) for call in
                                ((1, len(prompts[i]) - 40), (2, own_width[i] - len(prompts[i])))]
    assert max(own_width) == width and min(own_width) < width  # a short pair really is cut to its own length
    torch.testing.assert_close(shared, whole, **LOSS_TOL)
    for name, grad in shared_grads.items():
        torch.testing.assert_close(grad, whole_grads[name], **GRAD_TOL, msg=name)
    one_by_one, one_grads = run([[i, i + 3] for i in range(3)])  # a pair a batch: each pair's prompt once
    torch.testing.assert_close(one_by_one, whole, **LOSS_TOL)
    for name, grad in one_grads.items():
        torch.testing.assert_close(grad, whole_grads[name], **GRAD_TOL, msg=name)


def test_an_sft_batch_runs_its_common_prefix_once_with_the_same_loss_and_gradients(tiny_model):
    """SFT's layout: B rows, the same system prompt then different boards and answers, right-padded. Shared
    (groups="batch"): the backbone sees the prefix once, then each row's continuation (unpadded); the loss and
    gradients do not move, and equal B batches of one row each (batch 1 with gradient accumulation)."""
    from transformers import AutoModelForCausalLM
    from trl.trainer import utils as trl_utils

    torch.manual_seed(0)
    system = torch.randint(10, 1000, (60,))
    rows = [torch.cat([system, torch.randint(10, 1000, (k,))]) for k in (30, 17, 41)]
    rows[2][60:63] = rows[0][60:63]  # two rows that go on alike do not lengthen the prefix all three share
    width = max(len(r) for r in rows)
    input_ids, attention_mask, labels = right_padded(rows, [len(r) - 8 for r in rows])  # the answer: 8 tokens

    model = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32)
    trl_utils.add_fused_lm_head(model)

    def run(batches):
        total = torch.zeros(())
        for rows_ in batches:
            out = model(input_ids=input_ids[rows_], attention_mask=attention_mask[rows_], labels=labels[rows_],
                        fused_lm_head=True)
            loss = -out.log_probs.sum() / (labels != -100).sum()  # TRL's sum over num_items_in_batch
            loss.backward()
            total = total + loss.detach()
        grads = {n: p.grad.clone() for n, p in model.named_parameters()}
        model.zero_grad()
        return total, grads

    one_by_one, one_grads = run([[0], [1], [2]])
    seen = count_backbone_calls(model)
    speed.share_prompt_prefix(model, groups="batch")
    shared, shared_grads = run([[0, 1, 2]])
    assert seen == [(1, 60), (1, 30), (1, 17), (1, 41)]  # the prefix, then each row's own continuation
    torch.testing.assert_close(shared, one_by_one, **LOSS_TOL)
    for name, grad in shared_grads.items():
        torch.testing.assert_close(grad, one_grads[name], **GRAD_TOL, msg=name)
    seen.clear()
    run([[1]])  # a batch of one row has nothing to share with: the backbone's own forward
    assert seen == [(1, width)]
    with pytest.raises(ValueError, match="groups='rows'"):
        speed.share_prompt_prefix(model, groups="rows")
