"""`poolbench eval` end to end on the real vLLM CPU engine and embedded model."""

import json
import time

import pytest

from poolbench_data.cli import main


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    from poolbench_data.hub.build import build_benchmark

    root = tmp_path_factory.mktemp("evalds") / "poolbench"
    build_benchmark(root, eval_n=2, train_n=0, players=("oracle", "random"), progress=False)
    return root


def test_eval_embedded_model_structured_appends_traces(dataset, tmp_path, capsys):
    from poolbench_data.hub.folder import read_rows

    out = tmp_path / "eval"
    args = ["eval", "--n", "2", "--max_tokens", "48", "--structured", "--out", str(out), "--boards", "1",
            "--max_model_len", "2048", "--dataset_dir", str(dataset), "--name", "smol", "--quiet"]
    assert main(args) == 0
    text = capsys.readouterr().out
    for word in ("Contact %", "Potted %", "Foul %", "oracle", "heuristic-centre", "random", "smol",
                 "Parse status (smol)", "Target-vs-angle decomposition"):
        assert word in text
    result = json.loads((out / "results.json").read_text())
    assert result["settings"]["structured"] and result["settings"]["max_tokens"] == 48
    assert result["settings"]["prompt_version"] and result["backend"]["backend"] == "vllm"
    assert result["provenance"]["versions"]["pooltool"] == "0.6.0"
    rows = [json.loads(x) for x in (out / "llm_traces.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r["player_kind"] == "llm" and r["raw_response"] is not None for r in rows)
    # JSON-schema-constrained output parses (a 48-token cap may still cut one off).
    assert any(r["parse_status"] == "ok" for r in rows) or all(r["parse_status"] == "invalid-json" for r in rows)
    assert (out / "heatmap_contact.png").stat().st_size > 1000 and list(out.glob("board_*.png"))
    traces = read_rows(dataset, "traces", "test")
    assert sum(r["player"] == "smol" for r in traces) == 2 and sum(r["player"] == "oracle" for r in traces) == 2


def test_rerun_replaces_llm_rows_instead_of_duplicating(dataset):
    from poolbench_data.hub.folder import read_rows
    from poolbench_data.hub.update import replace_rows

    before = read_rows(dataset, "traces", "test")
    smol = [r for r in before if r["player"] == "smol"]
    replace_rows(dataset, "traces", "test", smol, drop=lambda r: r["player"] == "smol")
    assert read_rows(dataset, "traces", "test") == before


def test_errors_come_before_any_work(tmp_path, capsys):
    t0 = time.perf_counter()
    with pytest.raises((FileNotFoundError, SystemExit)) as e:
        main(["eval", "--model", str(tmp_path / "no-such-model"), "--out", str(tmp_path / "o")])
    assert "no-such-model" in str(e.value)
    from poolbench_data.llm.openai_backend import ServerUnavailableError

    with pytest.raises(ServerUnavailableError, match="not up"):
        main(["eval", "--backend", "openai", "--base_url", "http://127.0.0.1:9/v1", "--model", "m",
              "--out", str(tmp_path / "o")])
    with pytest.raises(SystemExit, match="not a dataset folder"):
        main(["eval", "--n", "3", "--seed", "4", "--dataset_dir", str(tmp_path), "--out", str(tmp_path / "o")])
    assert time.perf_counter() - t0 < 30 and not (tmp_path / "o").exists()
