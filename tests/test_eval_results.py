"""The Hub's evaluation results: `poolbench eval --eval_results DIR` writes a model repo's `.eval_results/` YAML
(checked against the Hub's published format, which its own examples pass), and the dataset builders declare
the benchmark with `eval.yaml` beside the card, which a push carries (up to the network call: --dry_run)."""

from __future__ import annotations

import datetime as dt
import json
import shlex
from types import SimpleNamespace

import pytest
import yaml

from poolbench_data.boards.generate import generate
from poolbench_data.cli import main
from poolbench_data.evaluation.outputs import condition
from poolbench_data.players import oracle
from poolbench_data.protocol.prompts import format_action, user_prompt
from poolbench_data.report.eval_results import HEADLINE, benchmark, check_benchmark, check_entries
from test_experiments import recording_server

# The Hub documentation's own examples (docs/hub/eval-results.md): the full entry and the required-only one.
HUB_FULL = """
- dataset:
    id: cais/hle
    task_id: default
    revision: 5503434ddd753f426f4b38109466949a1217c2bb
  value: 20.90
  verifyToken: abc
  date: "{date}"
  source:
    url: https://huggingface.co/spaces/SaylorTwift/smollm3-mmlu-pro
    name: Eval traces
    user: SaylorTwift
  notes: "no-tools"
""".format(date="-".join(("2025", "01", "15")))  # the example's date, built so no date literal sits in the code
HUB_REQUIRED = """
- dataset:
    id: Idavidrein/gpqa
    task_id: gpqa_diamond
  value: 0.412
"""
HUB_BENCHMARK = """
name: Humanity's Last Exam
description: A multi-modal benchmark.
evaluation_framework: "inspect-ai"
tasks:
  - id: hle
    config: default
    split: test
    field_spec: {input: question, input_image: image, target: answer}
    solvers: [{name: generate}]
    scorers: [{name: model_graded_fact, args: {model: openai/o3-mini}}]
"""


def test_the_validators_accept_the_hub_s_own_examples():
    check_entries(yaml.safe_load(HUB_FULL))
    check_entries(yaml.safe_load(HUB_REQUIRED))
    check_benchmark(yaml.safe_load(HUB_BENCHMARK))
    check_benchmark(benchmark())


@pytest.mark.parametrize("edit, names", [
    (lambda e: e["dataset"].pop("task_id"), "dataset needs id and task_id"),
    (lambda e: e.pop("value"), "value must be a number"),
    (lambda e: e.update(metric="clean_pot"), "keys must be among"),
    (lambda e: e.update(source={"name": "x"}), "source needs url"),
    (lambda e: e["dataset"].update(id="no-owner"), "has no owner"),
    (lambda e: e.update(date="yesterday"), "Invalid isoformat"),
])
def test_an_entry_off_the_format_is_refused(edit, names):
    entry = yaml.safe_load(HUB_FULL)[0]
    edit(entry)
    with pytest.raises(ValueError, match=names):
        check_entries([entry])


@pytest.mark.parametrize("edit, names", [
    (lambda d: d.update(evaluation_framework="poolbench"), "not one of the Hub's"),
    (lambda d: d["tasks"][0].pop("scorers"), "inspect-ai needs scorers"),
    (lambda d: d["tasks"].append(dict(d["tasks"][0])), "its own id"),
])
def test_a_benchmark_off_the_format_is_refused(edit, names):
    doc = benchmark()
    edit(doc)
    with pytest.raises(ValueError, match=names):
        check_benchmark(doc)


def test_condition_names_the_file_of_each_protocol():
    base = dict(tools=False, structured=False, few_shot=0, vision=False)
    assert condition(SimpleNamespace(**base)) == "free_text"
    assert condition(SimpleNamespace(**{**base, "tools": True})) == "tools"
    assert condition(SimpleNamespace(**{**base, "structured": True, "few_shot": 3})) == "structured_3shot"


def _answers(tmp_path, n: int) -> str:
    """A stored run: the Oracle's answer on even boards, a non-answer on odd ones."""
    stored = tmp_path / "answers.jsonl"
    rows = [{"player": "m", "player_kind": "llm", "scenario_id": s.id, "sample": 0,
             "raw_response": format_action(oracle(s).shot, s) if k % 2 == 0 else "pass"}
            for k, s in enumerate(generate(n))]
    stored.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(stored)


def _oracle_on_even_boards(n: int):
    """A served model: the Oracle's answer on even boards, a non-answer on odd ones."""
    boards = {user_prompt(s): (k, s) for k, s in enumerate(generate(n))}

    def reply(messages):
        k, s = boards[messages[1]["content"]]
        return format_action(oracle(s).shot, s) if k % 2 == 0 else "pass"

    return reply


@pytest.mark.slow
def test_the_hub_file_holds_the_headline_metrics_and_no_secret_or_local_path(tmp_path, capsys):
    """The --eval_results file is meant to be published: it holds the model's headline metrics, no credential of
    --base_url (nor does any other output) and no place on this machine (the model, served from a local folder,
    is named by --name). Its command, and results.json's, are shell-quoted: they split back into the flags given.
    An earlier file is replaced with --overwrite."""
    model_dir = tmp_path / "models" / "merged"
    model_dir.mkdir(parents=True)
    out, hub = tmp_path / "run", tmp_path / "hub"
    hub.mkdir()
    (hub / "poolbench.yaml").write_text("# an earlier run's\n")
    with recording_server(_oracle_on_even_boards(4)) as (url, server):
        server.model = str(model_dir)  # vLLM serves a model folder by its path
        argv = ["eval", "--backend", "openai", "--base_url", url.replace("//", "//user:PASSWORD@") + "?api_key=SECRET",
                "--model", str(model_dir), "--name", "my model", "--n", "4", "--baselines", "random", "--boards", "0",
                "--quiet", "--out", str(out), "--output_path", str(tmp_path / "lm"), "--log_samples",
                "--eval_results", str(hub), "--overwrite", "--eval_results_dataset", "someone/poolbench"]
        assert main(argv) == 0
    printed = capsys.readouterr()
    assert f"eval results: {hub / 'poolbench.yaml'}" in printed.out
    for where, data in [("stdout", printed.out.encode()), ("stderr", printed.err.encode()),
                        *((p, p.read_bytes()) for p in tmp_path.rglob("*") if p.is_file())]:
        assert b"PASSWORD" not in data and b"SECRET" not in data, where
    text = (hub / "poolbench.yaml").read_text()
    assert str(tmp_path) not in text and "merged" not in text
    doc = check_entries(yaml.safe_load(text))
    assert [e["dataset"] for e in doc] == [{"id": "someone/poolbench", "task_id": m} for m in HEADLINE]
    summary = json.loads((out / "summary.json").read_text())["summary"]["my model"]["overall"]
    for e in doc:
        rate = summary[e["dataset"]["task_id"]]
        assert e["value"] == round(rate["k"] / rate["n"], 4) and rate["n"] == 4
    from poolbench_data import __version__

    notes = doc[0]["notes"]
    assert notes.startswith("free text; 4 answers on 4 boards of seed 0")
    shown_url = url.replace("//", "//***@") + "?api_key=***"
    assert shlex.split(notes.split(f"poolbench-data {__version__}: ", 1)[1]) == [
        "poolbench", "eval", "--model", "my model", "--name", "my model", "--backend", "openai", "--base_url",
        shown_url, "--n", "4", "--seed", "0", "--baselines", "random", "--boards", "0", "--quiet",
        "--eval_results_dataset", "someone/poolbench"]
    assert doc[0]["source"] == {"url": "https://huggingface.co/datasets/someone/poolbench",
                                "name": f"poolbench-data {__version__} (poolbench eval)"}
    assert dt.datetime.fromisoformat(doc[0]["date"]).tzinfo is not None
    assert text.startswith("# PoolBench results of my model for the Hub")
    assert summary["legal_contact"]["k"] >= 1  # the Oracle's answers were scored, not only the non-answers
    recorded = json.loads((out / "results.json").read_text())["command"]  # this machine's: its paths too
    command = shlex.split(recorded)
    assert command[:6] == ["poolbench", "eval", "--model", str(model_dir), "--name", "my model"]
    assert command[command.index("--base_url") + 1] == shown_url and "--overwrite" in command
    assert json.loads((tmp_path / "lm" / "results_my model.json").read_text())["config"]["command"] == recorded


@pytest.mark.parametrize("flag, value, names", [
    ("--eval_results", "{file}", "--eval_results {file} is a file"),
    ("--eval_results_dataset", "a/b/c", "--eval_results_dataset 'a/b/c'"),
])
def test_bad_eval_results_flags_stop_the_run_before_any_work(tmp_path, capsys, flag, value, names):
    a_file = tmp_path / "results.yaml"
    a_file.write_text("keep")
    value, names = value.replace("{file}", str(a_file)), names.replace("{file}", str(a_file))
    argv = ["eval", "--backend", "replay", "--responses", _answers(tmp_path, 2), "--name", "m", "--n", "2",
            "--quiet", "--out", str(tmp_path / "run"), flag, value]
    if flag == "--eval_results_dataset":
        argv += ["--eval_results", str(tmp_path / "hub")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert names in err and len(err.splitlines()) == 1
    assert not (tmp_path / "run").exists() and not (tmp_path / "hub").exists() and a_file.read_text() == "keep"


@pytest.mark.parametrize("there, flags, names", [
    ("file", ["--eval_results", "{hub}"], "--eval_results {hub} already holds poolbench.yaml; pass --overwrite to "
                                          "replace it"),
    ("folder", ["--eval_results", "{hub}"], "--eval_results {hub}: poolbench.yaml there is a folder"),
    (None, ["--eval_results", "/proc/poolbench/hub"], "--eval_results /proc/poolbench/hub"),
    (None, ["--overwrite"], "--overwrite is read only with --eval_results"),
])
def test_an_eval_results_file_it_would_replace_or_cannot_write_stops_the_run_before_any_work(tmp_path, capsys, there,
                                                                                            flags, names):
    """A poolbench.yaml already there is kept unless --overwrite (the dataset folders' rule); a folder by its name
    or a place no file can be made is named before the baselines run, not after the whole evaluation."""
    hub = tmp_path / "hub"
    if there == "file":
        hub.mkdir()
        (hub / "poolbench.yaml").write_text("keep")
    elif there == "folder":
        (hub / "poolbench.yaml").mkdir(parents=True)
    flags, names = [f.replace("{hub}", str(hub)) for f in flags], names.replace("{hub}", str(hub))
    argv = ["eval", "--backend", "replay", "--responses", _answers(tmp_path, 2), "--name", "m", "--n", "2",
            "--quiet", "--out", str(tmp_path / "run"), *flags]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert names in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "run").exists()
    assert sorted(p.name for p in hub.rglob("*")) == ([] if there is None else ["poolbench.yaml"])
    if there == "file":
        assert (hub / "poolbench.yaml").read_text() == "keep"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from poolbench_data.hub.build import build_benchmark

    root = tmp_path_factory.mktemp("card") / "poolbench"
    build_benchmark(root, eval_n=2, train_n=1, train_seed=3, players=("oracle",), progress=False)
    return root


def test_the_dataset_declares_the_benchmark_and_a_push_carries_it(built, capsys):
    from poolbench_data.hub.folder import layout
    from poolbench_data.hub.push import push

    doc = check_benchmark(yaml.safe_load((built / "eval.yaml").read_text()))
    assert [t["id"] for t in doc["tasks"]] == list(HEADLINE)
    for t in doc["tasks"]:  # each leaderboard's data is in the folder
        assert t["split"] in layout(built)[t["config"]]
    card = (built / "README.md").read_text()
    front = yaml.safe_load(card.split("---\n")[1])
    assert "benchmark" in front["tags"] and "scenarios" in {c["config_name"] for c in front["configs"]}
    for command in ("poolbench eval --model", "--eval_results", "lm_eval --model local-chat-completions",
                    "inspect eval poolbench_data/cli/inspect_task.py", "vf-eval poolbench"):
        assert command in card, command
    lines = push(built, "someone/poolbench", dry_run=True)
    assert "add    eval.yaml" in lines and "add    README.md" in lines
    assert "add    eval.yaml" in capsys.readouterr().out
