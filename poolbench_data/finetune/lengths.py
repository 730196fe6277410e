"""Which training rows fit `max_length`, measured with the model's tokenizer and chat template as TRL will
render them; rows that do not fit are dropped, never cut (a cut JSON action teaches a broken answer)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from poolbench_data.checks.pairs import MAX_REPORTED, column_names
from poolbench_data.checks.demos import is_tool_dataset

logger = logging.getLogger("poolbench.sft")


@dataclass
class LengthReport:
    """Which training rows do not fit max_length, measured with the model's tokenizer and chat template."""

    max_length: int | None
    rows: int
    prompt_too_long: list[int]  # the prompt alone fills max_length: TRL would drop the row
    completion_cut: list[int]  # the prompt fits, the completion does not: TRL would cut the answer

    @property
    def dropped(self) -> list[int]:
        return sorted(self.prompt_too_long + self.completion_cut)

    @property
    def kept(self) -> int:
        return self.rows - len(self.dropped)

    def metrics(self) -> dict[str, int]:
        return {
            "train_rows": self.rows,
            "train_rows_kept": self.kept,
            "train_rows_prompt_over_max_length": len(self.prompt_too_long),
            "train_rows_completion_over_max_length": len(self.completion_cut),
        }


def measure_lengths(dataset, tokenizer, max_length: int | None) -> LengthReport:
    """Tokenize every row as SFTTrainer will (chat template, generation prompt) and find those over max_length."""
    from trl.data_utils import common_prefix_length

    too_long, cut = [], []
    if max_length is not None and is_tool_dataset(column_names(dataset)):
        # A conversation is trained whole: one that does not fit would lose its last turn, the action.
        for index, row in enumerate(dataset):
            ids = tokenizer.apply_chat_template(row["messages"], tokenize=True, return_dict=True)["input_ids"]
            if len(ids) > max_length:
                cut.append(index)
    elif max_length is not None:
        for index, row in enumerate(dataset):
            prompt_ids = tokenizer.apply_chat_template(
                row["prompt"], tokenize=True, add_generation_prompt=True, return_dict=True
            )["input_ids"]
            full_ids = tokenizer.apply_chat_template(
                row["prompt"] + row["completion"], tokenize=True, return_dict=True
            )["input_ids"]
            # Where TRL starts the completion: the shared prefix of the two renderings.
            prompt_len = common_prefix_length(prompt_ids, full_ids)
            if prompt_len >= max_length:
                too_long.append(index)
            elif len(full_ids) > max_length:
                cut.append(index)
    return LengthReport(max_length=max_length, rows=len(dataset), prompt_too_long=too_long, completion_cut=cut)


def enforce_max_length(dataset, report: LengthReport, max_dropped_share: float):
    """The rows that fit; stop when too many do not."""
    dropped = report.dropped
    if not dropped:
        return dataset
    share = len(dropped) / report.rows
    what = (
        f"{len(report.prompt_too_long)} of {report.rows} rows have a prompt of at least max_length="
        f"{report.max_length} tokens and {len(report.completion_cut)} more a completion that runs past it "
        f"(rows {dropped[:MAX_REPORTED]}{' ...' if len(dropped) > MAX_REPORTED else ''})"
    )
    if share > max_dropped_share or report.kept == 0:
        raise ValueError(
            f"{what}: {share:.1%} of the training rows would be dropped, more than max_dropped_share="
            f"{max_dropped_share}. Fix: raise max_length (PoolBench prompts are ~1,450 SmolLM2 tokens, a JSON "
            "action ~60 more), or allow the loss with --max_dropped_share."
        )
    logger.warning("%s: dropped (%.1f%% <= max_dropped_share=%s)", what, 100 * share, max_dropped_share)
    drop = set(dropped)
    return dataset.select([i for i in range(report.rows) if i not in drop])


def check_context(dataset, tokenizer, model_path: str, model_args, args) -> int:
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


def fit_rows(train_dataset, eval_dataset, tokenizer, max_length: int | None, max_dropped_share: float,
             columns: list[str]):
    """(train, eval, report): the rows that fit max_length (the run stops when more than max_dropped_share of the
    training rows would be dropped; evaluation rows that do not fit are dropped with a warning, and only an empty
    eval set stops it), with only `columns` (what TRL reads: outcome columns and a stray `tools` or
    `chat_template_kwargs` never reach tokenization or collation)."""
    report = measure_lengths(train_dataset, tokenizer, max_length)
    train_dataset = enforce_max_length(train_dataset, report, max_dropped_share).select_columns(columns)
    if eval_dataset is not None:
        eval_report = measure_lengths(eval_dataset, tokenizer, max_length)
        eval_dataset = enforce_max_length(eval_dataset, eval_report, max_dropped_share=1.0).select_columns(columns)
    return train_dataset, eval_dataset, report
