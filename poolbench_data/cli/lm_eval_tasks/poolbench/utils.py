"""The functions the task's YAML files name (lm-eval loads this file by path)."""

from __future__ import annotations

import functools
import sys

# The scoring is the evaluator's own path from an answer to its record: one parser, one simulation, one scoring.
METRICS = ("parseable", "legal_contact", "own_potted", "foul", "opp_or_8_potted", "clean_pot")
SETTINGS = ("n", "seed")  # what `--metadata` may set
HARNESS_KEYS = ("version", "config_source")  # what lm-eval itself puts in every task's metadata
MIN_BOARDS = 7  # one board per category: every subtask of the group has a board


@functools.cache
def _boards(n: int, seed: int) -> tuple:
    """Generated once a process for the seven subtasks (rejection sampling takes seconds)."""
    from poolbench_data.boards.generate import generate

    return tuple(generate(n, seed))


def load(category: str | None = None, **metadata) -> dict:
    """{"test": the generated boards (the paper's 50 by default; `--metadata '{"n": 200}'` for more), of one
    category}: each row the board and the protocol's two messages."""
    import datasets

    from poolbench_data.protocol.prompts import messages

    n, seed = settings(metadata)
    rows = []
    for s in _boards(n, seed):
        if category is None or s.category == category:
            system, user = messages(s)
            rows.append({"id": s.id, "category": s.category, "board": s.to_json(), "system": system["content"],
                         "user": user["content"]})
    return {"test": datasets.Dataset.from_list(rows)}


def settings(metadata: dict) -> tuple[int, int]:
    """(n, seed) of the task's metadata (the YAML's defaults, then `--metadata`), checked before any board is
    generated: an unknown key, or a value that is not a whole number in range, is one error naming it. On
    lm-eval's command line that error is one line and exit code 2; called from Python, a ValueError."""
    from poolbench_data.core.errors import UserError, check_whole
    from poolbench_data.core.vocab import MAX_SEED

    model_args = _model_args()
    try:
        unknown = [k for k in metadata if k not in SETTINGS + HARNESS_KEYS and k not in model_args]
        if unknown:
            raise UserError(f"--metadata {unknown[0]!r} is not a setting of the poolbench task; it reads n (boards, "
                            f">= {MIN_BOARDS}: one per category) and seed (the boards' base seed), e.g. "
                            "--metadata '{\"n\": 200}'")
        for key in SETTINGS:  # lm-eval merges --model_args into the metadata: a model's seed would move the boards
            if key in model_args and metadata.get(key) == model_args[key]:
                raise UserError(f"--model_args {key}={model_args[key]} reaches the poolbench task as its board {key} "
                                "(lm-eval merges --model_args into the task's metadata); give the boards' own "
                                f"with --metadata '{{\"{key}\": ...}}' (the default: {_default(key)})")
        n = check_whole("--metadata n", metadata.get("n"), MIN_BOARDS, what="a whole number of boards",
                        why="one per category at least; the paper's 50")
        seed = check_whole("--metadata seed", metadata.get("seed"), 0, MAX_SEED, what="a base seed")
        return n, seed
    except UserError as e:
        if _lm_eval_command_line():  # lm-eval prints a traceback for any exception: say it in one line instead
            print(f"error: {e}", file=sys.stderr)
            raise SystemExit(2) from None
        raise


def _default(key: str):
    from poolbench_data.boards.generate import DEFAULT_N, DEFAULT_SEED

    return {"n": DEFAULT_N, "seed": DEFAULT_SEED}[key]


def _model_args() -> dict:
    """The --model_args of the evaluation loading this task: lm-eval merges them into every task's metadata
    (lm_eval.evaluator.simple_evaluate, which loads the tasks), so they arrive here beside --metadata's keys.
    Read off simple_evaluate's frame; {} when the task is loaded outside it (a TaskManager of one's own)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "simple_evaluate" and frame.f_globals.get("__name__") == "lm_eval.evaluator":
            args = frame.f_locals.get("model_args")
            if isinstance(args, str):
                from lm_eval.utils import simple_parse_args_string

                args = simple_parse_args_string(args)
            return dict(args) if isinstance(args, dict) else {}
        frame = frame.f_back
    return {}


def _lm_eval_command_line() -> bool:
    """This process is lm-eval's command line (`lm_eval ...` or `python -m lm_eval ...`)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    entry = getattr(main, "cli_evaluate", None)
    return getattr(spec, "name", None) == "lm_eval.__main__" or getattr(entry, "__module__", None) == "lm_eval.__main__"


def shot_metrics(board: str, response: str) -> dict[str, float]:
    """The six 0/1 values of one answer (what `poolbench eval` records for it)."""
    from poolbench_data.core.records import Scenario
    from poolbench_data.llm.player import answer_record

    rec = answer_record(Scenario.from_json(board), response, None, player="model", sample=0)
    values = {k: float(getattr(rec.metrics, k)) for k in METRICS if k != "parseable"}
    return {"parseable": float(rec.shot is not None), **values}


def process_results(doc: dict, results: list[str]) -> dict[str, float]:
    return shot_metrics(doc["board"], results[0])
