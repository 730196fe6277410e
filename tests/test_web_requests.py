"""`poolbench play --web` against requests its page would not send, on the real server process: every /api/
endpoint refuses a request that does not come from the page (another site's form or fetch, no token, another
origin, not JSON) and records nothing; a malformed request is a 4xx with a line saying why, never a traceback
or a dropped connection; the page's own requests work."""

from __future__ import annotations

import http.client
import json
import queue
import re
import time
from contextlib import contextmanager
from types import SimpleNamespace

import pytest

from poolbench_data.boards.generate import generate
from poolbench_data.human.web import ENDPOINTS, TOKEN_HEADER
from test_play_web import _answers, serving

EVIL = "http://evil.example"
BOARDS = generate(3)


def send(port: int, method: str, path: str, headers: dict, body: bytes = b"") -> tuple[int, dict | str]:
    """One raw request (any header, any Content-Length): the status and the body, JSON where it is."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)  # Host: 127.0.0.1:port, as a browser sends it
        for k, v in headers.items():
            conn.putheader(k, v)
        conn.endheaders(body or None)
        r = conn.getresponse()
        data = r.read()
    finally:
        conn.close()
    try:
        return r.status, json.loads(data)
    except ValueError:
        return r.status, data.decode(errors="replace")


def page_headers(web, body: bytes = b"") -> dict:
    """What the page's fetch sends with a POST."""
    return {"Origin": web.origin, "Content-Type": "application/json", TOKEN_HEADER: web.token,
            "Content-Length": str(len(body))}


def state(web) -> dict:
    code, got = send(web.port, "GET", "/api/state", {TOKEN_HEADER: web.token})
    assert code == 200, got
    return got


def drained(console) -> str:
    while True:
        try:
            console.seen += console.lines.get_nowait()
        except queue.Empty:
            return console.seen.decode(errors="replace")


@contextmanager
def served(out, n: int, *flags: str):
    """`serving`, with the page's token read from the page as its script reads it: what a request needs."""
    with serving(out, n, *flags) as (proc, url, console):
        port = int(url.rsplit(":", 1)[1].strip("/"))
        code, page = send(port, "GET", "/", {})
        assert code == 200
        (token,) = re.findall(r'<meta name="poolbench-token" content="([^"]+)">', page)
        yield SimpleNamespace(proc=proc, port=port, out=out, console=console, token=token,
                              origin=f"http://127.0.0.1:{port}")


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    with served(tmp_path_factory.mktemp("web") / "h", 3) as w:
        yield w


# A request another page could make, and one missing one proof each. (POST status, GET status.)
FORGED = {
    "cross-site-form": (lambda w: {"Origin": EVIL, "Content-Type": "text/plain"}, (403, 403)),
    "no-token": (lambda w: {"Origin": w.origin, "Content-Type": "application/json"}, (403, 403)),
    "wrong-token": (lambda w: {"Origin": w.origin, "Content-Type": "application/json", TOKEN_HEADER: "x" * 43},
                    (403, 403)),
    "other-origin": (lambda w: {"Origin": EVIL, "Content-Type": "application/json", TOKEN_HEADER: w.token},
                     (403, 200)),
    "null-origin": (lambda w: {"Origin": "null", "Content-Type": "application/json", TOKEN_HEADER: w.token},
                    (403, 200)),
    "no-origin": (lambda w: {"Content-Type": "application/json", TOKEN_HEADER: w.token}, (403, 200)),
    "not-json": (lambda w: {"Origin": w.origin, "Content-Type": "text/plain", TOKEN_HEADER: w.token}, (415, 200)),
    "form-encoded": (lambda w: {"Origin": w.origin, "Content-Type": "application/x-www-form-urlencoded",
                                TOKEN_HEADER: w.token}, (415, 200)),
}


@pytest.mark.parametrize("forged", sorted(FORGED))
@pytest.mark.parametrize("endpoint", sorted(ENDPOINTS), ids="-".join)
def test_a_request_not_from_the_page_is_refused_and_records_nothing(web, endpoint, forged):
    method, path = endpoint
    make, (post_code, get_code) = FORGED[forged]
    body = json.dumps({"scenario_id": BOARDS[0].id, "text": "skip"}).encode() if method == "POST" else b""
    headers = {**make(web), **({"Content-Length": str(len(body))} if method == "POST" else {})}
    code, got = send(web.port, method, path, headers, body)
    assert code == (post_code if method == "POST" else get_code), got
    if code != 200:
        assert got["ok"] is False and got["message"]
    assert _answers(web.out) == [] and web.proc.poll() is None  # nothing recorded, and the game goes on
    now = state(web)
    assert now["stage"] == "playing" and now["answered"] == 0 and now["board"]["id"] == BOARDS[0].id


def _deep(n: int) -> bytes:
    return b"[" * n


# (headers beyond the page's, body) -> the status a malformed request gets.
MALFORMED = {
    "length-not-a-number": ({"Content-Length": "abc"}, b"{}", 400),
    "length-negative": ({"Content-Length": "-1"}, b"{}", 400),
    "length-superscript": ({"Content-Length": "\u00b2"}, b"{}", 400),
    "length-missing": ({"Content-Length": None}, b"", 411),
    "too-large": ({"Content-Length": "70000"}, b"", 413),
    "nested-60k": ({}, _deep(60_000), 400),
    "nested-object": ({}, b'{"a":' * 10_000, 400),
    "array": ({}, b'[{"scenario_id": "pb0-000000", "text": "skip"}]', 400),
    "string": ({}, b'"skip"', 400),
    "number": ({}, b"5", 400),
    "null": ({}, b"null", 400),
    "not-utf8": ({}, b'{"text": "\xff\xfe"}', 400),
    "cut": ({}, b'{"scenario_id": "pb0-', 400),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
@pytest.mark.parametrize("path", ["/api/answer", "/api/stop"])
def test_a_malformed_request_is_a_4xx_saying_why(web, path, case):
    extra, body, want = MALFORMED[case]
    headers = {k: v for k, v in {**page_headers(web, body), **extra}.items() if v is not None}
    code, got = send(web.port, "POST", path, headers, body)
    assert code == want and got["ok"] is False and len(got["message"]) < 200, (code, got)
    assert _answers(web.out) == [] and state(web)["stage"] == "playing"
    assert "Traceback" not in drained(web.console)


@pytest.mark.slow
def test_the_page_s_own_requests_play_and_a_numeric_string_speed_is_a_number(tmp_path):
    """The page's requests (token, Origin, JSON) record and play; `"cue_speed": "8"` reads as 8 m/s, as the
    protocol's parser reads a model's: the person's answer is scored as a model's would be."""
    from poolbench_data.human.answers import outcome, verdict
    from poolbench_data.players.baselines import oracle
    from poolbench_data.protocol.prompts import format_action

    s = BOARDS[0]
    action = json.loads(format_action(oracle(s).shot, s))
    as_string = json.dumps({**action, "cue_speed": str(action["cue_speed"])})
    out = tmp_path / "h"
    with serving(out, 2) as (proc, url, console):
        port = int(url.rsplit(":", 1)[1].strip("/"))
        _, page = send(port, "GET", "/", {})
        (token,) = re.findall(r'<meta name="poolbench-token" content="([^"]+)">', page)
        web = SimpleNamespace(port=port, token=token, origin=f"http://127.0.0.1:{port}")
        words = json.dumps({"scenario_id": s.id, "text": as_string.replace('"cue_speed": "', '"cue_speed": "fast ')})
        code, got = send(port, "POST", "/api/answer", page_headers(web, words.encode()), words.encode())
        assert code == 200 and got["ok"] is False and got["status"] == "non-numeric" and _answers(out) == []
        body = json.dumps({"scenario_id": s.id, "text": as_string}).encode()
        code, got = send(port, "POST", "/api/answer", page_headers(web, body), body)
        assert code == 200 and got["ok"] is True, got
        assert got["verdict"] == verdict(outcome(s, json.dumps(action))[2])  # as the number 8.0 plays
        assert [a["raw_response"] for a in _answers(out)] == [as_string]
        code, got = send(port, "POST", "/api/stop", page_headers(web, b"{}"), b"{}")
        assert code == 200 and got["ok"] is True
        while state(web)["stage"] != "done":  # scoring: the page asks again until the report is there
            time.sleep(0.2)
        assert proc.wait(timeout=120) == 0
    assert "Traceback" not in console.seen.decode(errors="replace")


def test_no_other_site_may_frame_the_page(web):
    """Every response forbids framing (clickjacking): the page, the API, a refusal, a 404, a rebinding Host, and
    an error the server library writes itself (a method it has no handler for)."""
    conn = http.client.HTTPConnection("127.0.0.1", web.port, timeout=60)
    requests = [("GET", "/", {}), ("GET", "/api/state", {TOKEN_HEADER: web.token}), ("GET", "/api/state", {}),
                ("GET", "/nowhere", {}), ("GET", "/", {"Host": "evil.example"}), ("PUT", "/", {})]
    try:
        for method, path, headers in requests:
            conn.request(method, path, headers=headers)
            r = conn.getresponse()
            r.read()
            assert r.getheader("X-Frame-Options") == "DENY", (method, path, r.status)
            assert "frame-ancestors 'none'" in r.getheader("Content-Security-Policy", ""), (method, path, r.status)
            if r.will_close:
                conn.close()
    finally:
        conn.close()
