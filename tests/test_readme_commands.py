"""The lm-eval and inspect commands as a user types them (read from README.md, run through bash from the
repository root) against the embedded model on the project's loopback vLLM server, with what makes them a test
added: a board a subtask (two for inspect), 32-token answers, an output folder. The files they write hold the
benchmark's metrics, and each answer's values equal `poolbench eval`'s on the same text (`--backend replay`).

The Quick start section, top to bottom: every command of its blocks in order, in an empty folder, through each
entry point's own command line, with small board counts, stored answers where a model would load, a loopback
stand-in for the server and a tiny model to train (the commands run as typed elsewhere are named in ELSEWHERE)."""

from __future__ import annotations

import json
import os
import re
import shlex
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


# ------------------------------------------------------------------ the quick start, top to bottom

# What the quick start's commands run on here, where a model would load or a machine would work for hours: the
# replay backend on stored answers for the models (ANSWERED: the boards they answer), a loopback stand-in for the
# server, a tiny model for training, and small board counts.
ANSWERED = {0: 2, 1: 4}  # base seed -> boards: the test split the evaluations play, the train split the builds hold
SAMPLES = 4  # answers stored for each board (the README samples 4)
BUILD = ["--eval_n", str(ANSWERED[0]), "--train_n", str(ANSWERED[1]), "--players", "oracle,random"]
# Commands other tests run as typed, or that need what a test machine has not: (words in the line, where).
ELSEWHERE = [("/lm_eval ", "TestAsTyped, against the loopback vLLM server"),
             ("/inspect eval ", "TestAsTyped, against the loopback vLLM server"),
             ("/vf-eval ", "tests/test_verifiers_env.py::TestVfEval"),
             ("training/loop.py", "tests/test_loop.py: every stage in one command"),
             ("--executor ray", "tests/test_ray.py: a Ray cluster (`ray start --head`)"),
             ("evaluate(EvalConfig(", "tests/test_docs.py, as a file and from stdin")]


def quick_start() -> list[tuple[str, int, list[str]]]:
    """The fenced blocks of README.md's Quick start section, in order: (language, first line, lines)."""
    from test_docs import fences

    text = (REPO / "README.md").read_text()
    first = text.splitlines().index("## Quick start") + 1
    last = next(n for n, line in enumerate(text.splitlines(), 1) if n > first and line.startswith("## "))
    return [(lang, start, body) for lang, start, body in fences(text) if first < start < last]


def _answers(path: Path) -> Path:
    """A model's stored answers (llm_traces.jsonl rows) on the ANSWERED boards: the Oracle's action, then text
    that is no action, so its samples differ and the simulator can rank them."""
    from poolbench_data.players.baselines import oracle
    from poolbench_data.protocol.prompts import format_action

    rows = []
    for seed, n in ANSWERED.items():
        for s in generate(n, seed):
            action = format_action(oracle(s).shot, s)
            rows += [{"player": "m", "player_kind": "llm", "scenario_id": s.id, "sample": k, "temperature": 0.8,
                      "raw_response": action if k == 0 else "I would pot the nearest ball."} for k in range(SAMPLES)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _without(words: list[str], flags: set[str]) -> list[str]:
    """`words` less each of `flags` and its value."""
    out, skip = [], False
    for w in words:
        if not skip and w not in flags:
            out.append(w)
        skip = w in flags
    return out


def _small(words: list[str], answers: Path, url: str, tiny: Path) -> list[str]:
    """A README command with the test's stand-ins (see ANSWERED)."""

    def value(flag):
        return words[words.index(flag) + 1] if flag in words else None

    program = words[1] if words[0].endswith("/python") else words[0].rsplit("/", 1)[-1]
    if program == "builders/build_dataset.py":
        return _without(words, {"--train_n", "--eval_n", "--players"}) + BUILD
    if program == "training/sft.py":
        return words + ["--model_name_or_path", str(tiny), "--max_steps", "1"]
    if program == "poolbench" and words[1] == "eval":
        assert value("--backend") in (None, "vllm", "openai"), f"a stand-in for --backend {value('--backend')}"
        words = [url if w == README_URL else w for w in words]
        if value("--backend") in (None, "vllm"):  # in process: the model would load here
            words = _without(words, {"--model_args"}) + ["--backend", "replay", "--responses", str(answers)]
        if value("--dataset_dir") is None and value("--n") is None:
            words += ["--n", str(ANSWERED[0])]
        return words + ["--boards", "0", "--quiet"]
    return words


def _run(words: list[str]) -> int:
    """One command, in this process, as its entry point runs it: the exit code."""
    from entry_parsers import load_script

    from poolbench_data.finetune.common import command_line

    if words[0].rsplit("/", 1)[-1] == "poolbench":
        return main(words[1:])
    assert words[0].endswith("/python") and words[1].endswith(".py"), words
    script = load_script(words[1])
    if words[1].startswith("training/"):
        return command_line(lambda: script.main(words[2:]))
    return script.main(words[2:])


def _repeats(words: list[str], comment: str) -> list[list[str]]:
    """The command, and those its comment asks for: `# ... shards 1-3` after `--shard 0/4 ... parts/0`."""
    found = re.search(r"\.\.\. shards (\d+)-(\d+)", comment)
    if not found:
        return [words]
    shard = words[words.index("--shard") + 1]
    first, count = shard.split("/")
    return [words] + [[f"{i}/{count}" if w == shard else re.sub(rf"/{first}$", f"/{i}", w) for w in words]
                      for i in range(int(found.group(1)), int(found.group(2)) + 1)]


def _digest(folder: Path) -> dict[str, str]:
    import hashlib

    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow  # builds three small datasets, trains a tiny model one step, runs seven evaluations
def test_the_quick_start_runs_top_to_bottom(tmp_path, tiny_model, monkeypatch, capsys):
    """Every block of README.md's Quick start in order, in an empty folder after `bash scripts/run.sh`'s run
    (results/eval), as written but for the stand-ins above: each command succeeds, the dataset is loaded after
    the command that builds it, no step writes into a folder an earlier step filled for a later one (the run
    that `poolbench compare` reads, the dataset the pairs and demonstrations went into)."""
    from test_docs import SHELL, shell_lines
    from test_experiments import _text, recording_server

    from poolbench_data.players.baselines import oracle
    from poolbench_data.protocol.prompts import format_action, user_prompt

    work = tmp_path / "work"
    work.mkdir()
    (work / "training").symlink_to(REPO / "training")  # the recipes, by the paths the README gives
    monkeypatch.chdir(work)
    answers = _answers(tmp_path / "answers.jsonl")
    known = {user_prompt(s): s for s in generate(ANSWERED[0])}

    def reply(messages):
        board = known[_text(messages[1]["content"])]
        return format_action(oracle(board).shot, board)

    elsewhere = []  # the ELSEWHERE entry each skipped command or block matched
    run_sh = {}  # results/eval as `bash scripts/run.sh` wrote it
    with recording_server(reply) as (url, server):
        server.model = README_MODEL

        def step(words, where):
            code = _run(_small(words, answers, url, tiny_model))
            out = capsys.readouterr()
            assert code == 0, f"{where}: {' '.join(words)} exited {code}\n{out.out[-2000:]}{out.err[-2000:]}"
            assert not run_sh or _digest(work / "results" / "eval") == run_sh, (
                f"{where}: {' '.join(words)} wrote into results/eval, the run a later step compares with")

        step([".venv/bin/poolbench", "eval"], "scripts/run.sh")  # the run the quick start compares with
        run_sh.update(_digest(work / "results" / "eval"))
        for lang, start, body in quick_start():
            if lang == "python":
                source = "\n".join(body)
                if matched := [words for words, _ in ELSEWHERE if words in source]:
                    elsewhere += matched
                    continue
                try:
                    exec(compile("\n" * (start - 1) + source, "README.md", "exec"), {"__name__": "readme"})
                except Exception as e:  # noqa: BLE001 - the README's failure, at its line
                    pytest.fail(f"README.md:{start}: {type(e).__name__}: {e}")
                continue
            for n, line in shell_lines(start, body) if lang in SHELL else []:  # not output blocks
                if matched := [words for words, _ in ELSEWHERE if words in line]:
                    elsewhere += matched
                    continue
                command, _, comment = line.partition("#")
                for words in _repeats(shlex.split(command), comment):
                    step(words, f"README.md:{n}")
    assert server.requests, "the server command never reached the stand-in"
    configs = {p.name for p in (work / "poolbench" / "data").iterdir()}
    assert {"scenarios", "traces", "pairs", "sft"} <= configs, configs
    assert (work / "poolbench-big" / "data" / "scenarios").is_dir()
    assert sorted(elsewhere) == sorted(words for words, _ in ELSEWHERE), elsewhere  # each once, each still there
