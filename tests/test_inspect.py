"""PoolBench under inspect_ai: a real `inspect eval` against a loopback
OpenAI-compatible server (tests/test_experiments.py's recorder)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("inspect_ai", reason="the inspect extra is in both locks (scripts/setup.sh)")

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.log import read_eval_log  # noqa: E402

from poolbench_data.boards.generate import generate  # noqa: E402
from poolbench_data.cli.inspect_task import poolbench  # noqa: E402
from poolbench_data.players.baselines import oracle  # noqa: E402
from poolbench_data.protocol.prompts import format_action, user_prompt  # noqa: E402
from test_experiments import recording_server  # noqa: E402


@pytest.mark.slow
def test_inspect_eval_plays_and_scores_through_the_simulator(tmp_path, monkeypatch):
    boards = generate(2)

    def reply(msgs):  # the Oracle's action on the first board, prose on the second
        user = msgs[-1]["content"]
        s = next(b for b in boards if user_prompt(b) == (user if isinstance(user, str) else user[0]["text"]))
        return format_action(oracle(s).shot, s) if s is boards[0] else "I would aim left."

    with recording_server(reply) as (url, server):
        monkeypatch.setenv("LOOPBACK_API_KEY", "x")
        monkeypatch.setenv("LOOPBACK_BASE_URL", url)
        (log,) = inspect_eval(poolbench(n=2), model="openai-api/loopback/m", log_dir=str(tmp_path),
                              display="none")
    assert log.status == "success", log.error
    assert server.requests[0]["temperature"] == 0.2 and server.requests[0]["max_tokens"] == 300
    metrics = {(s.name, name): m.value for s in log.results.scores for name, m in s.metrics.items()}
    assert oracle(boards[0]).how == "pot"  # so board 1 is a clean pot, board 2 not fired
    assert metrics[("parseable", "mean")] == 0.5 and metrics[("clean_pot", "mean")] == 0.5
    assert metrics[("foul", "mean")] == 0.5
    saved = read_eval_log(log.location)  # what `inspect view` shows
    first = next(s for s in saved.samples if s.id == boards[0].id)
    (score,) = first.scores.values()
    assert score.metadata["parse_status"] == "ok" and score.explanation.startswith("events: ")
    assert json.loads(score.answer)["target_ball"] == oracle(boards[0]).shot.target_ball


@pytest.mark.parametrize("args, words", [
    ({"n": -1}, "-T n is -1; give a whole number of boards >= 1"),
    ({"n": "x"}, "-T n is 'x'"), ({"n": 2.7}, "-T n is 2.7"), ({"n": True}, "-T n is True"),
    ({"seed": -1}, "-T seed is -1; give a base seed from 0 to"),
    ({"temperature": 3}, "-T temperature is 3; give a number from 0 to 2"),
    ({"temperature": "hot"}, "-T temperature is 'hot'"),
    ({"max_tokens": 0}, "-T max_tokens is 0; give a whole number of tokens >= 1"),
])
def test_a_task_argument_mistake_is_one_error_naming_it(args, words):
    import re

    with pytest.raises(ValueError, match=re.escape(words)):
        poolbench(**args)


def test_inspect_eval_says_a_task_argument_mistake_in_one_line(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    inspect = Path(sys.executable).with_name("inspect")
    done = subprocess.run([str(inspect), "eval", "poolbench_data/cli/inspect_task.py", "-T", "n=-1", "--model",
                           "mockllm/model", "--log-dir", str(tmp_path / "logs")], cwd=repo, capture_output=True,
                          text=True, timeout=600)
    said = (done.stdout + done.stderr).strip()
    assert done.returncode != 0 and "Traceback" not in said, said[-3000:]
    assert said.splitlines() == ["error: -T n is -1; give a whole number of boards >= 1 (the paper's 50)"], said
    assert not (tmp_path / "logs").exists()
