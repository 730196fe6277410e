"""The functions the task's YAML files name (lm-eval loads this file by path)."""

from __future__ import annotations

import functools

# The scoring is the evaluator's own path from an answer to its record: one parser, one simulation, one scoring.
METRICS = ("parseable", "legal_contact", "own_potted", "foul", "opp_or_8_potted", "clean_pot")


@functools.cache
def _boards(n: int, seed: int) -> tuple:
    """Generated once a process for the seven subtasks (rejection sampling takes seconds)."""
    from poolbench_data.boards.generate import generate

    return tuple(generate(n, seed))


def load(category: str | None = None, n: int = 50, seed: int = 0, **_) -> dict:
    """{"test": the generated boards (the paper's 50 by default; `--metadata '{"n": 200}'` for more), of one
    category}: each row the board and the protocol's two messages."""
    import datasets

    from poolbench_data.protocol.prompts import messages

    rows = []
    for s in _boards(int(n), int(seed)):
        if category is None or s.category == category:
            system, user = messages(s)
            rows.append({"id": s.id, "category": s.category, "board": s.to_json(), "system": system["content"],
                         "user": user["content"]})
    return {"test": datasets.Dataset.from_list(rows)}


def shot_metrics(board: str, response: str) -> dict[str, float]:
    """The six 0/1 values of one answer (what `poolbench eval` records for it)."""
    from poolbench_data.core.records import Scenario
    from poolbench_data.llm.player import answer_record

    rec = answer_record(Scenario.from_json(board), response, None, player="model", sample=0)
    values = {k: float(getattr(rec.metrics, k)) for k in METRICS if k != "parseable"}
    return {"parseable": float(rec.shot is not None), **values}


def process_results(doc: dict, results: list[str]) -> dict[str, float]:
    return shot_metrics(doc["board"], results[0])
