"""An evaluation's inputs a program or a person gets wrong, refused before any work: a hand-built EvalConfig of
the wrong types, stored answers that do not cover the boards (--backend replay), a --few_shot out of range; and
what the report says of answers it did not generate (a person's, replayed)."""

from __future__ import annotations

import json
import re

import pytest

from poolbench_data import EvalConfig, evaluate
from poolbench_data.boards.generate import generate
from poolbench_data.cli import main
from poolbench_data.core.errors import UserError
from poolbench_data.protocol.prompts import MAX_FEW_SHOT
from test_experiments import recording_server


@pytest.mark.parametrize("field, value, words", [
    ("n", "5", "EvalConfig.n (--n) is '5', a str; give int or None"),
    ("samples", 2.0, "EvalConfig.samples (--samples) is 2.0, a float; give int"),
    ("temperature", "0.2", "EvalConfig.temperature (--temperature) is '0.2', a str; give float"),
    ("quiet", "yes", "EvalConfig.quiet (--quiet) is 'yes', a str; give bool"),
    ("max_tool_calls", True, "EvalConfig.max_tool_calls (--max_tool_calls) is True, a bool; give int"),
    ("baselines", None, "EvalConfig.baselines (--baselines) is None, a NoneType; give str"),
    ("seed", 1.5, "EvalConfig.seed (--seed) is 1.5, a float; give int or None"),
])
def test_a_field_of_the_wrong_type_is_named_before_any_work(tmp_path, field, value, words):
    out = tmp_path / "never"
    with pytest.raises(UserError, match=re.escape(words)):
        evaluate(EvalConfig(out=str(out), **{field: value}))
    assert not out.exists()


def test_an_int_is_a_float_where_a_float_is_asked():
    from poolbench_data.core.fields import check_types

    check_types(EvalConfig(temperature=1, timeout=60, max_failed_share=0))  # no error


def _answers(tmp_path, boards, samples=1, player="human", temperature=None):
    path = tmp_path / "responses.jsonl"
    path.write_text("".join(json.dumps({"player": player, "player_kind": "llm", "scenario_id": b.id, "sample": k,
                                        "raw_response": "skip", "temperature": temperature}) + "\n"
                            for b in boards for k in range(samples)))
    return path


@pytest.mark.parametrize("flags, words", [
    (["--n", "3"], "holds answers of 'human' for 2 of the 3 boards (none for pb0-000002); pass the --n and --seed"),
    (["--n", "2", "--samples", "2"], "holds 1 answer(s) of 'human' for board pb0-000000, fewer than --samples 2; "
                                     "pass --samples 1"),
    (["--n", "2", "--seed", "5"], "for 0 of the 2 boards (none for pb5-000000)"),
])
def test_replayed_answers_that_do_not_cover_the_boards_are_refused_before_the_baselines(tmp_path, capsys, flags,
                                                                                        words):
    responses = _answers(tmp_path, generate(2))
    out = tmp_path / "out"
    assert main(["eval", "--backend", "replay", "--responses", str(responses), *flags, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"--responses {responses} " in err and words in err and len(err.splitlines()) == 1, err
    assert not out.exists()  # no baseline ran, nothing was written
    with pytest.raises(UserError, match=re.escape(words)):  # and from Python
        evaluate(EvalConfig(backend="replay", responses=str(responses), out=str(out),
                            n=int(flags[1]), samples=int(flags[3]) if "--samples" in flags else 1,
                            seed=int(flags[3]) if "--seed" in flags else None))
    assert not out.exists()


@pytest.mark.parametrize("line, words", [
    ("[1, 2]", "line 2 is not a JSON object"),
    ('{"player": "human", "player_kind": "llm", "scenario_id": "pb0-000001", "sample": "0", "raw_response": ""}',
     "line 2: sample is '0', not a count from 0"),
    ('{"player": "human", "player_kind": "llm", "scenario_id": "pb0-0', "line 2 is not JSON"),
])
def test_a_damaged_answers_file_is_named_with_its_line_and_flag(tmp_path, capsys, line, words):
    responses = _answers(tmp_path, generate(1))
    responses.write_text(responses.read_text() + line + "\n")
    assert main(["eval", "--backend", "replay", "--responses", str(responses), "--n", "2", "--out",
                 str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and "--responses" in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "out").exists()


def test_the_report_of_replayed_answers_claims_no_sampling_settings(tmp_path):
    """A person's answers (poolbench play) were never sampled at T = 0.2 with 300 tokens: the title says where the
    answers were read instead."""
    responses = _answers(tmp_path, generate(1))
    result = evaluate(EvalConfig(backend="replay", responses=str(responses), name="human", n=1, baselines="random",
                                 boards=0, quiet=True, out=str(tmp_path / "out")))
    title = result.report.splitlines()[0]
    assert "T=" not in title and "max_tokens" not in title and "-shot" not in title, title
    assert "human x1 (answers read from responses.jsonl, free text)" in title, title


@pytest.mark.slow
def test_the_report_of_a_model_it_sampled_names_the_settings(tmp_path):
    with recording_server(lambda messages: "no answer") as (url, server):
        result = evaluate(EvalConfig(backend="openai", base_url=url, model="m", n=1, baselines="random", boards=0,
                                     few_shot=2, quiet=True, out=str(tmp_path)))
    assert "m x1 (T=0.2, max_tokens=300, 2-shot, free text)" in result.report.splitlines()[0]
    sent = server.requests[0]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user", "assistant", "user"]  # 2 examples


@pytest.mark.parametrize("k", [-1, MAX_FEW_SHOT + 1, 50])
def test_few_shot_is_a_count_from_0_to_the_maximum(tmp_path, capsys, k):
    out = tmp_path / "out"
    assert main(["eval", "--few_shot", str(k), "--n", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"--few_shot {k}: give a whole number of worked examples from 0 to {MAX_FEW_SHOT}" in err, err
    assert len(err.splitlines()) == 1 and not out.exists()


def test_the_few_shot_help_says_what_it_takes(capsys):
    from poolbench_data.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["eval", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"any whole number from 0 to {MAX_FEW_SHOT}" in help_text


def test_few_shot_examples_refuse_a_count_out_of_range():
    from poolbench_data.llm.player import few_shot_examples

    for k in (-1, MAX_FEW_SHOT + 1, 1.5, True):
        with pytest.raises(ValueError, match="few_shot="):
            few_shot_examples(k)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("model, hub, words", [
    ("a" * 300, "offline", "(300 characters) is too long for a local folder's name and for a Hub id"),
    ("someone/no-such-model", "offline", "does not exist as a local folder nor as a Hub model in the local cache"),
    ("someone/no-such-model", "unreachable", "is neither a local folder nor in the local Hugging Face cache, and the "
                                             "Hub (http://127.0.0.1:{port}) cannot be reached"),
])
def test_a_model_that_cannot_load_is_named_before_any_work(tmp_path, model, hub, words):
    """A --model too long for a path, or a Hub id neither in the local cache nor fetchable (offline, or the Hub
    unreachable), is one line naming --model, before the baselines run (not vLLM's retries and traceback)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "cache")}
    if hub == "unreachable":  # online, with nothing listening where the Hub should be
        port = _free_port()
        env.pop("HF_HUB_OFFLINE", None)
        env["HF_ENDPOINT"], words = f"http://127.0.0.1:{port}", words.replace("{port}", str(port))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "poolbench_data.cli", "eval", "--model", model, "--n", "1",
                           "--out", str(out)], env=env, capture_output=True, text=True, timeout=120)
    err = proc.stderr.strip()
    assert proc.returncode == 2 and err.startswith("error: --model=") and words in err, err
    assert len(err.splitlines()) == 1 and not out.exists()
