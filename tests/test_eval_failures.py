"""A model run whose requests failed is never reported as a clean-looking 0%.

Servers here are real: a hand-written HTTP server on 127.0.0.1 in a thread
that lists the model on GET /v1/models and then rejects (HTTP 400) or never
answers chat completions; the in-process vLLM engine for the slow tests.
"""

from __future__ import annotations

import json
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import copy_of

from poolbench_data.cli import main

SILENT_HOLD_S = 60.0  # a silent handler gives up after this, so no thread outlives a run by much


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self.server.seen.append((self.path, self.headers.get("Authorization")))
        if urlsplit(self.path).path.rstrip("/") == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": self.server.model, "object": "model"}]})
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.seen.append((self.path, self.headers.get("Authorization")))
        if self.server.mode == "reject":
            self._send(400, {"error": {"message": "rejected by the test server", "type": "invalid_request_error"}})
        else:  # silent: hold the connection open, answer nothing
            self.server.release.wait(SILENT_HOLD_S)
            self.close_connection = True

    def _send(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@contextmanager
def loopback(mode: str, model: str = "m"):
    """(base URL, server) of a loopback server that lists `model` and then
    rejects ("reject") or never answers ("silent") every chat completion."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.mode, server.model, server.release, server.seen = mode, model, threading.Event(), []
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", server
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def posts(server) -> int:
    return sum(path.startswith("/v1/chat/completions") for path, _ in server.seen)


@pytest.fixture
def dataset(small_dataset, tmp_path):
    """The session's small dataset folder, a copy of this test's own (a run may write to it)."""
    return copy_of(small_dataset, tmp_path / "data")


def openai_eval(url: str, out: Path, *extra: str) -> int:
    return main(["eval", "--backend", "openai", "--base_url", url, "--model", "m", "--n", "2", "--boards", "0",
                 "--out", str(out), "--quiet", *extra])


def refused(capsys, args, *words) -> str:
    """One line naming the field and the fix, exit 2."""
    assert main(args) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: "), err
    for w in words:
        assert w in err, err
    return err


# ------------------------------------------------------------ failed requests


def test_rejected_requests_fail_the_run_instead_of_scoring_fouls(dataset, tmp_path, capsys):
    from poolbench_data.hub.folder import read_rows

    before = read_rows(dataset, "traces", "test")
    out = tmp_path / "eval"
    with loopback("reject") as (url, server):
        rc = openai_eval(url, out, "--dataset_dir", str(dataset))
    captured = capsys.readouterr()
    assert rc == 1, captured.err
    error = [line for line in captured.err.splitlines() if line.startswith("error: ")]
    assert len(error) == 1 and "client_error: 2" in error[0] and "--max_failed_share" in error[0], captured.err
    assert "400" in error[0] and "marked incomplete" in error[0] and "--dataset_dir" in error[0]
    assert posts(server) == 2  # a 400 is not retried
    result = json.loads((out / "results.json").read_text())
    assert result["incomplete"] is True
    assert result["request_failures"]["by_kind"] == {"client_error": 2}
    assert result["request_failures"]["failed"] == result["request_failures"]["shots"] == 2
    report = (out / "report.txt").read_text()
    assert report.startswith("INCOMPLETE: 2 of 2 shots of m got no response (client_error: 2)")
    # No 0% row for a model that never answered: its shots are not its fouls.
    assert not [line for line in report.splitlines() if line.startswith("m ")], report
    assert "'request-failed': 2" in report and "oracle" in report
    rows = [json.loads(x) for x in (out / "llm_traces.jsonl").read_text().splitlines()]
    assert [r["parse_status"] for r in rows] == ["request-failed"] * 2
    assert all(not r["foul"] and r["raw_response"] is None and r["sim_status"] == "not-fired" for r in rows)
    assert all(r["parse_message"].startswith("client_error: BadRequestError") for r in rows)
    assert read_rows(dataset, "traces", "test") == before  # nothing appended


def test_failures_within_max_failed_share_pass_but_stay_out_of_rates_and_dataset(dataset, tmp_path, capsys):
    from poolbench_data.hub.folder import read_rows

    out = tmp_path / "eval"
    with loopback("reject") as (url, _):
        rc = openai_eval(url, out, "--dataset_dir", str(dataset), "--max_failed_share", "1")
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    result = json.loads((out / "results.json").read_text())
    assert result["incomplete"] is False and result["request_failures"]["failed"] == 2
    report = (out / "report.txt").read_text()
    assert "INCOMPLETE" not in report
    assert "Requests failed: 2 of 2 shots of m got no response (client_error: 2), within what" in report
    assert "m has no row" in report
    assert not [r for r in read_rows(dataset, "traces", "test") if r["player"] == "m"]


@pytest.mark.slow
def test_a_silent_server_fails_each_request_in_bounded_time(tmp_path, capsys):
    out = tmp_path / "eval"
    with loopback("silent") as (url, server):
        started = time.perf_counter()
        rc = openai_eval(url, out, "--request_timeout", "1", "--retries", "1")
        elapsed = time.perf_counter() - started
    assert rc == 1, capsys.readouterr().err
    assert "timeout: 2" in capsys.readouterr().err
    result = json.loads((out / "results.json").read_text())
    assert result["request_failures"]["by_kind"] == {"timeout": 2}
    assert [f["attempts"] for f in result["failures"]] == [2, 2]  # the try plus one retry
    assert posts(server) == 4
    # Each request: 2 attempts of 1 s and a 1 s backoff, the two in parallel.
    assert result["timing_s"]["generation_and_physics"] < 10 and elapsed < 60
    assert result["backend"]["timeout_s"] == 1.0 and result["backend"]["retries"] == 1


@pytest.mark.slow
def test_the_run_deadline_cuts_requests_in_flight(tmp_path, capsys):
    out = tmp_path / "eval"
    with loopback("silent") as (url, _):
        rc = openai_eval(url, out, "--request_timeout", "30", "--retries", "3", "--timeout", "2")
    assert rc == 1
    assert "deadline: 2" in capsys.readouterr().err
    result = json.loads((out / "results.json").read_text())
    assert result["request_failures"]["by_kind"] == {"deadline": 2}
    assert result["timing_s"]["generation_and_physics"] < 10
    assert result["backend"]["deadline_s"] == 2.0


def test_a_request_timeout_is_a_recorded_failure_after_its_retries():
    # A server that never answers, not a real engine with a tiny timeout: a starved
    # client thread can read a finished reply however small the timeout (CI did).
    from poolbench_data.llm import GenerationFailure
    from poolbench_data.llm.openai_backend import OpenAIBackend

    conv = [{"role": "user", "content": "hi"}]
    with loopback("silent") as (url, server):
        backend = OpenAIBackend(url, "m", timeout_s=0.3, retries=1, backoff_s=0.01)
        result = backend.generate([conv] * 2, n=2, max_tokens=8)
        backend.close()
    assert result.texts == [["", ""], ["", ""]]
    assert [f.conversation for f in result.failures] == [0, 1]
    for failure in result.failures:
        assert isinstance(failure, GenerationFailure)
        assert failure.kind == "timeout"
        assert failure.attempts == 2  # the first try plus one retry
        assert failure.to_dict()["missing"] == 2
    assert posts(server) == 4


def test_requests_still_queued_at_the_deadline_are_never_sent():
    from poolbench_data.llm.openai_backend import OpenAIBackend

    conv = [{"role": "user", "content": "hi"}]
    with loopback("silent") as (url, server):
        backend = OpenAIBackend(url, "m", concurrency=1, timeout_s=30, retries=0, deadline_s=1.5)
        started = time.perf_counter()
        result = backend.generate([conv] * 3)
        elapsed = time.perf_counter() - started
        backend.close()
    assert [f.kind for f in result.failures] == ["deadline"] * 3
    assert [f.attempts for f in result.failures] == [1, 0, 0]
    assert result.texts == [[""]] * 3 and result.failed_by_kind() == {"deadline": 3}
    assert posts(server) == 1 and elapsed < 8


@pytest.mark.slow
def test_rescoring_stored_failures_keeps_them_failures(tmp_path, capsys):
    from poolbench_data.boards.generate import generate

    traces = tmp_path / "run" / "llm_traces.jsonl"
    traces.parent.mkdir()
    texts = [None, "no json"]  # what eval stores for a shot whose request failed, and an answer
    traces.write_text("".join(json.dumps({"player": "m", "player_kind": "llm", "scenario_id": s.id, "sample": 0,
                                          "raw_response": t, "temperature": 0.2}) + "\n"
                              for s, t in zip(generate(2), texts)))
    assert main(["score", str(traces), "--out", str(tmp_path / "a")]) == 1
    said = capsys.readouterr()
    assert "1 of 2 shots of m got no response (missing: 1)" in said.err
    # Where it writes, first: a default --out is a folder the user never named (TRACES' folder + _rescored).
    assert said.out.splitlines()[0] == (f"re-scoring 2 responses of m from {traces}; the report goes to "
                                        f"{tmp_path / 'a'}/")
    assert main(["score", str(traces), "--out", str(tmp_path / "b"), "--max_failed_share", "0.5"]) == 0
    report = (tmp_path / "b" / "report.txt").read_text()
    assert "its rates count its 1 answered shots only" in report
    assert "'no-json': 1, 'request-failed': 1" in report


# ---------------------------------------------------------------- credentials


def test_credentials_in_the_base_url_are_never_shown(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # it would replace the URL's basic auth
    err = refused(capsys, ["eval", "--backend", "openai", "--base_url", "http://user:secret@127.0.0.1:9/v1",
                           "--model", "m", "--out", str(tmp_path / "o")], "not up", "http://***@127.0.0.1:9/v1")
    assert "secret" not in err and not (tmp_path / "o").exists()

    out = tmp_path / "eval"
    with loopback("reject") as (url, server):
        secret_url = url.replace("http://", "http://user:secret@") + "?api_key=tok123"
        assert openai_eval(secret_url, out) == 1
    captured = capsys.readouterr()
    # The credentials reach the server, as basic auth and as the query parameter ...
    assert all("api_key=tok123" in path and auth.startswith("Basic ") for path, auth in server.seen)
    assert {urlsplit(path).path for path, _ in server.seen} == {"/v1/models", "/v1/chat/completions"}
    # ... and nothing we print or store.
    shown = [captured.out, captured.err] + [p.read_text() for p in out.iterdir() if p.suffix in (".json", ".jsonl",
                                                                                                ".txt", ".log")]
    assert not [text for text in shown if "secret" in text or "tok123" in text]
    backend = json.loads((out / "results.json").read_text())["backend"]
    assert backend["base_url"] == url.replace("http://", "http://***@") + "?api_key=***"


def test_redact():
    from poolbench_data.llm.openai_backend import redact

    assert redact("GET http://u:p@ss@h:1/v1/models?x=1&access_token=T#f failed") == (
        "GET http://***@h:1/v1/models?x=1&access_token=***#f failed")
    assert redact("https://h/v1?api-key=K&api-version=2024-06-01") == "https://h/v1?api-key=***&api-version=2024-06-01"
    assert redact("http://127.0.0.1:8000/v1 and me@example.com") == "http://127.0.0.1:8000/v1 and me@example.com"


# ------------------------------------------------------- refused before work


def test_sampling_values_an_engine_refuses_are_refused_up_front(tmp_path, capsys):
    o = ["--out", str(tmp_path / "o")]
    with loopback("reject") as (url, _):
        # The server would reject these with HTTP 400 after the baselines.
        refused(capsys, ["eval", "--backend", "openai", "--base_url", url, "--model", "m", "--temperature", "2.5", *o],
                "--temperature must be a number in [0, 2] (got 2.5)")
    for args, words in (
        (["--temperature", "nan"], ("--temperature", "nan")),
        (["--temperature", "inf"], ("--temperature", "inf")),
        (["--temperature", "-0.5"], ("--temperature must be >= 0",)),
        (["--temperature", "0", "--samples", "2"], ("--samples 2 needs --temperature > 0", "--samples 1")),
        (["--samples", "0"], ("--samples must be >= 1",)),
        (["--samples", "20000"], ("--samples must be at most 16384", "VLLM_MAX_N_SEQUENCES")),
        (["--max_tokens", "0"], ("--max_tokens must be >= 1",)),
        (["--max_model_len", "0"], ("--max_model_len must be >= 1",)),
        (["--request_timeout", "0"], ("--request_timeout must be a number of seconds > 0",)),
        (["--timeout", "nan"], ("--timeout must be a number of seconds > 0",)),
        (["--retries", "-1"], ("--retries must be >= 0",)),
        (["--max_failed_share", "1.5"], ("--max_failed_share must be a share in [0, 1]",)),
    ):
        started = time.perf_counter()
        refused(capsys, ["eval", *args, *o], *words)
        assert time.perf_counter() - started < 10, args
    assert not (tmp_path / "o").exists()


def test_a_model_named_like_a_baseline_is_refused(tmp_path, capsys):
    from poolbench_data.boards.generate import generate

    folder = tmp_path / "random"  # a traces folder whose name is a baseline's
    folder.mkdir()
    traces = folder / "llm_traces.jsonl"
    traces.write_text("".join(json.dumps({"player": "m", "player_kind": "llm", "scenario_id": s.id, "sample": 0,
                                          "raw_response": "no json"}) + "\n" for s in generate(2)))
    replay = ["eval", "--backend", "replay", "--responses", str(traces), "--n", "2", "--boards", "0", "--quiet",
              "--out", str(tmp_path / "o")]
    refused(capsys, [*replay, "--name", "oracle"], "--name oracle is a baseline's name", "pass --name something-else")
    refused(capsys, [*replay, "--name", "heuristic", "--baselines", "heuristic"], "--name heuristic")
    refused(capsys, replay, "the model's name 'random' (its folder's name)", "pass --name something-else")
    refused(capsys, ["eval", "--name", "oracle-centre", "--out", str(tmp_path / "o")], "--name oracle-centre")
    assert not (tmp_path / "o").exists()
    assert main([*replay, "--name", "smol"]) == 0  # any other name runs


def test_prompts_longer_than_the_context_are_refused_before_the_engine(tmp_path, capsys):
    from poolbench_data.llm.model import default_model_dir

    model = str(default_model_dir())
    o = ["--n", "2", "--out", str(tmp_path / "o")]
    with loopback("reject", model=model) as (url, _):
        err = refused(capsys, ["eval", "--backend", "openai", "--base_url", url, "--model", model, "--few_shot", "7",
                               *o], "--few_shot 7 makes prompts of up to", "--max_model_len 4096",
                      "the largest that fits is 4: pass --few_shot 4")
    by_k = err.split("the longest prompt by --few_shot is ")[1].split(" tokens;")[0]
    tokens = {int(k): int(v) for k, v in (pair.split(": ") for pair in by_k.split(", "))}
    assert sorted(tokens) == [0, 1, 3, 5, 7]
    assert tokens[0] < tokens[1] < tokens[3] <= 4096 - 300 < tokens[5] < tokens[7]
    started = time.perf_counter()
    refused(capsys, ["eval", "--few_shot", "5", *o], "--few_shot 5 makes prompts of up to",
            f"raise --max_model_len to {tokens[5] + 300}")
    refused(capsys, ["eval", "--max_tokens", "4000", *o], "--few_shot 0", "no --few_shot fits",
            f"lower --max_tokens to {4096 - tokens[0]}")
    assert time.perf_counter() - started < 120  # no engine start
    assert not (tmp_path / "o").exists()


# ----------------------------------------------------- the in-process engine


@pytest.fixture
def engine(vllm_engine):
    return vllm_engine  # the session's (tests/conftest.py)


@pytest.mark.slow
def test_sampling_settings_the_engine_refuses_fail_the_call_in_one_line(engine):
    conv = [{"role": "user", "content": "Name one colour."}]
    for kwargs, word in (({"temperature": -1.0}, "non-negative"), ({"n": 2, "temperature": 0.0}, "greedy"),
                         ({"temperature": 3.0}, "[0, 2]")):
        with pytest.raises(ValueError, match="vLLM refused the sampling settings") as err:
            engine.generate([conv], max_tokens=4, **kwargs)
        assert word in str(err.value) and "\n" not in str(err.value)
    assert engine.generate([conv], max_tokens=4).failures == ()  # the engine still serves


@pytest.mark.slow
def test_prompt_tokens_are_counted_as_the_engine_counts_them(engine):
    from poolbench_data.boards.generate import generate
    from poolbench_data.llm.player import conversations, load_tokenizer, prompt_tokens

    convs = conversations(generate(2), 1)
    result = engine.generate(convs, max_tokens=1)
    assert result.usage["prompt_tokens"] == sum(prompt_tokens(load_tokenizer(engine.model), convs))


class _KeyedHandler(_Handler):
    """A server that lists its models only for the right key, as a bare JSON list."""

    def do_GET(self) -> None:  # noqa: N802
        self.server.seen.append((self.path, self.headers.get("Authorization")))
        if self.headers.get("Authorization") != "Bearer sekret":
            self._send(401, {"error": {"message": "no key"}})
        else:
            data = json.dumps([{"id": self.server.model}]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)


def test_the_pre_check_sends_the_key_and_reads_a_bare_list(monkeypatch, capsys):
    from poolbench_data.llm.openai_backend import check_server

    server = ThreadingHTTPServer(("127.0.0.1", 0), _KeyedHandler)
    server.daemon_threads = True
    server.mode, server.model, server.release, server.seen = "reject", "m", threading.Event(), []
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        with pytest.raises(PermissionError, match="refused the API key"):
            check_server(url, timeout=2.0)
        monkeypatch.setenv("OPENAI_API_KEY", "sekret")
        assert check_server(url, timeout=2.0) == ["m"]
        # Through the CLI: the key passes the pre-check, and the run stops at the model the server lacks.
        assert main(["eval", "--backend", "openai", "--base_url", url, "--model", "nope", "--n", "1"]) == 2
        err = capsys.readouterr().err
        assert "'nope' is not served" in err and "API key" not in err, err
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.mark.parametrize("change, words", [
    (lambda rows: rows + [{**rows[0], "player": "m@r2"}], "holds rows of 2 players ('m', 'm@r2'); pick one with --name"),
    (lambda rows: rows + [dict(rows[1])], "two rows for scenario 'pb0-000001' sample 0"),
    (lambda rows: [{**rows[0], "sample": "0"}, rows[1]], "row 1 of player 'm': sample is '0'"),
    (lambda rows: [rows[0], {**rows[1], "raw_response": {"a": 1}}], "row 2 of player 'm': raw_response is a dict"),
    (lambda rows: [{k: v for k, v in rows[0].items() if k != "scenario_id"}, rows[1]], "lacks field 'scenario_id'"),
])
def test_score_refuses_what_it_would_silently_misread(tmp_path, capsys, change, words):
    from poolbench_data.boards.generate import generate

    rows = [{"player": "m", "player_kind": "llm", "scenario_id": s.id, "sample": 0, "raw_response": "no json",
             "temperature": 0.2} for s in generate(2)]
    traces = tmp_path / "run" / "llm_traces.jsonl"
    traces.parent.mkdir()
    traces.write_text("".join(json.dumps(r) + "\n" for r in change(rows)))
    assert main(["score", str(traces), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "o").exists()


def test_score_names_a_nan_temperature_as_stored(tmp_path, capsys):
    from poolbench_data.boards.generate import generate

    traces = tmp_path / "llm_traces.jsonl"
    traces.write_text("".join('{"player": "m", "player_kind": "llm", "scenario_id": "%s", "sample": 0, '
                              '"raw_response": "x", "temperature": NaN}\n' % s.id for s in generate(1)))
    assert main(["score", str(traces), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "the stored temperature is nan" in err and "--temperature" not in err


def test_simulations_stopped_early_are_counted_and_named():
    """A shot whose simulation hit the event limit (or the wall clock) is scored from where the balls were; the
    report counts such shots per player instead of letting them pass as any other shot."""
    from poolbench_data.boards.generate import generate
    from poolbench_data.core.physics import simulate
    from poolbench_data.core.records import Shot
    from poolbench_data.evaluation.outputs import simulator_stops, stops_line
    from poolbench_data.players.play import play_shot

    s = generate(1)[0]
    shot = Shot(phi=30.0, V0=6.0)
    stopped = simulate(s, shot, max_events=3)
    assert stopped.status == "event-limit"
    records = [play_shot(s, shot, player="m", kind="llm"), play_shot(s, shot, player="m", kind="llm", result=stopped),
               play_shot(s, None, player="m", kind="llm", parse_status="no-json"),
               play_shot(s, shot, player="random", kind="random", result=stopped)]
    stops = simulator_stops(records)
    assert stops == {"m": {"event-limit": 1}, "random": {"event-limit": 1}}
    line = stops_line(stops)
    assert "m: event-limit 1" in line and "random: event-limit 1" in line and "MAX_EVENTS" in line
    assert simulator_stops(records[:1]) == {} and stops_line({}) == ""


def test_a_context_longer_than_the_model_holds_is_refused_before_the_engine(tmp_path, capsys, tiny_model):
    import json as _json

    held = _json.loads((tiny_model / "config.json").read_text())["max_position_embeddings"]
    o = ["--model", str(tiny_model), "--n", "1", "--out", str(tmp_path / "o")]
    started = time.perf_counter()
    refused(capsys, ["eval", *o, "--max_model_len", str(held + 1)],
            f"--max_model_len {held + 1} exceeds the {held} tokens --model", f"pass --max_model_len {held} or less")
    assert time.perf_counter() - started < 60  # no engine start, no baselines
    assert not (tmp_path / "o").exists()
