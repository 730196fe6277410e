"""Validate training rows before a run spends time on a model: DPO's pairs here, GRPO's boards at the end,
SFT's demonstrations in `check_sft`.

TRL's DPOTrainer expects the conversational preference format: `prompt` is a
list of {role, content} messages (system + user), `chosen` and `rejected` are
lists of assistant messages. When a row breaks that, TRL fails deep inside
tokenisation (or silently trains on a garbled chat template); `check_pairs`
fails first, naming the column, the row and the fix.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from poolbench_data.boards.splits import SplitLeakError, leak_problem

REQUIRED_COLUMNS = ("prompt", "chosen", "rejected")
ROLES = ("system", "user", "assistant", "tool")
# Enough rows to show a pattern; every row is still checked.
MAX_REPORTED = 5


class RowProblems:
    """Rows with a problem, for one error message: every one counted, the
    first MAX_REPORTED kept to show (memory stays flat at any N)."""

    def __init__(self):
        self.n, self.shown = 0, []

    def add(self, index: int, problem: str) -> None:
        self.n += 1
        if len(self.shown) < MAX_REPORTED:
            self.shown.append(f"row {index}: {problem}")

    def __bool__(self) -> bool:
        return self.n > 0

    def listing(self) -> str:
        """The shown rows, one a line, with ... when there are more."""
        return "\n  " + "\n  ".join(self.shown) + ("\n  ..." if self.n > len(self.shown) else "")


class PairsFormatError(ValueError):
    """The dataset is not in TRL's conversational preference format."""


def column_names(dataset: Any) -> list[str]:
    """A Dataset's columns, or the first row's keys for a plain list of rows."""
    names = getattr(dataset, "column_names", None)
    if names is not None:
        return list(names)
    first = next(iter(dataset), None)
    return list(first) if isinstance(first, Mapping) else []


def message_problem(message: Any, column: str, allowed_roles: Iterable[str]) -> str | None:
    """What is wrong with one {role, content} message of `column` (None when fine)."""
    if not isinstance(message, Mapping):
        return f"a message is a {type(message).__name__}, not a {{role, content}} mapping"
    role, content = message.get("role"), message.get("content")
    if role is None:
        return "a message has no 'role'"
    if role not in allowed_roles:
        return f"role {role!r} is not allowed in `{column}` (allowed: {', '.join(allowed_roles)})"
    if content is None:  # also a key missing in one row of an Arrow table
        return f"the {role!r} message has no 'content'"
    if not isinstance(content, str):
        # Lists are VLM content; PoolBench's is text.
        return f"the {role!r} message has content of type {type(content).__name__}, expected str"
    if not content.strip():
        # An empty answer (a failed request) teaches nothing about play.
        return f"the {role!r} message is empty"
    return None


def row_problems(row: Mapping[str, Any]) -> list[str]:
    """Everything wrong with one row, as `column: problem` strings (empty when fine)."""
    problems = []
    for column in REQUIRED_COLUMNS:
        messages = row.get(column)
        if not isinstance(messages, list):
            problems.append(
                f"`{column}` is a {type(messages).__name__}, expected a list of {{role, content}} messages "
                "(a plain string is TRL's standard format; PoolBench pairs are conversational)"
            )
            continue
        if not messages:
            problems.append(f"`{column}` is an empty message list")
            continue
        # Completions are the model's turn only; the prompt carries the context.
        allowed = ("assistant",) if column != "prompt" else ROLES
        for i, message in enumerate(messages):
            problem = message_problem(message, column, allowed)
            if problem:
                problems.append(f"`{column}`[{i}]: {problem}")
        if column == "prompt" and isinstance(messages[-1], Mapping) and messages[-1].get("role") == "assistant":
            problems.append("`prompt` ends with an assistant message; the completion belongs in chosen/rejected")
    if not problems and row["chosen"] == row["rejected"]:
        # Identical sides carry no preference: the DPO loss has no gradient for them.
        problems.append("`chosen` and `rejected` are identical")
    return problems


def scan_rows(dataset: Any, problems_of, test_id_prefix: str | None,
              id_key: str = "scenario_id") -> tuple[RowProblems, RowProblems, int]:
    """Every row once: (rows with a problem, rows from evaluation boards, how many rows). `problems_of(row)`
    lists one row's problems."""
    found, leaks, n_rows = RowProblems(), RowProblems(), 0
    for index, row in enumerate(dataset):
        n_rows += 1
        if leak := leak_problem(row, test_id_prefix, id_key=id_key):
            leaks.add(index, leak)
        if problems := problems_of(row):
            found.add(index, "; ".join(problems))
    return found, leaks, n_rows


def check_pairs(dataset: Any, test_id_prefix: str | None = None) -> None:
    """Raise `PairsFormatError` unless every row is a valid conversational pair.

    `dataset` is a `datasets.Dataset`/`IterableDataset` or any iterable of row
    mappings. Extra columns (scenario_id, scores, outcomes...) are allowed:
    TRL ignores them. A row from the test split, or whose `scenario_id` starts
    with `test_id_prefix` (None: no id check), is refused with `SplitLeakError`.
    """
    columns = column_names(dataset)
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise PairsFormatError(
            f"pairs dataset is missing column(s) {missing} (has {columns}). "
            "Fix: load the `pairs` config (dataset_config: pairs), whose rows have prompt/chosen/rejected "
            "as lists of {role, content} messages; rename your columns to those names if they differ."
        )

    found, leaks, n_rows = scan_rows(dataset, row_problems, test_id_prefix)
    if n_rows == 0:
        raise PairsFormatError("pairs dataset has no rows. Fix: check the split name and the data_files of the config.")
    if leaks:
        # Before the format: a leak is the worse mistake, whatever else is wrong.
        raise SplitLeakError(
            f"{leaks.n} of {n_rows} pairs come from evaluation boards:{leaks.listing()}"
            "\nTraining on them leaks the evaluation boards into the model, and every score measured on them "
            "afterwards is void. Fix: rebuild the pairs from train-split traces (builders/build_pairs.py), or point "
            "dataset_name/dataset_train_split at training data."
        )
    if found:
        raise PairsFormatError(
            f"{found.n} of {n_rows} pairs are malformed:{found.listing()}"
            "\nFix: each row needs `prompt` = [system?, user] messages and `chosen`/`rejected` = "
            '[{"role": "assistant", "content": "<text>"}], every message with a string role and content.'
        )


# Of the pairs whose chosen and rejected turns differ in kind (a tool call against an answer), the largest share
# that may choose the same kind: the pair builder trims to it and DPO refuses a set above it.
MAX_TURN_KIND_SHARE = 0.75


class PairsBalanceError(ValueError):
    """A pair set whose sides a surface feature separates: it would teach the feature, not the choice."""


def chosen_kind(row: Any) -> str | None:
    """"call" or "answer": what a pair chooses where its chosen and rejected turns differ in kind (a `ghost_ball`
    call against an answer); None where they do not."""
    from poolbench_data.llm.tools import tool_calls

    chosen, rejected = (bool(tool_calls(row[side][-1]["content"])) for side in ("chosen", "rejected"))
    return None if chosen == rejected else ("call" if chosen else "answer")


def turn_kinds(dataset: Any) -> dict[str, int]:
    """Pairs whose chosen and rejected turns differ in kind, by which kind is chosen: {"call": n, "answer": n}."""
    counts = {"call": 0, "answer": 0}
    for row in dataset:
        if kind := chosen_kind(row):
            counts[kind] += 1
    return counts


def check_turn_kinds(dataset: Any, max_share: float) -> dict[str, int]:
    """Raise PairsBalanceError where more than `max_share` of the pairs that differ in turn kind prefer the same
    kind; else return the counts."""
    counts = turn_kinds(dataset)
    n = sum(counts.values())
    kind = max(counts, key=counts.get)
    if n and counts[kind] / n > max_share:
        other = "an answer" if kind == "call" else "a tool call"
        raise PairsBalanceError(
            f"{counts[kind]} of the {n} pairs whose sides differ in turn kind choose {kind!r} over {other} "
            f"(max_turn_kind_share {max_share}): such a set teaches the turn type, not when to call (DPO on one "
            "makes a model that calls the tool until the cap: docs/results.md#the-preference-pairs). Fix: build the "
            "pairs with both tool-recovery and tool-answer (builders/build_pairs.py --tool_sources), or set "
            "max_turn_kind_share 1.0 to train on them anyway."
        )
    return counts


# --- the boards GRPO plays (the `scenarios` config) ---------------------------------

SCENARIO_COLUMNS = ("prompt", "id", "category", "seed", "cue_ball", "balls")  # the prompt, then physics_reward's


class ScenarioRowsError(ValueError):
    """The dataset cannot feed physics_reward: a missing column or a malformed board."""


def check_scenario_rows(dataset: Any, test_id_prefix: str | None) -> None:
    """Raise unless every row has a prompt and a board physics_reward can rebuild, from a training split."""
    from poolbench_data.core.records import Scenario

    columns = column_names(dataset)
    missing = [c for c in SCENARIO_COLUMNS if c not in columns]
    if missing:
        raise ScenarioRowsError(
            f"dataset is missing column(s) {missing} (has {columns}); physics_reward needs {list(SCENARIO_COLUMNS)}. "
            "Fix: load the `scenarios` config (dataset_config: scenarios), whose rows carry the prompt and the board."
        )
    if len(dataset) == 0:
        raise ScenarioRowsError("dataset has no rows. Fix: check dataset_train_split and the data_files of the config.")

    def problems_of(row) -> list[str]:
        prompt = row["prompt"]
        last = prompt[-1] if isinstance(prompt, list) and prompt else None
        if not isinstance(last, dict) or last.get("role") != "user":
            return ["`prompt` must be a non-empty message list ending with the user's turn"]
        try:
            # The same call physics_reward makes for every completion.
            Scenario.from_row({k: row[k] for k in ("id", "category", "seed", "cue_ball", "balls")})
        except (ValueError, KeyError, TypeError) as exc:  # InvalidScenario is a ValueError
            return [str(exc)]
        return []

    bad, leaks, _ = scan_rows(dataset, problems_of, test_id_prefix, id_key="id")
    if leaks:
        # Checked before the format: a leak is the worse mistake, whatever else is wrong.
        raise SplitLeakError(
            f"{leaks.n} of {len(dataset)} training boards are evaluation boards (id prefix {test_id_prefix!r}):"
            f"{leaks.listing()}\nTraining on them leaks the evaluation boards into the model, and every score "
            "measured on them afterwards is void. Fix: train on a split built from a different seed "
            "(dataset_train_split: train)."
        )
    if bad:
        raise ScenarioRowsError(
            f"{bad.n} of {len(dataset)} rows cannot be scored:{bad.listing()}"
            "\nFix: rebuild the `scenarios` config with builders/build_dataset.py rather than editing rows."
        )
