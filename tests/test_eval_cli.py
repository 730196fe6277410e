"""`poolbench eval` end to end on the real vLLM CPU engine and embedded model (the session's engine:
tests/conftest.py's `eval_on_shared_engine`)."""

import json
import time

import pytest
from conftest import SMALL_DATASET, copy_of

from poolbench_data.cli import main


@pytest.mark.slow
def test_eval_embedded_model_structured_appends_traces(small_dataset, eval_on_shared_engine, tmp_path, capsys):
    from poolbench_data.hub.folder import read_rows
    from poolbench_data.llm.model import default_model_dir

    dataset = copy_of(small_dataset, tmp_path)
    out = tmp_path / "eval"
    # One worked example, 64 tokens, 4 samples: zero-shot with 48 tokens the 135M
    # model's schema-valid JSON names balls "ball_1" or "1.0668m" or is cut off
    # mid-object and none parses; with these settings about half do (at the
    # default --gen_seed).
    args = ["eval", "--n", "2", "--samples", "4", "--few_shot", "1", "--max_tokens", "64", "--structured",
            "--out", str(out), "--boards", "1", "--max_model_len", "4096", "--dataset_dir", str(dataset),
            "--name", "smol", "--quiet", "--output_path", str(tmp_path / "lm-eval"), "--log_samples"]
    assert main(args) == 0
    assert eval_on_shared_engine == [{"model": str(default_model_dir()), "max_model_len": 4096}]
    text = capsys.readouterr().out
    for word in ("Contact %", "Potted %", "Foul %", "oracle", "heuristic-centre", "random", "smol",
                 "Parse status (smol)", "Target-vs-angle decomposition"):
        assert word in text
    result = json.loads((out / "results.json").read_text())
    assert result["settings"]["structured"] and result["settings"]["max_tokens"] == 64
    assert result["settings"]["prompt_version"] and result["backend"]["backend"] == "vllm"
    assert result["provenance"]["versions"]["pooltool"] == "0.6.0"
    rows = [json.loads(x) for x in (out / "llm_traces.jsonl").read_text().splitlines()]
    assert len(rows) == 8 and all(r["player_kind"] == "llm" and r["raw_response"] is not None for r in rows)
    # JSON-schema-constrained output parses, and a parsed action is fired: the
    # simulator ran it and the trace holds its events and metrics.
    parsed = [r for r in rows if r["parse_status"] == "ok"]
    assert parsed, [(r["parse_status"], r["raw_response"]) for r in rows]
    for r in parsed:
        assert r["action"] is not None and r["sim_status"] == "ok" and r["events"] and r["final_positions"], r
        assert "not-fired" not in r["foul_reasons"], r
    assert (out / "heatmap_contact.png").stat().st_size > 1000 and list(out.glob("board_*.png"))
    # lm-eval conventions on the real engine: pass@4 beside the mean, one sample line per shot.
    lm_eval = json.loads((tmp_path / "lm-eval" / "results_smol.json").read_text())["results"]["poolbench"]
    assert 0.0 <= lm_eval["parseable,none"] <= lm_eval["parseable_pass@4,none"] <= 1.0
    assert len((tmp_path / "lm-eval" / "samples_smol.jsonl").read_text().splitlines()) == 8
    traces = read_rows(dataset, "traces", "test")
    assert sum(r["player"] == "smol" for r in traces) == 8
    assert sum(r["player"] == "oracle" for r in traces) == SMALL_DATASET["eval_n"]


def _answers(path, boards, text_of) -> str:
    """An llm_traces.jsonl of player "smol" answering each board with text_of(board); its path."""
    path.write_text("".join(json.dumps({"player": "smol", "player_kind": "llm", "scenario_id": s.id, "sample": 0,
                                        "raw_response": text_of(s), "temperature": 0.2}) + "\n" for s in boards))
    return str(path)


def test_rerun_replaces_llm_rows_instead_of_duplicating(small_dataset, tmp_path):
    """A second evaluation of a model into a dataset folder replaces its rows there: one row a shot, the second
    run's, and every other player's rows as they were."""
    from poolbench_data.boards.generate import generate
    from poolbench_data.hub.folder import read_rows
    from poolbench_data.hub.update import replace_rows
    from poolbench_data.players.baselines import oracle
    from poolbench_data.protocol.prompts import format_action

    dataset = copy_of(small_dataset, tmp_path)
    boards = generate(SMALL_DATASET["eval_n"])  # the folder's test split
    before = read_rows(dataset, "traces", "test")
    base = ["eval", "--backend", "replay", "--name", "smol", "--baselines", "random", "--boards", "0", "--quiet",
            "--dataset_dir", str(dataset)]
    first = _answers(tmp_path / "first.jsonl", boards, lambda s: "no idea")
    assert main([*base, "--responses", first, "--out", str(tmp_path / "o1")]) == 0
    assert [r["raw_response"] for r in read_rows(dataset, "traces", "test") if r["player"] == "smol"] == (
        ["no idea"] * len(boards))
    second = _answers(tmp_path / "second.jsonl", boards, lambda s: format_action(oracle(s).shot, s))
    assert main([*base, "--responses", second, "--out", str(tmp_path / "o2")]) == 0
    after = read_rows(dataset, "traces", "test")
    smol = [r for r in after if r["player"] == "smol"]
    assert sorted(r["scenario_id"] for r in smol) == [s.id for s in boards]
    assert all(r["parse_status"] == "ok" for r in smol)  # the second run's answers
    assert [r for r in after if r["player"] != "smol"] == before
    # and replace_rows itself: the same rows again leave the folder as it is
    replace_rows(dataset, "traces", "test", smol, drop=lambda r: r["player"] == "smol")
    assert read_rows(dataset, "traces", "test") == after


def test_errors_come_before_any_work(tmp_path, capsys):
    """One line naming the field and the fix, exit 2, and nothing written."""
    def refused(args, *words):
        assert main([*args, "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and err.startswith("error: "), err
        for w in words:
            assert w in err, err

    t0 = time.perf_counter()
    refused(["eval", "--model", str(tmp_path / "no-such-model")], "no-such-model", "does not exist")
    refused(["eval", "--backend", "openai", "--base_url", "http://127.0.0.1:9/v1", "--model", "m"], "not up",
            "api_server")
    refused(["eval", "--n", "3", "--seed", "4", "--dataset_dir", str(tmp_path)], "--dataset_dir",
            "not a dataset folder")
    refused(["eval", "--temperature", "-1"], "--temperature must be >= 0")
    refused(["eval", "--backend", "replay"], "--responses")
    refused(["eval", "--baselines", "oracle,oracle"], "more than once")
    assert time.perf_counter() - t0 < 30 and not (tmp_path / "o").exists()


@pytest.mark.slow
def test_tools_on_the_embedded_model(eval_on_shared_engine, tmp_path, capsys):
    # --tools on the real engine: the tool's note and spec reach the model,
    # every shot gets a tool thread whose last answer is the one scored.
    out = tmp_path / "tools"
    assert main(["eval", "--n", "2", "--tools", "--max_tool_calls", "1", "--max_tokens", "48",
                 "--baselines", "random", "--boards", "0", "--out", str(out), "--quiet"]) == 0
    assert "tools: " in capsys.readouterr().out
    result = json.loads((out / "results.json").read_text())
    assert result["tools"]["shots"] == 2 and result["request_failures"]["failed"] == 0
    threads = [json.loads(x) for x in (out / "tool_calls.jsonl").read_text().splitlines()]
    rows = [json.loads(x) for x in (out / "llm_traces.jsonl").read_text().splitlines()]
    assert [t["final_response"] for t in threads] == [r["raw_response"] for r in rows]


@pytest.mark.slow
def test_rounds_and_reasoning_budget_on_the_embedded_model(eval_on_shared_engine, tmp_path, capsys):
    # --rounds and --reasoning_budget on the real engine: one row per round,
    # the budget in the engine's sampling settings, reasoning tokens counted.
    out = tmp_path / "rounds"
    assert main(["eval", "--n", "2", "--rounds", "2", "--reasoning_budget", "16", "--max_tokens", "48",
                 "--baselines", "random", "--boards", "0", "--out", str(out), "--quiet"]) == 0
    assert "reasoning: " in capsys.readouterr().out
    assert eval_on_shared_engine[0]["thinking_token_budget"] == 16  # what the run built its engine with
    result = json.loads((out / "results.json").read_text())
    assert result["backend"]["thinking_token_budget"] == 16 and "reasoning_tokens" in result["usage"]
    rows = [json.loads(x) for x in (out / "llm_traces.jsonl").read_text().splitlines()]
    assert sorted(r["player"] for r in rows) == ["SmolLM2-135M-Instruct"] * 2 + ["SmolLM2-135M-Instruct@r2"] * 2
    assert (out / "refinement_pairs.jsonl").exists()


def test_a_dataset_split_gives_its_own_boards(small_dataset, tmp_path, capsys):
    """`eval --dataset_dir D --split train` plays the split's boards, without the seed and size it was built with;
    a given --seed/--n must name boards in it."""
    from poolbench_data.boards.generate import generate
    from poolbench_data.hub.folder import read_rows
    from poolbench_data.protocol.prompts import format_action
    from poolbench_data.players.baselines import oracle

    root = copy_of(small_dataset, tmp_path)
    n, seed = SMALL_DATASET["train_n"], SMALL_DATASET["train_seed"]
    boards = generate(n, seed)
    responses = tmp_path / "stored.jsonl"
    responses.write_text("".join(json.dumps({"player": "m", "player_kind": "llm", "scenario_id": s.id, "sample": 0,
                                             "raw_response": format_action(oracle(s).shot, s), "temperature": 0.2})
                                 + "\n" for s in boards))
    base = ["eval", "--backend", "replay", "--responses", str(responses), "--name", "m", "--baselines", "random",
            "--boards", "0", "--quiet", "--dataset_dir", str(root), "--split", "train"]
    assert main([*base, "--out", str(tmp_path / "out")]) == 0
    assert f"boards: {n} of " in capsys.readouterr().out
    played = [r for r in read_rows(root, "traces", "train") if r["player"] == "m"]
    assert sorted(r["scenario_id"] for r in played) == [s.id for s in boards]
    result = json.loads((tmp_path / "out" / "results.json").read_text())
    assert (result["provenance"]["settings"]["n"], result["provenance"]["settings"]["seed"]) == (n, seed)
    assert main([*base, "--n", str(n - 1), "--out", str(tmp_path / "fewer")]) == 0  # the first of them
    assert json.loads((tmp_path / "fewer" / "results.json").read_text())["provenance"]["settings"]["n"] == n - 1
    assert main([*base, "--seed", "0", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "pb0-000000" in err and "leave --seed and --n out" in err
