"""Section 6.3 experiments through the OpenAI-compatible backend, against a
loopback server that records every request and answers like a model would:
iterative refinement with simulator feedback (--rounds) and vision (--vision)."""

from __future__ import annotations

import base64
import io
import json
import threading
from contextlib import contextmanager
from http.server import ThreadingHTTPServer

import pytest

from poolbench_data.boards.generate import generate
from poolbench_data.cli import main
from poolbench_data.players.baselines import oracle
from poolbench_data.protocol.prompts import format_action, user_prompt
from test_eval_failures import _Handler


class _Recorder(_Handler):
    """test_eval_failures' loopback handler (model list, JSON replies), answering
    every chat completion with `server.reply(messages)` and recording the request."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        self.server.requests.append(body)
        text = self.server.reply(body["messages"])
        self._send(200, {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                         "choices": [{"index": i, "message": {"role": "assistant", "content": text},
                                      "finish_reason": "stop"} for i in range(body.get("n", 1))],
                         "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})


@contextmanager
def recording_server(reply, handler=None):
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler or _Recorder)
    server.daemon_threads = True
    server.requests, server.reply, server.seen, server.model = [], reply, [], "m"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _text(content) -> str:
    return content if isinstance(content, str) else next(p["text"] for p in content if p["type"] == "text")


BOARDS = generate(2)


def _board(messages):
    prompt = _text(messages[1]["content"])
    return next(s for s in BOARDS if user_prompt(s) == prompt)


@pytest.mark.slow
def test_refinement_feeds_the_simulator_back_and_scores_each_round(tmp_path):
    def reply(messages):  # a "model" that only gets it right once told what happened
        s = _board(messages)
        return "let me think" if len(messages) == 2 else format_action(oracle(s).shot, s)

    with recording_server(reply) as (url, server):
        assert main(["eval", "--backend", "openai", "--base_url", url, "--model", "m", "--n", "2", "--rounds", "2",
                     "--baselines", "random", "--boards", "0", "--out", str(tmp_path), "--quiet"]) == 0
    second = [r for r in server.requests if len(r["messages"]) == 4]
    assert len(second) == 2
    thread = second[0]["messages"]
    assert thread[2] == {"role": "assistant", "content": "let me think"}
    assert "could not be played (no-json" in thread[3]["content"] and "Shoot again" in thread[3]["content"]
    rows = [json.loads(x) for x in (tmp_path / "llm_traces.jsonl").read_text().splitlines()]
    assert [r["player"] for r in rows] == ["m", "m", "m@r2", "m@r2"]
    assert all(r["parse_status"] == "ok" for r in rows if r["player"] == "m@r2")
    report = (tmp_path / "report.txt").read_text()
    assert "\nm@r2 " in report and "\nm " in report
    pairs = [json.loads(x) for x in (tmp_path / "refinement_pairs.jsonl").read_text().splitlines()]
    assert pairs and all(p["rounds"] == [1, 2] and p["chosen_score"] > p["rejected_score"] for p in pairs)
    assert pairs[0]["rejected"][0]["content"] == "let me think"


def test_vision_sends_the_board_png_with_the_unchanged_prompt(tmp_path):
    from PIL import Image

    with recording_server(lambda messages: "{}") as (url, server):
        assert main(["eval", "--backend", "openai", "--base_url", url, "--model", "m", "--n", "1", "--vision",
                     "--baselines", "random", "--boards", "0", "--out", str(tmp_path), "--quiet"]) == 0
    (request,) = server.requests
    text, image = request["messages"][1]["content"]
    assert text == {"type": "text", "text": user_prompt(BOARDS[0])}
    prefix = "data:image/png;base64,"
    assert image["type"] == "image_url" and image["image_url"]["url"].startswith(prefix)
    png = Image.open(io.BytesIO(base64.b64decode(image["image_url"]["url"][len(prefix):])))
    assert png.format == "PNG" and png.width > 100 and png.height > 2 * png.width * 0.9


@pytest.mark.parametrize("flags, words", [
    (["--vision"], "--vision sends images over the OpenAI-compatible API"),
    (["--rounds", "0"], "--rounds must be >= 1"),
])
def test_experiment_flags_are_checked_before_any_work(tmp_path, capsys, flags, words):
    assert main(["eval", "--out", str(tmp_path / "o"), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1
