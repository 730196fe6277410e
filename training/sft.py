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

Every field of TRL's `ScriptArguments`, `SFTConfig` and `ModelConfig`, and the
few below, can be set in the recipe or on the command line (the command line
wins); unknown keys are errors, so a typo in a recipe does not silently fall
back to a default.

What this script adds to `trl/scripts/sft.py`:
- the seed is set before anything random happens (LoRA init, data order);
- LoRA is on by default (`use_peft: false` trains all weights);
- a model that does not exist is refused before anything is read; then,
  before the model is loaded, the rows are validated (`check_sft_rows`), rows
  from the test split are refused (they would leak the evaluation boards), and
  every row is tokenized to find those that do not fit `max_length`;
- rows that do not fit are dropped, not truncated (a cut JSON action teaches a
  broken answer with no end of turn), and the run stops when more than
  `max_dropped_share` of them would be (TRL would silently drop rows whose
  prompt alone fills max_length, and cut the others);
- the loss is on the completion only (`completion_only_loss`, required);
- an interrupted run resumes from the last `checkpoint-*` in `output_dir`
  (`--resume false` ignores it; `resume_from_checkpoint` picks one);
- outputs, under `output_dir`:
    adapter/   the LoRA adapter (+ tokenizer), loadable with peft;
    merged/    base + adapter merged (+ tokenizer), in `merged_dtype` (else the
               training dtype): a plain model folder that transformers and vLLM
               load directly (with use_peft false: the fine-tuned model, and no
               adapter/);
    checkpoint-*/, trainer_state.json, train_results.json (with the row counts).
- `model_name_or_path: embedded` means the packaged SmolLM2-135M-Instruct.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trl import SFTConfig, TrlParser

from poolbench_data.boards.splits import EVAL_SEED, SplitLeakError, eval_id_prefix, id_prefix, refuse_eval_split
from poolbench_data.prefs import check

# training/ is a folder of scripts, not a package: `python training/sft.py`
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

logger = logging.getLogger("poolbench.sft")

REQUIRED_COLUMNS = ("prompt", "completion")
TOOL_COLUMNS = ("messages",)  # the sft_tools config: whole tool-using conversations
PROMPT_ROLES = ("system", "user")


class SFTFormatError(ValueError):
    """The dataset is not in TRL's conversational prompt-completion format."""


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

    def __post_init__(self):
        super().__post_init__()
        # At parse time: a recipe typo should not wait for the tokenizer to surface.
        if not 0.0 <= self.max_dropped_share <= 1.0:
            raise ValueError(
                f"max_dropped_share={self.max_dropped_share} is not a share. Fix: set it between 0.0 and 1.0."
            )


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


@dataclass
class SFTRunResult(RunResult):
    lengths: LengthReport | None = None


def make_parser() -> TrlParser:
    return TrlParser((SFTScriptArguments, SFTConfig, LoraModelConfig))


# --- the data ---------------------------------------------------------------------


def _message_problem(message: Any, allowed_roles: tuple[str, ...]) -> str | None:
    if not isinstance(message, Mapping):
        return f"a message is a {type(message).__name__}, not a {{role, content}} mapping"
    role, content = message.get("role"), message.get("content")
    if role is None:
        return "a message has no 'role'"
    if role not in allowed_roles:
        return f"role {role!r} is not allowed here (allowed: {', '.join(allowed_roles)})"
    if not isinstance(content, str):
        # None when a key is missing in one row of an Arrow table; lists are VLM content.
        return f"the {role!r} message has content of type {type(content).__name__}, expected str"
    if not content.strip():
        return f"the {role!r} message is empty"
    return None


def sft_row_problems(row: Mapping[str, Any]) -> list[str]:
    """Everything wrong with one row's prompt and completion (empty when fine)."""
    problems = []
    prompt, completion = row.get("prompt"), row.get("completion")
    if not isinstance(prompt, list) or not prompt:
        problems.append("`prompt` is " + ("an empty message list" if isinstance(prompt, list) else
                                          f"a {type(prompt).__name__}, expected a list of {{role, content}} messages"))
    else:
        for i, message in enumerate(prompt):
            problem = _message_problem(message, PROMPT_ROLES)
            if problem:
                problems.append(f"`prompt`[{i}]: {problem}")
        if not problems and prompt[-1]["role"] != "user":
            # The completion answers the last user turn; the template adds the assistant header after it.
            problems.append(f"`prompt` ends with a {prompt[-1]['role']!r} message, expected the user's")
    if not isinstance(completion, list) or len(completion) != 1:
        what = f"{len(completion)} messages" if isinstance(completion, list) else f"a {type(completion).__name__}"
        problems.append(f"`completion` is {what}, expected exactly one assistant message")
    else:
        problem = _message_problem(completion[0], ("assistant",))
        if problem:
            problems.append(f"`completion`[0]: {problem}")
    return problems


def tool_row_problems(row: Mapping[str, Any]) -> list[str]:
    """Everything wrong with one tool-use conversation (empty when fine): [system?, user, (model call, tool
    answer)*, model action], every message a non-empty string, every call a ghost_ball call with its two
    arguments, and the last model turn an answer, not a call."""
    from poolbench_data.llm.tools import tool_calls
    from poolbench_data.prefs.tool_sft import call_problems

    msgs = row.get("messages")
    if not isinstance(msgs, list) or not msgs:
        return ["`messages` is " + ("an empty message list" if isinstance(msgs, list) else
                                    f"a {type(msgs).__name__}, expected a list of {{role, content}} messages")]
    problems = []
    for i, message in enumerate(msgs):
        if problem := _message_problem(message, ("system", "user", "assistant", "tool")):
            problems.append(f"`messages`[{i}]: {problem}")
    if problems:
        return problems
    roles = [m["role"] for m in msgs]
    start = 1 if roles[0] == "system" else 0
    if roles[start:start + 1] != ["user"] or "system" in roles[start:] or "user" in roles[start + 1:]:
        problems.append(f"roles {roles}: expected [system?, user] then the model's turns and the tool's answers")
    turns = roles[start + 1:]
    if not turns or turns[-1] != "assistant":
        problems.append("the conversation does not end with the model's turn")
    for i in range(start + 1, len(msgs)):
        m = msgs[i]
        if m["role"] == "tool" and (msgs[i - 1]["role"] != "assistant" or not tool_calls(msgs[i - 1]["content"])):
            problems.append(f"`messages`[{i}]: a tool answer that follows no call")
        if m["role"] == "assistant":
            problems += [f"`messages`[{i}]: {p}" for p in call_problems(m["content"])]
            if i == len(msgs) - 1 and tool_calls(m["content"]):
                problems.append(f"`messages`[{i}]: the last model turn is a call, not the action")
    return problems


# The ids of builders/build_dataset.py's default evaluation boards; see boards.splits.eval_id_prefix.
DEFAULT_TEST_ID_PREFIX = id_prefix(EVAL_SEED)


def check_sft_rows(dataset: Any, test_id_prefix: str | None = DEFAULT_TEST_ID_PREFIX) -> None:
    """Raise unless every row is a valid prompt-completion demonstration from a training split.

    `dataset` is a `datasets.Dataset` or any iterable of row mappings. Extra
    columns (scenario_id, category, outcomes...) are allowed; the script drops
    them before the trainer. A row whose `split` is an evaluation split, or
    whose `scenario_id` starts with `test_id_prefix` (None: no id check), is
    refused with `SplitLeakError`.
    """
    from poolbench_data.prefs.check import RowProblems, column_names

    columns = column_names(dataset)
    tools = is_tool_dataset(columns)
    missing = [] if tools else [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise SFTFormatError(
            f"sft dataset is missing column(s) {missing} (has {columns}). "
            "Fix: load the `sft` config (dataset_config: sft, built by builders/build_sft.py), whose rows have "
            "`prompt` and `completion` as lists of {role, content} messages; rename your columns if they differ."
        )

    found, leaks, n_rows = RowProblems(), RowProblems(), 0
    for index, row in enumerate(dataset):
        n_rows += 1
        if problems := (tool_row_problems(row) if tools else sft_row_problems(row)):
            found.add(index, "; ".join(problems))
        if leak := check.leak_problem(row, test_id_prefix):
            leaks.add(index, leak)
    if n_rows == 0:
        raise SFTFormatError("sft dataset has no rows. Fix: check the split name and the data_files of the config.")
    if leaks:
        # Checked before the format: a leak is the worse mistake, whatever else is wrong.
        raise SplitLeakError(
            f"{leaks.n} of {n_rows} training rows come from the test split:{leaks.listing()}"
            "\nTraining on them leaks the evaluation boards into the model, and every score measured on them "
            "afterwards is void. Fix: rebuild the config from the train split (builders/build_sft.py --split train), "
            "or point dataset_name/dataset_train_split at training data."
        )
    if found and tools:
        raise SFTFormatError(
            f"{found.n} of {n_rows} sft_tools rows are malformed:{found.listing()}"
            "\nFix: each row's `messages` is [system, user, assistant <tool_call>, tool answer, ..., assistant JSON "
            "action], every call ghost_ball with exactly target_ball and pocket; rebuild with "
            "builders/build_sft.py --tools."
        )
    if found:
        raise SFTFormatError(
            f"{found.n} of {n_rows} sft rows are malformed:{found.listing()}"
            "\nFix: each row needs `prompt` = [system?, user] messages and `completion` = "
            '[{"role": "assistant", "content": "<the JSON action>"}], every message with a string role and '
            "non-empty content."
        )


def is_tool_dataset(columns) -> bool:
    """Whole conversations (`messages`, the sft_tools config) rather than prompt-completion rows."""
    return "messages" in columns and not all(c in columns for c in REQUIRED_COLUMNS)


def measure_lengths(dataset, tokenizer, max_length: int | None) -> LengthReport:
    """Tokenize every row as SFTTrainer will (chat template, generation prompt) and find those over max_length."""
    from trl.data_utils import common_prefix_length

    from poolbench_data.prefs.check import column_names

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
    from poolbench_data.prefs.check import MAX_REPORTED

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


# --- the run ------------------------------------------------------------------------


def check_tool_template(training_args: SFTConfig) -> None:
    """Tool conversations hold the prompt and the tool's answers between the model's turns: only a chat
    template that marks those turns ({% generation %}) keeps the loss off the rest."""
    from trl.chat_template_utils import has_generation_markers

    if not training_args.assistant_only_loss:
        raise ValueError(
            "these rows are tool-use conversations (`messages`) and assistant_only_loss is false: the loss would "
            "fall on the prompt and the tool's answers. Fix: set assistant_only_loss: true and chat_template_path "
            "(training/recipes/sft-tools-smollm2-135m-cpu.yaml does)."
        )
    path = training_args.chat_template_path
    if path is not None and Path(path).suffix in (".jinja", ".j2"):
        if not Path(path).is_file():
            raise FileNotFoundError(f"chat_template_path {path!r} does not exist. Fix: give the template file's "
                                    "path (training/templates/smollm2-chatml-tools.jinja for SmolLM2).")
        if not has_generation_markers(Path(path).read_text()):
            raise ValueError(f"chat_template_path {path!r} has no {{% generation %}} markers, so no turn would be "
                             "trained. Fix: mark the model's turns (see training/templates/).")


def make_trainer(script_args: SFTScriptArguments, training_args: SFTConfig, model_args: LoraModelConfig):
    """Everything up to a ready SFTTrainer: (trainer, tokenizer, length report). Cheapest checks first: the
    arguments, the model path, the rows, their lengths (tokenizer only); the model loads last."""
    from trl import SFTTrainer, get_peft_config, get_quantization_config

    if not training_args.output_dir:
        raise ValueError("output_dir is not set. Fix: set it in the recipe or pass --output_dir.")
    if training_args.completion_only_loss is False:
        # The prompt is ~25x the answer: a loss over it would mostly fit the board description.
        raise ValueError(
            "completion_only_loss=false would train on the prompt too. Fix: set completion_only_loss: true "
            "(or leave it unset)."
        )
    # TRL's default (None) already means completion-only for prompt-completion rows; set it so it cannot drift.
    training_args.completion_only_loss = True
    refuse_eval_split(script_args.dataset_train_split)

    # A misspelt model fails in milliseconds, before the data is read.
    model_path = resolve_model_path(model_args.model_name_or_path)
    check_model_path(model_path)

    # Then the data: a malformed or leaking dataset should fail before minutes of model loading.
    prefix = script_args.test_id_prefix or eval_id_prefix(script_args.dataset_name)
    train_dataset = load_split(script_args, script_args.dataset_train_split)
    check_sft_rows(train_dataset, test_id_prefix=prefix)
    tools = is_tool_dataset(check.column_names(train_dataset))
    if tools:
        check_tool_template(training_args)
    eval_dataset = None
    if training_args.eval_strategy != "no":
        eval_dataset = load_split(script_args, script_args.dataset_test_split)
        check_sft_rows(eval_dataset, test_id_prefix=None)  # evaluating on held-out boards is the point

    # The tokenizer (seconds) before the model: it measures the rows against max_length.
    tokenizer = load_tokenizer(model_path, model_args)
    report = measure_lengths(train_dataset, tokenizer, training_args.max_length)
    train_dataset = enforce_max_length(train_dataset, report, script_args.max_dropped_share)
    if eval_dataset is not None:
        eval_report = measure_lengths(eval_dataset, tokenizer, training_args.max_length)
        # Evaluation rows that do not fit are dropped with a warning; only an empty eval set stops the run.
        eval_dataset = enforce_max_length(eval_dataset, eval_report, max_dropped_share=1.0)
    # Only what TRL reads: outcome columns (structs, bools) and a stray `tools`
    # or `chat_template_kwargs` column never reach tokenization or collation.
    keep = list(TOOL_COLUMNS if tools else REQUIRED_COLUMNS)
    train_dataset = train_dataset.select_columns(keep)
    if eval_dataset is not None:
        eval_dataset = eval_dataset.select_columns(keep)

    apply_speed_settings(script_args, training_args, model_args)
    set_model_init_kwargs(training_args, model_args)
    logger.info("model %s, %d training rows (of %d)", model_path, report.kept, report.rows)
    trainer = SFTTrainer(
        model=model_path,
        args=training_args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        quantization_config=get_quantization_config(model_args),
        peft_config=get_peft_config(model_args),
    )
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
    resume_from = find_resume_checkpoint(training_args, script_args.resume)
    if resume_from:
        logger.info("resuming from %s", resume_from)
    result = train_and_save(
        trainer, tokenizer, Path(training_args.output_dir), script_args.save_merged, resume_from,
        extra_metrics=report.metrics(), merged_dtype=script_args.merged_dtype,
    )
    return SFTRunResult(**vars(result), lengths=report)


def main(argv: list[str] | None = None) -> SFTRunResult:
    return run_script(make_parser(), train, argv)


if __name__ == "__main__":
    sys.exit(command_line(main))
