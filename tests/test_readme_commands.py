"""The lm-eval and inspect commands as a user types them (read from README.md, run through bash from the
repository root) against the embedded model on the project's loopback vLLM server, with what makes them a test
added: a board a subtask (two for inspect), 32-token answers, an output folder. The files they write hold the
benchmark's metrics, and each answer's values equal `poolbench eval`'s on the same text (`--backend replay`)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from poolbench_data.boards.generate import generate
from poolbench_data.cli import main

REPO = Path(__file__).resolve().parents[1]
METRICS = ("parseable", "legal_contact", "own_potted", "foul", "opp_or_8_potted", "clean_pot")
CATEGORIES = ("open", "partial-block", "indirect", "crowded", "sparse", "foul-trap", "spin-shot")
# The README's server and model name, replaced by the loopback server's.
README_URL, README_MODEL = "http://127.0.0.1:8000/v1", "served-name"


def readme_command(program: str) -> str:
    """The README's shell command that runs `program` (continuation lines joined), as a user copies it."""
    text = (REPO / "README.md").read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```bash\n")[1:]]
    lines = "\n".join(blocks).replace("\\\n", " ").splitlines()
    found = [line for line in lines if f"/{program} " in line]
    assert len(found) == 1, f"README.md: expected one {program} command, found {found}"
    return " ".join(found[0].split("#", 1)[0].split())


def served(command: str, url: str, model: str) -> str:
    assert README_URL in command and README_MODEL in command, command
    return command.replace(README_URL, url).replace(README_MODEL, model)


def run_as_typed(command: str, **env: str) -> None:
    """`command` through bash from the repository root, the venv's scripts first on PATH (as after activating
    it)."""
    path = f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}"
    done = subprocess.run(["bash", "-c", command], cwd=REPO, capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "PATH": path, **env})
    assert done.returncode == 0, (command, done.stdout[-3000:], done.stderr[-3000:])


def replayed(tmp_path: Path, answers: dict[str, str]) -> dict[str, dict]:
    """`poolbench eval --backend replay` on `answers` (board id -> text), over the benchmark's boards up to the
    last one answered (the others get a non-answer): its llm_traces.jsonl rows by board, each reduced to the six
    metrics."""
    boards = generate(50)
    index = {s.id: i for i, s in enumerate(boards)}
    assert set(answers) <= set(index), sorted(set(answers) - set(index))
    n = 1 + max(index[sid] for sid in answers)
    stored = tmp_path / "answers.jsonl"
    stored.write_text("".join(json.dumps({"player": "m", "player_kind": "llm", "scenario_id": s.id, "sample": 0,
                                          "raw_response": answers.get(s.id, "-")}) + "\n" for s in boards[:n]))
    out = tmp_path / "replay"
    assert main(["eval", "--backend", "replay", "--responses", str(stored), "--name", "m", "--baselines", "random",
                 "--n", str(n), "--boards", "0", "--quiet", "--out", str(out)]) == 0
    rows = [r for r in map(json.loads, (out / "llm_traces.jsonl").open()) if r["player"] == "m"]
    return {r["scenario_id"]: {"parseable": float(r["action"] is not None),
                               **{k: float(r[k]) for k in METRICS if k != "parseable"}} for r in rows}


@pytest.mark.slow
class TestAsTyped:
    """The README's commands against the run's loopback server (the `served_model` fixture)."""

    def test_lm_eval_writes_the_group_and_every_subtask(self, served_model, tmp_path):
        url, model = served_model
        out = tmp_path / "lm_eval"
        run_as_typed(served(readme_command("lm_eval"), url, model) + f" --output_path {out} --log_samples --limit 1"
                     " --gen_kwargs max_gen_toks=32")
        (results_file,) = out.rglob("results_*.json")
        results = json.loads(results_file.read_text())["results"]
        assert set(results) == {"poolbench", *(f"poolbench_{c}" for c in CATEGORIES)}
        for name, values in results.items():
            for m in METRICS:
                assert 0.0 <= values[f"{m},none"] <= 1.0 and f"{m}_stderr,none" in values, (name, m)
        answers, says = {}, {}
        for c in CATEGORIES:
            (samples_file,) = out.rglob(f"samples_poolbench_{c}_*.jsonl")
            samples = [json.loads(line) for line in samples_file.read_text().splitlines()]
            assert len(samples) == 1
            for s in samples:
                answers[s["doc"]["id"]] = s["resps"][0][0]
                says[s["doc"]["id"]] = {m: float(s[m]) for m in METRICS}
        rows = replayed(tmp_path, answers)
        assert {sid: rows[sid] for sid in says} == says
        # the group is the subtasks' answers together (each category weighted by its size)
        for m in METRICS:
            assert results["poolbench"][f"{m},none"] == pytest.approx(sum(v[m] for v in says.values()) / len(says))

    def test_inspect_writes_a_log_with_the_scores(self, served_model, tmp_path):
        from inspect_ai.log import list_eval_logs, read_eval_log

        url, model = served_model
        run_as_typed(served(readme_command("inspect"), url, model) + " --limit 2 -T max_tokens=32",
                     INSPECT_LOG_DIR=str(tmp_path / "logs"))
        (info,) = list_eval_logs(str(tmp_path / "logs"))
        log = read_eval_log(info)
        assert log.status == "success", log.error
        metrics = {(s.name, name): m.value for s in log.results.scores for name, m in s.metrics.items()}
        assert set(metrics) == {(m, agg) for m in METRICS for agg in ("mean", "stderr")}
        assert len(log.samples) == 2
        answers = {s.id: s.output.completion for s in log.samples}
        says = {s.id: dict(next(iter(s.scores.values())).value) for s in log.samples}
        assert set(says) == {b.id for b in generate(2)}
        rows = replayed(tmp_path, answers)
        assert {sid: rows[sid] for sid in says} == says
        for m in METRICS:  # the log's results are the shots' mean
            assert metrics[(m, "mean")] == pytest.approx(sum(v[m] for v in says.values()) / 2)
