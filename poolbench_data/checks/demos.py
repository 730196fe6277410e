"""Validate SFT demonstrations before a run spends time on a model: the `sft` config's prompt-completion rows
and the `sft_tools` config's whole tool-using conversations (`messages`), and the leak check on both."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from poolbench_data.boards.splits import EVAL_SEED, SplitLeakError, id_prefix
from poolbench_data.llm.tools import tool_calls
from poolbench_data.checks.pairs import ROLES, column_names, message_problem, scan_rows
from poolbench_data.demos.tools import call_problems

SFT_COLUMNS = ("prompt", "completion")
TOOL_COLUMNS = ("messages",)  # the sft_tools config: whole tool-using conversations
PROMPT_ROLES = ("system", "user")


class SFTFormatError(ValueError):
    """The dataset is not in TRL's conversational prompt-completion format."""


def sft_row_problems(row: Mapping[str, Any]) -> list[str]:
    """Everything wrong with one row's prompt and completion (empty when fine)."""
    problems = []
    prompt, completion = row.get("prompt"), row.get("completion")
    if not isinstance(prompt, list) or not prompt:
        problems.append("`prompt` is " + ("an empty message list" if isinstance(prompt, list) else
                                          f"a {type(prompt).__name__}, expected a list of {{role, content}} messages"))
    else:
        for i, message in enumerate(prompt):
            problem = message_problem(message, "prompt", PROMPT_ROLES)
            if problem:
                problems.append(f"`prompt`[{i}]: {problem}")
        if not problems and prompt[-1]["role"] != "user":
            # The completion answers the last user turn; the template adds the assistant header after it.
            problems.append(f"`prompt` ends with a {prompt[-1]['role']!r} message, expected the user's")
    if not isinstance(completion, list) or len(completion) != 1:
        what = f"{len(completion)} messages" if isinstance(completion, list) else f"a {type(completion).__name__}"
        problems.append(f"`completion` is {what}, expected exactly one assistant message")
    else:
        problem = message_problem(completion[0], "completion", ("assistant",))
        if problem:
            problems.append(f"`completion`[0]: {problem}")
    return problems


def tool_row_problems(row: Mapping[str, Any]) -> list[str]:
    """Everything wrong with one tool-use conversation (empty when fine): [system?, user, (model call, tool
    answer)*, model action], every message a non-empty string, every call a ghost_ball call with its two
    arguments, and the last model turn an answer, not a call."""
    msgs = row.get("messages")
    if not isinstance(msgs, list) or not msgs:
        return ["`messages` is " + ("an empty message list" if isinstance(msgs, list) else
                                    f"a {type(msgs).__name__}, expected a list of {{role, content}} messages")]
    problems = []
    for i, message in enumerate(msgs):
        if problem := message_problem(message, "messages", ROLES):
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
    columns = column_names(dataset)
    tools = is_tool_dataset(columns)
    missing = [] if tools else [c for c in SFT_COLUMNS if c not in columns]
    if missing:
        raise SFTFormatError(
            f"sft dataset is missing column(s) {missing} (has {columns}). "
            "Fix: load the `sft` config (dataset_config: sft, built by builders/build_sft.py), whose rows have "
            "`prompt` and `completion` as lists of {role, content} messages; rename your columns if they differ."
        )

    found, leaks, n_rows = scan_rows(dataset, tool_row_problems if tools else sft_row_problems, test_id_prefix)
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
            "action], every call ghost_ball with target_ball and, optionally, pocket (no other argument); rebuild with "
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
    return "messages" in columns and not all(c in columns for c in SFT_COLUMNS)
