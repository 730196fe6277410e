"""PoolBench as an lm-evaluation-harness task (poolbench_data/cli/lm_eval_tasks): the harness loads it from
the shipped folder, sends the protocol's messages verbatim, and scores an answer exactly as `poolbench eval`
does. Parity is checked on identical text: `poolbench eval` runs vLLM and lm-eval's `hf` model runs
transformers, whose greedy decodes may part at a near-tie, so the same responses are scored both ways."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("lm_eval")

from poolbench_data.boards.generate import generate  # noqa: E402
from poolbench_data.cli import main  # noqa: E402
from poolbench_data.cli.lm_eval_tasks import PATH  # noqa: E402
from poolbench_data.players import oracle  # noqa: E402
from poolbench_data.protocol.prompts import format_action, messages  # noqa: E402

CATEGORIES = ("open", "partial-block", "indirect", "crowded", "sparse", "foul-trap", "spin-shot")


@pytest.fixture(scope="module")
def tasks():
    from lm_eval.tasks import TaskManager

    manager = TaskManager(include_path=str(PATH))
    loaded = manager.load(["poolbench"])
    return loaded


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
    # every board of the 15, so the replay run covers boards 0..14; the three under test carry the answers
    stored.write_text("".join(json.dumps({"player": "m", "player_kind": "llm", "scenario_id": sid, "sample": 0,
                                          "raw_response": answers.get(sid, "no"), "temperature": 0.2}) + "\n"
                              for sid in boards))
    assert main(["eval", "--backend", "replay", "--responses", str(stored), "--name", "m", "--baselines", "random",
                 "--n", "15", "--boards", "0", "--quiet", "--out", str(tmp_path / "out")]) == 0
    rows = {r["scenario_id"]: r for r in map(json.loads, (tmp_path / "out" / "llm_traces.jsonl").open())
            if r["player"] == "m"}
    for sid, metrics in lm_eval_says.items():
        row = rows[sid]
        assert metrics == {"parseable": float(row["action"] is not None),
                           **{k: float(row[k]) for k in metrics if k != "parseable"}}, sid
    assert lm_eval_says[docs[0]["id"]]["parseable"] == 1.0 and lm_eval_says[docs[2]["id"]]["parseable"] == 0.0


@pytest.mark.slow
def test_lm_eval_plays_the_embedded_model_with_its_hf_backend(tmp_path):
    """The harness end to end on two boards: transformers' generate, the chat template, the task's metrics with
    their standard errors in lm-eval's results (short answers: a CPU test, not a measurement)."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    from poolbench_data.llm.model import resolve_model

    out = lm_eval.simple_evaluate(
        model="hf", model_args=f"pretrained={resolve_model(None)},dtype=float32", tasks=["poolbench_open"],
        task_manager=TaskManager(include_path=str(PATH)), limit=2, apply_chat_template=True,
        gen_kwargs="do_sample=False,max_gen_toks=48", log_samples=True, device="cpu")
    result = out["results"]["poolbench_open"]
    for metric in ("parseable", "legal_contact", "own_potted", "foul", "opp_or_8_potted", "clean_pot"):
        assert 0.0 <= result[f"{metric},none"] <= 1.0 and f"{metric}_stderr,none" in result
    samples = out["samples"]["poolbench_open"]
    assert len(samples) == 2 and all(s["resps"][0][0] for s in samples)
    board = {s.id: s for s in generate(50)}[samples[0]["doc"]["id"]]
    assert messages(board)[1]["content"] in samples[0]["arguments"][0][0]  # the user message, in the context
