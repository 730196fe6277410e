"""PoolBench on the Hub's evaluation results: the benchmark dataset's `eval.yaml` (its leaderboards) and a
model repo's `.eval_results/*.yaml` (one run's headline metrics, which the model page shows and the benchmark's
leaderboards collect).

The formats are the Hub's "Evaluation Results" documentation (huggingface/hub-docs: docs/hub/eval-results.md,
and the field specification eval_results.yaml beside it): a results file is a YAML list of entries, each one
value for one task of a benchmark dataset (`dataset.id`, `dataset.task_id`, `value`; optional `revision`,
`date` as an ISO-8601 string, `source` with a required `url`, `notes`, `verifyToken`, `evaluation_framework`);
the benchmark's `eval.yaml` names the benchmark, its `evaluation_framework` (one of the Hub's enumerated
frameworks: huggingface.js packages/tasks/src/eval.ts) and its `tasks` (each an `id` with optional `config` and
`split`; with `inspect-ai`, also `field_spec`, `solvers` and `scorers`). One file per condition: a run with
tools goes in its own file with `notes` saying so, as the Hub's guidance for variants of one benchmark asks.

PoolBench's tasks are its headline metrics (the higher the better), each on the `scenarios` config's test
split: clean_pot, legal_contact, own_potted. A value is a share in [0, 1].
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

HEADLINE = ("clean_pot", "legal_contact", "own_potted")
DEFAULT_DATASET = "poolbench/poolbench"
FRAMEWORK = "inspect-ai"  # PoolBench's inspect task is the Hub-enumerated framework it has
# The Hub's enumerated frameworks (huggingface.js packages/tasks/src/eval.ts), the ones eval.yaml may name.
FRAMEWORKS = ("exgentic", "inspect-ai", "math-arena", "mteb", "olmocr-bench", "harbor", "archipelago", "apex-evals",
              "screenspot-pro", "swe-bench", "swe-bench-pro", "nemo-evaluator", "yc-bench", "open-asr-leaderboard",
              "mdpbench", "parsebench", "video-mme-v2", "claw-eval", "wildclawbench")
ENTRY_KEYS = {"dataset", "value", "verifyToken", "date", "source", "notes", "evaluation_framework"}
DATASET_KEYS = {"id", "task_id", "revision"}
SOURCE_KEYS = {"url", "name", "user", "org"}


def benchmark(dataset_id: str = DEFAULT_DATASET) -> dict:
    """The benchmark dataset's eval.yaml: one leaderboard per headline metric, all on scenarios/test, played by
    the inspect task (the protocol's messages in, the Oracle's action as the reference, the physics scorer)."""
    tasks = [{"id": m, "config": "scenarios", "split": "test",
              "field_spec": {"input": "prompt", "target": "oracle_action", "id": "id",
                             "metadata": ["id", "category", "seed", "cue_ball", "balls"]},
              "solvers": [{"name": "generate"}], "scorers": [{"name": "physics"}]} for m in HEADLINE]
    return {"name": "PoolBench",
            "description": "One shot of eight-ball pool from a text description of the table: the model names a "
                           "ball, a pocket, an aim angle and a cue speed; the pooltool simulator plays it and the "
                           f"shot is scored (legal contact, own potted, foul, opponent/8 potted, clean pot). Data: "
                           f"{dataset_id}, config scenarios, split test.",
            "evaluation_framework": FRAMEWORK, "tasks": tasks}


def check_benchmark(doc: dict) -> dict:
    """An eval.yaml as the Hub specifies it; a ValueError names the first field that is not."""
    if not isinstance(doc, dict):
        raise ValueError("eval.yaml must be a mapping")
    for key in ("name", "description", "evaluation_framework"):
        if not isinstance(doc.get(key), str) or not doc[key].strip():
            raise ValueError(f"eval.yaml: {key} must be a non-empty string")
    if doc["evaluation_framework"] not in FRAMEWORKS:
        raise ValueError(f"eval.yaml: evaluation_framework {doc['evaluation_framework']!r} is not one of the Hub's")
    tasks = doc.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        raise ValueError("eval.yaml: tasks must be a non-empty list")
    ids = [t.get("id") if isinstance(t, dict) else None for t in tasks]
    if not all(isinstance(i, str) and i for i in ids) or len(set(ids)) != len(ids):
        raise ValueError("eval.yaml: every task needs its own id")
    for t in tasks:
        for key in ("config", "split"):
            if key in t and not isinstance(t[key], str):
                raise ValueError(f"eval.yaml: task {t['id']}: {key} must be a string")
        if doc["evaluation_framework"] == "inspect-ai":
            for key in ("field_spec", "solvers", "scorers"):
                if not t.get(key):
                    raise ValueError(f"eval.yaml: task {t['id']}: inspect-ai needs {key}")
    return doc


def check_repo_id(repo_id: str, what: str, example: str = DEFAULT_DATASET) -> str:
    """A Hub repo id owner/name, by huggingface_hub's own rule; a ValueError names `what` and the fix."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as exc:
        raise ValueError(f"{what} {repo_id!r} is not a Hub repo id ({str(exc).splitlines()[0]}); give "
                         f"owner/name, e.g. {example}") from None
    if repo_id.count("/") != 1:
        raise ValueError(f"{what} {repo_id!r} has no owner; give owner/name, e.g. {example}")
    return repo_id


def entries(overall: dict, *, dataset_id: str, date: str, source_url: str, source_name: str, notes: str) -> list:
    """One results entry per headline metric from a player's summary (`summarize(...)[player]["overall"]`)."""
    return [{"dataset": {"id": dataset_id, "task_id": m}, "value": round(overall[m]["k"] / overall[m]["n"], 4),
             "date": date, "source": {"url": source_url, "name": source_name}, "notes": notes} for m in HEADLINE]


def check_entries(doc) -> list:
    """A `.eval_results/*.yaml` list as the Hub specifies it; a ValueError names the first field that is not."""
    if not isinstance(doc, list) or not doc:
        raise ValueError(".eval_results file must be a non-empty YAML list of entries")
    for i, e in enumerate(doc):
        where = f"entry {i}"
        if not isinstance(e, dict) or set(e) - ENTRY_KEYS:
            raise ValueError(f"{where}: keys must be among {sorted(ENTRY_KEYS)}")
        d = e.get("dataset")
        if not isinstance(d, dict) or set(d) - DATASET_KEYS or not d.get("id") or not d.get("task_id"):
            raise ValueError(f"{where}: dataset needs id and task_id (and at most revision)")
        check_repo_id(d["id"], f"{where}: dataset.id")
        if isinstance(e.get("value"), bool) or not isinstance(e.get("value"), (int, float)):
            raise ValueError(f"{where}: value must be a number")
        if "date" in e:
            if not isinstance(e["date"], str):
                raise ValueError(f"{where}: date must be an ISO-8601 string")
            dt.datetime.fromisoformat(e["date"])
        s = e.get("source")
        if s is not None and (not isinstance(s, dict) or set(s) - SOURCE_KEYS or not s.get("url")):
            raise ValueError(f"{where}: source needs url (and at most name, user, org)")
        if "notes" in e and not isinstance(e["notes"], str):
            raise ValueError(f"{where}: notes must be a string")
    return doc


def file_name(condition: str) -> str:
    """poolbench.yaml for the paper's free-text protocol, poolbench_<condition>.yaml for any other."""
    return "poolbench.yaml" if condition == "free_text" else f"poolbench_{condition}.yaml"


def write(folder: Path, condition: str, doc: list, header: str) -> Path:
    """The checked entries as DIR/poolbench[_<condition>].yaml, a comment header first."""
    import yaml

    check_entries(doc)
    path = Path(folder) / file_name(condition)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=120)
    path.write_text("".join(f"# {line}\n" for line in header.splitlines()) + body)
    return path


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()
