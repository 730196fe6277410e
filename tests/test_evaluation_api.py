"""`evaluate(config)`, the library the command line wraps: a frozen config in, a result out, every check
before any work. The model is a loopback OpenAI-compatible server (test_experiments' recorder) answering the
Oracle's action, so the physics decides every number."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from poolbench_data import EvalConfig, evaluate
from poolbench_data.core.errors import UserError
from poolbench_data.players import oracle
from poolbench_data.protocol.prompts import format_action
from test_experiments import _board, recording_server

PACKAGE = Path(__file__).resolve().parents[1] / "poolbench_data"


def _oracle_model(messages):
    s = _board(messages)
    return format_action(oracle(s).shot, s)


def test_evaluate_returns_what_it_measured_and_writes_the_report(tmp_path):
    with recording_server(_oracle_model) as (url, server):
        result = evaluate(EvalConfig(backend="openai", base_url=url, model="m", n=2, baselines="random", boards=0,
                                     out=str(tmp_path), quiet=True))
    assert len(server.requests) == 2 and not result.incomplete and result.name == "m"
    assert [r.scenario_id for r in result.records] == ["pb0-000000", "pb0-000001"]
    clean = sum(r.metrics.clean_pot for r in result.records)
    assert result.summary["m"]["overall"]["clean_pot"]["k"] == clean
    assert json.loads((tmp_path / "summary.json").read_text())["summary"] == result.summary
    assert {r.player for r in result.baseline_records} == {"oracle", "random"}
    on_disk = [json.loads(x) for x in (tmp_path / "llm_traces.jsonl").read_text().splitlines()]
    assert on_disk == [json.loads(json.dumps(r, default=str)) for r in result.trace_rows]
    assert json.loads((tmp_path / "results.json").read_text())["report"] == result.report


def test_a_bad_config_fails_before_any_work(tmp_path):
    out = tmp_path / "never"
    for changes, words in (({"n": 0}, "--n must be >= 1"), ({"temperature": 3.0}, "--temperature"),
                           ({"backend": "replay"}, "--responses"), ({"tools": True, "rounds": 2}, "--tools"),
                           ({"backend": "tpu"}, "--backend"), ({"seed": -1}, "--seed")):
        with pytest.raises(UserError, match=re.escape(words)):
            evaluate(EvalConfig(out=str(out), **changes))
        assert not out.exists()
    with pytest.raises(dataclasses.FrozenInstanceError):
        EvalConfig().n = 3  # type: ignore[misc]


def test_no_module_but_the_registry_branches_on_a_backends_name():
    pattern = re.compile(r"""backend\s*[!=]=\s*["']|["'](vllm|openai|replay)["']\s*[!=]=\s*\S*backend""")
    found = [f"{p.relative_to(PACKAGE)}:{i}" for p in PACKAGE.rglob("*.py") if p.name != "registry.py"
             for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not found, found


def test_a_yaml_config_and_flags_make_one_config(tmp_path, capsys):
    from poolbench_data.cli import build_parser, main
    from poolbench_data.config import from_namespace, write_yaml

    path = tmp_path / "eval.yaml"
    write_yaml(EvalConfig(n=7, tools=True, temperature=0.5, model_args="dtype=float32"), path)
    config = from_namespace(EvalConfig, build_parser().parse_args(["eval", "--config", str(path), "--n", "9"]))
    assert config == EvalConfig(n=9, tools=True, temperature=0.5, model_args="dtype=float32")  # the flag wins
    assert from_namespace(EvalConfig, build_parser().parse_args(["eval"])) == EvalConfig()
    for text, words in (("n: seven\n", "n is 'seven', expected int"), ("tool: true\n", "did you mean 'tools'"),
                        ("- 1\n", "not `field: value`"), ("temperature: [1\n", "is not YAML")):
        path.write_text(text)
        assert main(["eval", "--config", str(path)]) == 2
        err = capsys.readouterr().err.strip()
        assert words in err and len(err.splitlines()) == 1, err
    assert main(["eval", "--config", str(tmp_path / "none.yaml")]) == 2
    assert "no such file" in capsys.readouterr().err
