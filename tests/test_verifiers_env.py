"""PoolBench as a verifiers environment (extra `verifiers`): verifiers finds it by its taskset id, builds the
boards under the split rules, refuses bad arguments before any engine starts, and `vf-eval` plays both tracks
against the embedded model on the project's loopback vLLM server, each rollout scored exactly as
`poolbench eval --backend replay` scores the same final answer. Some runs force the model's text with vLLM's
guided decoding (`structured_outputs` choice, a sampling field vf-eval forwards): a malformed tool call, a
non-answer and the Oracle's answer, so those cases are played for real rather than hoped for."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("verifiers")

import verifiers.v1 as vf  # noqa: E402

from poolbench_data.boards.generate import generate  # noqa: E402
from poolbench_data.cli import main  # noqa: E402
from poolbench_data.cli.verifiers_env import (  # noqa: E402
    METRICS,
    PoolBenchEnv,
    PoolBenchHarness,
    PoolBenchTaskset,
    load_environment,
)
from poolbench_data.core.records import Metrics  # noqa: E402
from poolbench_data.core.scoring import physics_score  # noqa: E402
from poolbench_data.llm.tools import TOOL_NOTE  # noqa: E402
from poolbench_data.players import oracle  # noqa: E402
from poolbench_data.protocol.prompts import format_action, messages  # noqa: E402

VF_EVAL = str(Path(sys.executable).with_name("vf-eval"))
MALFORMED_CALL = '<tool_call>{"name": "ghost_ball", "arguments": {"target_ball": "1"</tool_call>'


# ------------------------------------------------------------------ no engine

def test_verifiers_finds_the_taskset_its_harness_and_env_by_the_id():
    assert vf.taskset_config_type("poolbench").__name__ == "PoolBenchConfig"
    assert vf.environment_class("poolbench") is PoolBenchEnv
    assert vf.default_harness_id("poolbench") == "poolbench"
    env = load_environment(n=2)
    assert isinstance(env.taskset, PoolBenchTaskset) and isinstance(env._harnesses["agent"], PoolBenchHarness)
    # the harness runs in process: the agent's runtime is local, so no sandbox or tunnel is asked for
    assert env.config.agent.runtime.type == "subprocess"


@pytest.mark.parametrize("track", ["free_text", "tools"])
def test_each_board_is_the_protocol_s_prompts(track):
    tasks = list(load_environment(n=3, seed=4, track=track).taskset)
    boards = generate(3, 4)
    assert [t.data.id for t in tasks] == [s.id for s in boards]
    for task, board in zip(tasks, boards):
        system, user = messages(board)
        assert task.data.prompt == user["content"]
        assert task.data.system_prompt == system["content"] + (TOOL_NOTE if track == "tools" else "")
        assert task.data.board == board.to_row() and task.data.track == track


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    from poolbench_data.hub.build import build_benchmark

    root = tmp_path_factory.mktemp("vf") / "poolbench"
    build_benchmark(root, eval_n=2, train_n=3, train_seed=2, players=("oracle",), progress=False)
    return root


def test_a_dataset_split_gives_its_boards_and_training_refuses_the_test_split(dataset):
    train = list(load_environment(dataset_dir=str(dataset), split="train", train=True).taskset)
    assert [t.data.id for t in train] == [s.id for s in generate(3, 2)]
    test = list(load_environment(dataset_dir=str(dataset), split="test", n=1).taskset)
    assert [t.data.id for t in test] == [generate(1, 0)[0].id]
    with pytest.raises(ValueError, match="split='test' is the evaluation split"):
        load_environment(dataset_dir=str(dataset), split="test", train=True)


@pytest.mark.parametrize("kwargs, names", [
    ({"track": "chess"}, "track 'chess' is unknown"),
    ({"reward": "style"}, "reward 'style' is unknown"),
    ({"dataset_dir": "/no/such/folder"}, "dataset_dir /no/such/folder does not exist"),
    ({"train": True, "seed": 0}, "seed 0 is the evaluation boards' seed"),
    ({"train": True, "n": 5}, None),  # the training default seed is not the evaluation seed
    ({"max_calls": 0}, "max_calls must be >= 1"),
    ({"boards": 3}, "unknown arguments ['boards']"),
    ({"n": True}, "n is True; give a whole number >= 1"),
    ({"max_calls": True}, "max_calls is True; give a whole number >= 1"),
    ({"n": 2.5}, "n is 2.5; give a whole number >= 1"),
    ({"seed": "abc"}, "seed is 'abc'; give a whole number in [0, 2**63 - 1]"),
    ({"reward": None}, "reward is None; give clean_pot or physics"),
    ({"dataset_dir": None}, "dataset_dir is None; give a dataset folder's path"),
    ({"train": 2}, "train is 2; give True"),
])
def test_bad_arguments_are_one_value_error_naming_them(kwargs, names):
    if names is None:
        assert {t.data.id[:4] for t in load_environment(**kwargs).taskset} == {"pb1-"}
        return
    with pytest.raises(ValueError) as err:
        load_environment(**kwargs)
    assert names in str(err.value) and "\n" not in str(err.value)


def test_the_harness_runs_no_call_written_inside_the_reasoning():
    """The tools track's harness against a server whose model thinks about calling the tool (a Hermes call in
    reasoning_content, then one inside <think> in the content) before it answers: no call is run, no second turn
    asked for, and the answer after the reasoning is the one scored."""
    import asyncio
    from types import SimpleNamespace

    from test_experiments import recording_server
    from test_tools import CALL, _MessageRecorder

    from poolbench_data.cli.verifiers_env import shot_metrics

    env = load_environment(n=1, track="tools")
    (task,) = list(env.taskset)
    board = generate(1)[0]
    answer = format_action(oracle(board).shot, board)
    for message in ({"reasoning_content": f"I could ask: {CALL}", "content": answer},
                    {"content": f"<think>I could ask: {CALL}</think>{answer}"}):
        with recording_server(lambda messages: message, _MessageRecorder) as (url, server):
            result = asyncio.run(env._harnesses["agent"].launch(SimpleNamespace(model="m"), None, None, url, "x",
                                                                None, task.data))
        assert len(server.requests) == 1, message  # one turn: nothing was called
        assert CALL in result.stdout and shot_metrics(json.dumps(task.data.board, sort_keys=True),
                                                      result.stdout)["parseable"] == 1.0


def test_a_split_the_folder_does_not_hold_is_named_with_the_splits_it_holds(dataset, tmp_path):
    import shutil

    only_test = tmp_path / "poolbench"
    shutil.copytree(dataset, only_test)
    for path in only_test.glob("data/*/train-*.parquet"):
        path.unlink()
    for split in ("validation", "train", "*"):
        with pytest.raises(ValueError) as err:
            load_environment(dataset_dir=str(only_test), split=split)
        assert str(err.value) == (f"split {split!r}: dataset_dir {only_test} holds no scenarios of it; give a split "
                                  "it holds (test)")


def test_a_large_n_makes_its_boards_as_they_are_read():
    """n = 10**9: the environment and its first tasks come at once (a minute's alarm stops a run that would make
    every board first)."""
    import signal
    import time

    def too_long(signum, frame):
        raise TimeoutError("load_environment(n=10**9) makes its boards before the first task")

    before = signal.signal(signal.SIGALRM, too_long)
    signal.alarm(60)
    try:
        t0 = time.perf_counter()
        tasks = iter(load_environment(n=10**9).taskset)
        assert [next(tasks).data.id for _ in range(2)] == [s.id for s in generate(2)]
        assert time.perf_counter() - t0 < 30
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)


def test_vf_eval_refuses_bad_arguments_before_any_rollout(tmp_path):
    # The environment's check (each argument: test_bad_arguments_are_one_value_error_naming_them) through vf-eval's
    # command line. No server at this URL: a run that got past the arguments would fail on the connection instead.
    flag, value, names = "--env.taskset.dataset-dir", "/no/such/folder", "dataset_dir /no/such/folder does not exist"
    done = subprocess.run([VF_EVAL, "poolbench", flag, value, "-m", "m", "--client.base-url", "http://127.0.0.1:9/v1",
                           "--no-push", "--no-rich", "-o", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert names in done.stdout + done.stderr
    assert not list(tmp_path.glob("out/*/traces.jsonl"))


# ------------------------------------------------- vf-eval against the server

def vf_eval(tmp_path: Path, served, *args: str, forced: str | None = None) -> list[dict]:
    """`vf-eval poolbench ...` against the served model; its traces. `forced`: the one text guided decoding
    allows (a TOML config's sampling.structured_outputs, which vf-eval sends with every request)."""
    import tomli_w

    url, name = served
    extra = []
    if forced is not None:
        config = tmp_path / "forced.toml"
        config.write_text(tomli_w.dumps({"sampling": {"structured_outputs": {"choice": [forced]}}}))
        extra = ["@", str(config)]
    out = tmp_path / "vf"
    cmd = [VF_EVAL, "poolbench", "-m", name, "--client.base-url", url, "--no-push", "--no-rich", "-o", str(out),
           *args, *extra]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    (traces_file,) = out.glob("*/traces.jsonl")
    traces = [t for line in traces_file.read_text().splitlines() for t in json.loads(line)["traces"]]
    assert traces and all(t["ok"] for t in traces), [t.get("errors") for t in traces]
    return sorted(traces, key=lambda t: t["task"]["data"]["id"])


def final_answer(trace: dict) -> str:
    """The last model turn as the evaluator reads it (the environment's final_text, on the trace as written)."""
    from poolbench_data.cli.verifiers_env import final_text

    return final_text(vf.Trace.model_validate(trace))


def replay(tmp_path: Path, n: int, seed: int, answers: dict[str, str]) -> dict[str, dict]:
    """`poolbench eval --backend replay` on the same answers: its llm_traces.jsonl rows by board."""
    stored = tmp_path / "answers.jsonl"
    stored.write_text("".join(json.dumps({"player": "m", "player_kind": "llm", "scenario_id": s.id, "sample": 0,
                                          "raw_response": answers[s.id]}) + "\n" for s in generate(n, seed)))
    out = tmp_path / "replay"
    assert main(["eval", "--backend", "replay", "--responses", str(stored), "--name", "m", "--baselines", "random",
                 "--n", str(n), "--seed", str(seed), "--boards", "0", "--quiet", "--out", str(out)]) == 0
    return {r["scenario_id"]: r for r in map(json.loads, (out / "llm_traces.jsonl").open()) if r["player"] == "m"}


def assert_scored_as_poolbench_eval(tmp_path: Path, traces: list[dict], n: int, seed: int, reward: str) -> dict:
    answers = {t["task"]["data"]["id"]: final_answer(t) for t in traces}
    rows = replay(tmp_path, n, seed, answers)
    for t in traces:
        row = rows[t["task"]["data"]["id"]]
        expected = {"parseable": float(row["action"] is not None), **{k: float(row[k]) for k in METRICS
                                                                       if k != "parseable"}}
        assert {k: t["metrics"][k] for k in METRICS} == expected, t["task"]["data"]["id"]
        level = physics_score(Metrics.from_row(row))
        assert t["rewards"] == {reward: {"score": level if reward == "physics" else expected["clean_pot"],
                                         "weight": 1.0}}
        assert t["metrics"]["physics"] == level
    return rows


@pytest.mark.slow
class TestVfEval:
    """`vf-eval poolbench` against the run's loopback server (the `served_model` fixture)."""

    def test_the_free_text_track(self, served_model, tmp_path):
        traces = vf_eval(tmp_path, served_model, "--env.taskset.n", "2", "--sampling.max-tokens", "48")
        assert len(traces) == 2
        for t, board in zip(traces, generate(2)):
            sent = [n["message"] for n in t["nodes"] if not n.get("sampled")][:2]
            assert [(m["role"], m["content"]) for m in sent] == [(m["role"], m["content"]) for m in messages(board)]
            assert t["metrics"]["tool_calls"] == 0
        assert_scored_as_poolbench_eval(tmp_path, traces, 2, 0, "clean_pot")

    def test_the_tools_track_with_the_physics_reward(self, served_model, tmp_path):
        traces = vf_eval(tmp_path, served_model, "--env.taskset.n", "2", "--env.taskset.seed", "3",
                         "--env.taskset.track", "tools", "--env.taskset.reward", "physics",
                         "--sampling.max-tokens", "48")
        assert len(traces) == 2
        for t in traces:
            system = next(n["message"] for n in t["nodes"] if n["message"]["role"] == "system")
            assert system["content"].endswith(TOOL_NOTE)
        assert_scored_as_poolbench_eval(tmp_path, traces, 2, 3, "physics")

    def test_a_malformed_tool_call_is_answered_until_the_cap_and_scores_as_poolbench_eval(self, served_model,
                                                                                           tmp_path):
        traces = vf_eval(tmp_path, served_model, "--env.taskset.n", "1", "--env.taskset.track", "tools",
                         forced=MALFORMED_CALL)
        (t,) = traces
        results = [json.loads(n["message"]["content"]) for n in t["nodes"] if n["message"]["role"] == "tool"]
        # every turn called (badly) and heard the error, the calls left counting down; the turn after the
        # third is the answer: still a call, so no shot
        assert [r["calls_left"] for r in results] == [2, 1, 0]
        assert all(r["error"].startswith("not a tool call") for r in results)
        assert final_answer(t) == MALFORMED_CALL
        rows = assert_scored_as_poolbench_eval(tmp_path, traces, 1, 0, "clean_pot")
        assert t["metrics"]["parseable"] == 0.0 and t["metrics"]["foul"] == 1.0
        assert rows[t["task"]["data"]["id"]]["parse_status"] != "ok"

    def test_the_oracle_s_answer_scores_as_poolbench_eval(self, served_model, tmp_path):
        board = generate(1)[0]
        decision = oracle(board)
        traces = vf_eval(tmp_path, served_model, "--env.taskset.n", "1", "--env.taskset.reward", "physics",
                         forced=format_action(decision.shot, board))
        (t,) = traces
        assert t["metrics"]["parseable"] == 1.0
        rows = assert_scored_as_poolbench_eval(tmp_path, traces, 1, 0, "physics")
        assert rows[board.id]["legal_contact"]  # the Oracle's shot, played from the text it is written as


def test_the_module_verifiers_imports_is_installed_with_the_package():
    done = subprocess.run([sys.executable, "-c", "import poolbench, sys; print(poolbench.__file__)"],
                          capture_output=True, text=True, cwd="/", env={**os.environ, "PYTHONPATH": ""})
    assert done.returncode == 0 and done.stdout.strip().endswith("poolbench.py"), done.stderr
