"""lm-evaluation-harness conventions on `poolbench eval`, through the replay
backend (stored responses, real parser and physics): --limit, --categories,
--output_path (schema-checked), --log_samples, pass@k."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from poolbench_data.boards.generate import generate
from poolbench_data.cli import main
from poolbench_data.players.baselines import oracle
from poolbench_data.protocol.prompts import format_action
from poolbench_data.report.results import pass_at_k

SCHEMA = json.loads((Path(__file__).with_name("fixtures") / "results_schema.json").read_text())


def test_pass_at_k():
    assert pass_at_k(2, 1, 2) == 1.0 and pass_at_k(5, 0, 3) == 0.0
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("conv")
    boards = generate(14)
    lines = []
    for s in boards:  # sample 0: the Oracle's own action; sample 1: no JSON at all
        for sample, text in ((0, format_action(oracle(s).shot, s)), (1, "I would aim left.")):
            lines.append(json.dumps({"player": "m", "player_kind": "llm", "scenario_id": s.id, "sample": sample,
                                     "raw_response": text, "temperature": 0.2}))
    responses = tmp / "stored" / "llm_traces.jsonl"
    responses.parent.mkdir()
    responses.write_text("\n".join(lines) + "\n")
    code = main(["eval", "--backend", "replay", "--responses", str(responses), "--name", "m", "--n", "14",
                 "--samples", "2", "--categories", "open,indirect", "--limit", "3", "--baselines", "random",
                 "--output_path", str(tmp / "res"), "--log_samples", "--out", str(tmp / "out"), "--boards", "0",
                 "--quiet"])
    kept = [s for s in boards if s.category in ("open", "indirect")][:3]
    return code, tmp, kept


@pytest.mark.slow
def test_results_json_has_lm_evals_shape_and_validates(run):
    code, tmp, kept = run
    assert code == 0
    doc = json.loads((tmp / "res" / "results_m.json").read_text())
    jsonschema.validate(doc, SCHEMA)
    assert doc["n-samples"]["poolbench"] == {"original": 14, "effective": 3}
    assert doc["config"]["categories"] == "open,indirect" and doc["config"]["limit"] == 3
    assert doc["higher_is_better"]["poolbench"]["foul"] is False
    assert set(doc["results"]) == {"poolbench"} | {f"poolbench_{s.category}" for s in kept}
    whole = doc["results"]["poolbench"]
    assert whole["parseable,none"] == 0.5 and whole["parseable_n,none"] == 6  # half the samples parse
    assert whole["parseable_pass@2,none"] == 1.0  # ... and every board has one that does
    assert doc["versions"]["pooltool"] and "random" in doc["baselines"]
    summary = json.loads((tmp / "out" / "summary.json").read_text())
    assert summary["simulator_stops"] == {}  # every shot here ran to rest


@pytest.mark.slow
def test_samples_log_one_line_per_shot_and_pass_at_k_agrees(run):
    _, tmp, kept = run
    rows = [json.loads(x) for x in (tmp / "res" / "samples_m.jsonl").read_text().splitlines()]
    assert [r["scenario_id"] for r in rows] == [s.id for s in kept for _ in range(2)]
    assert {"raw_response", "action", "parse_status", "events", "event_text", "legal_contact", "clean_pot",
            "doc_id", "resps", "filtered_resps", "target"} <= set(rows[0])
    assert rows[0]["parse_status"] == "ok" and rows[1]["parse_status"] != "ok" and rows[0]["events"]
    doc = json.loads((tmp / "res" / "results_m.json").read_text())
    any_pot = [any(r["clean_pot"] for r in rows if r["scenario_id"] == s.id) for s in kept]
    assert doc["results"]["poolbench"]["clean_pot_pass@2,none"] == pytest.approx(sum(any_pot) / len(any_pot))


@pytest.mark.parametrize("flags, words", [
    (["--categories", "opne"], "--categories ['opne'] unknown"),
    (["--limit", "-1"], "--limit must be >= 0"),
    (["--log_samples"], "--log_samples needs --output_path"),
    (["--n", "3", "--categories", "spin-shot"], "keeps none of the --n 3 boards"),
])
def test_mistakes_are_one_line_before_any_work(tmp_path, capsys, flags, words):
    stored = tmp_path / "t.jsonl"
    stored.write_text("")
    assert main(["eval", "--backend", "replay", "--responses", str(stored), "--out", str(tmp_path / "o"),
                 *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_rounding_ablation_reports_each_setting_and_ten_decimals_change_nothing(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["rounding", "--n", "4", "--decimals", "0,10", "--workers", "1", "--out", str(out), "--quiet"]) == 0
    table = json.loads(out.read_text())["table"]
    assert set(table) == {"exact", "0 decimals", "10 decimals"}
    assert table["10 decimals"] == table["exact"]
    assert table["exact"]["clean_pot"]["n"] == 4
    assert main(["rounding", "--decimals", "one"]) == 2
    assert "--decimals 'one': write integers" in capsys.readouterr().err


@pytest.mark.slow
def test_output_path_alone_puts_the_whole_run_there(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # results/eval, the default without --output_path, would land here
    boards = generate(2)
    responses = tmp_path / "stored.jsonl"
    responses.write_text("".join(json.dumps({"player": "m", "player_kind": "llm", "scenario_id": s.id, "sample": 0,
                                             "raw_response": "no idea", "temperature": 0.2}) + "\n" for s in boards))
    for target, folder in (("runs/a", "runs/a"), ("runs/b/results.json", "runs/b")):
        assert main(["eval", "--backend", "replay", "--responses", str(responses), "--name", "m", "--n", "2",
                     "--baselines", "random", "--output_path", target, "--boards", "0", "--quiet"]) == 0
        assert {"report.txt", "llm_traces.jsonl", "summary.json"} <= {p.name for p in (tmp_path / folder).iterdir()}
    assert (tmp_path / "runs/a/results_m.json").is_file() and (tmp_path / "runs/b/results.json").is_file()
    assert not (tmp_path / "results").exists()
