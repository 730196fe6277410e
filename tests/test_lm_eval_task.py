"""PoolBench as an lm-evaluation-harness task (poolbench_data/cli/lm_eval_tasks): the harness loads it from
the shipped folder, sends the protocol's messages verbatim, and scores an answer exactly as `poolbench eval`
does. Parity is checked on identical text: `poolbench eval` runs vLLM and lm-eval's `hf` model runs
transformers, whose greedy decodes may part at a near-tie, so the same responses are scored both ways."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("lm_eval")

from poolbench_data.boards.generate import generate  # noqa: E402
from poolbench_data.cli import main  # noqa: E402
from poolbench_data.cli.lm_eval_tasks import PATH  # noqa: E402
from poolbench_data.players import oracle  # noqa: E402
from poolbench_data.protocol.prompts import format_action, messages  # noqa: E402

CATEGORIES = ("open", "partial-block", "indirect", "crowded", "sparse", "foul-trap", "spin-shot")


@pytest.fixture(scope="module")
def manager():
    """lm-eval's TaskManager with the shipped folder: it indexes every task the harness has (seconds), once."""
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(PATH))


@pytest.fixture(scope="module")
def tasks(manager):
    return manager.load(["poolbench"])


def _subtasks(loaded) -> dict:
    flat = loaded["tasks"] if isinstance(loaded, dict) and "tasks" in loaded else loaded
    return {name: t for name, t in flat.items() if isinstance(name, str) and name.startswith("poolbench_")}


def test_the_group_has_a_subtask_per_category_and_the_paper_s_boards(tasks):
    subtasks = _subtasks(tasks)
    assert sorted(subtasks) == sorted(f"poolbench_{c}" for c in CATEGORIES)
    boards = {s.id: s for s in generate(50)}
    seen = []
    for name, task in subtasks.items():
        docs = list(task.test_docs())
        assert {d["category"] for d in docs} == {name.removeprefix("poolbench_")}
        seen += [d["id"] for d in docs]
    assert sorted(seen) == sorted(boards)  # the 50 boards, each once


def test_the_prompt_is_the_protocol_s_messages_verbatim(tasks):
    task = _subtasks(tasks)["poolbench_open"]
    doc = list(task.test_docs())[0]
    board = next(s for s in generate(50) if s.id == doc["id"])
    sent = task.fewshot_context(doc, 0, apply_chat_template=True,
                                chat_template=lambda msgs, add_generation_prompt=True: json.dumps(msgs))
    assert json.loads(sent) == messages(board)
    assert task.config.generation_kwargs["temperature"] == 0.2 and task.config.generation_kwargs["max_gen_toks"] == 300


def test_an_answer_scores_as_poolbench_eval_scores_it(tasks, tmp_path):
    """Parity on identical text: the task's process_results against `poolbench eval --backend replay`."""
    task = _subtasks(tasks)["poolbench_open"]
    docs = list(task.test_docs())[:3]  # boards 0, 7 and 14: the open category is every seventh board
    boards = {s.id: s for s in generate(15)}
    answers = {d["id"]: format_action(oracle(boards[d["id"]]).shot, boards[d["id"]]) for d in docs[:2]}
    answers[docs[2]["id"]] = "I would hit it hard."
    lm_eval_says = {d["id"]: task.process_results(d, [answers[d["id"]]]) for d in docs}
    stored = tmp_path / "responses.jsonl"
    stored.write_text("".join(json.dumps({"player": "m", "player_kind": "llm", "scenario_id": sid, "sample": 0,
                                          "raw_response": text, "temperature": 0.2}) + "\n"
                              for sid, text in answers.items()))
    # the open boards of the first 15: the three under test
    assert main(["eval", "--backend", "replay", "--responses", str(stored), "--name", "m", "--baselines", "random",
                 "--n", "15", "--categories", "open", "--boards", "0", "--quiet", "--out", str(tmp_path / "out")]) == 0
    rows = {r["scenario_id"]: r for r in map(json.loads, (tmp_path / "out" / "llm_traces.jsonl").open())
            if r["player"] == "m"}
    assert sorted(rows) == sorted(answers)
    for sid, metrics in lm_eval_says.items():
        row = rows[sid]
        assert metrics == {"parseable": float(row["action"] is not None),
                           **{k: float(row[k]) for k in metrics if k != "parseable"}}, sid
    assert lm_eval_says[docs[0]["id"]]["parseable"] == 1.0 and lm_eval_says[docs[2]["id"]]["parseable"] == 0.0


@pytest.mark.slow
def test_lm_eval_plays_the_embedded_model_with_its_hf_backend(manager):
    """The harness end to end on two boards: transformers' generate, the chat template, each sample's metrics
    equal to those this package's evaluator gives the same answer, the results their means with standard errors
    (16-token answers: a CPU test, not a measurement; the prompt's prefill is most of it)."""
    import lm_eval

    from poolbench_data.llm.model import resolve_model
    from poolbench_data.llm.player import EvalSettings, evaluate_model, llm_trace_rows
    from poolbench_data.llm.replay import ReplayBackend

    out = lm_eval.simple_evaluate(
        model="hf", model_args=f"pretrained={resolve_model(None)},dtype=float32", tasks=["poolbench_open"],
        task_manager=manager, limit=2, apply_chat_template=True,
        gen_kwargs="do_sample=False,max_gen_toks=16", log_samples=True, device="cpu")
    samples = out["samples"]["poolbench_open"]
    assert len(samples) == 2 and all(s["filtered_resps"][0] for s in samples)
    boards = {s.id: s for s in generate(50)}
    played = [boards[s["doc"]["id"]] for s in samples]
    board = played[0]
    assert messages(board)[1]["content"] in samples[0]["arguments"][0][0]  # the user message, in the context
    # The evaluator's scoring of the same answers: `poolbench eval --backend replay`'s path, answer by answer.
    settings = EvalSettings(model="m", backend="replay")
    recs, _ = evaluate_model(played, ReplayBackend([[s["filtered_resps"][0]] for s in samples]), settings,
                             progress=False)
    result = out["results"]["poolbench_open"]
    metrics = ("parseable", "legal_contact", "own_potted", "foul", "opp_or_8_potted", "clean_pot")
    for sample, row in zip(samples, llm_trace_rows(recs, {}, settings)):
        assert row["raw_response"] == sample["filtered_resps"][0]
        ours = {"parseable": float(row["action"] is not None), **{m: float(row[m]) for m in metrics[1:]}}
        assert {m: sample[m] for m in metrics} == ours, sample["doc"]["id"]
    for metric in metrics:
        assert result[f"{metric},none"] == pytest.approx(sum(s[metric] for s in samples) / 2)
        assert f"{metric}_stderr,none" in result


# --- the task's settings (--metadata): named when wrong, before any board is generated ----------------------

def _load(metadata: dict):
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(PATH), include_defaults=False, metadata=metadata).load(["poolbench"])


@pytest.mark.parametrize("metadata, words", [
    ({"nn": 5}, "--metadata 'nn' is not a setting of the poolbench task; it reads n (boards, >= 7"),
    ({"n": -1}, "--metadata n is -1; give a whole number of boards >= 7 (one per category at least"),
    ({"n": "x"}, "--metadata n is 'x'; give a whole number of boards >= 7"),
    ({"n": 2}, "--metadata n is 2; give a whole number of boards >= 7"),
    ({"n": 6}, "--metadata n is 6; give a whole number of boards >= 7"),
    ({"n": 2.7}, "--metadata n is 2.7; give a whole number of boards >= 7"),
    ({"n": True}, "--metadata n is True"),
    ({"seed": -1}, "--metadata seed is -1; give a base seed from 0 to 9223372036854775807"),
    ({"seed": "0"}, "--metadata seed is '0'"),
])
def test_a_metadata_mistake_is_one_error_naming_it(metadata, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        _load(metadata)


def test_seven_boards_give_every_category_one():
    subtasks = _subtasks(_load({"n": 7}))
    assert {name: len(list(t.test_docs())) for name, t in subtasks.items()} == {f"poolbench_{c}": 1
                                                                                 for c in CATEGORIES}


def _lm_eval(*args: str):
    import subprocess
    import sys
    from pathlib import Path

    cli = Path(sys.executable).with_name("lm_eval")
    return subprocess.run([str(cli), "--model", "dummy", "--tasks", "poolbench", "--include_path", str(PATH),
                           "--limit", "1", *args], capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_lm_eval_s_command_line_says_a_metadata_mistake_in_one_line():
    """lm-eval merges --model_args into the task's metadata: those keys are no mistake, --metadata's unknown one
    is, said in one line with exit code 2 and no traceback."""
    done = _lm_eval("--model_args", "foo=1", "--metadata", '{"nn": 5}')
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert len(errors) == 1 and "--metadata 'nn' is not a setting" in errors[0], done.stderr[-3000:]


def _simple_evaluate(model_args: str, metadata: dict):
    """What `lm_eval --model dummy --model_args ... --metadata ... --limit 1` does: the task manager gets the model
    args merged under the metadata (lm_eval.config.evaluate_config), simple_evaluate the model args."""
    import lm_eval
    from lm_eval.tasks import TaskManager
    from lm_eval.utils import simple_parse_args_string

    manager = TaskManager(include_path=str(PATH), include_defaults=False,
                          metadata=simple_parse_args_string(model_args) | metadata)
    return lm_eval.simple_evaluate(model="dummy", model_args=model_args, tasks=["poolbench"], task_manager=manager,
                                   limit=1)


def test_a_model_s_seed_is_not_taken_for_the_boards_seed():
    """A model's `seed` (vLLM's sampling seed) would arrive as the boards' seed: refused, unless --metadata gives
    the boards' own."""
    with pytest.raises(ValueError, match=re.escape("--model_args seed=3 reaches the poolbench task as its board "
                                                   "seed")):
        _simple_evaluate("seed=3", {})
    out = _simple_evaluate("seed=3", {"seed": 0, "n": 7})
    assert set(out["results"]) == {"poolbench", *(f"poolbench_{c}" for c in CATEGORIES)}
