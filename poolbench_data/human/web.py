"""`poolbench play --web`: the human baseline in a browser, served on loopback.

A small page, not Gradio: the standard library's ThreadingHTTPServer, one
HTML file with a canvas and a few lines of JavaScript (web_page.html), and
JSON endpoints. Nothing to install beyond the package, no version churn, and
the answers go through the very Session `poolbench play` uses (answers.py):
the same parser, the same responses file appended and flushed as each answer
is given, the same replay scoring and report.

  GET  /            the page
  GET  /api/state   the table, the board to play (or the stage: scoring, done and the report)
  POST /api/answer  {"scenario_id", "text"}: the protocol's JSON (or "skip"), checked by the protocol's
                    parser; an accepted answer is recorded, simulated, and its outcome and paths returned
  POST /api/stop    score the boards played so far (the terminal's Ctrl-D)

With --game the same endpoints play a game's turns (web_game.py): the state is the turn to play, an answer's
`scenario_id` names that turn, and an answer to any other turn (one played already, one of an episode that has
ended) is refused 409, an answer that is not the game's action 400; neither is recorded.

Any page a person opens can send requests to 127.0.0.1, so every /api/ request must show that it comes from
this page (`refusal`, one place): the server's token, drawn when it starts and written into the page, in the
X-PoolBench-Token header (another site cannot read the page, so cannot know it); a POST also needs an Origin
of this server and a JSON body (Content-Type application/json, a Content-Length, one JSON object). Anything
else is answered 403, 411, 413, 415 or 400 with a line saying why, and nothing is recorded. No other site may
frame the page either: every response forbids it (X-Frame-Options, Content-Security-Policy frame-ancestors).
"""

from __future__ import annotations

import hmac
import json
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOST = "127.0.0.1"  # loopback only: the page records answers for whoever reaches it
MAX_BODY = 1 << 16  # an answer is a line of JSON
POINTS = 400  # per drawn trajectory: enough for a smooth line, small enough to send at once
GRACE_S = 10.0  # after scoring, how long the page has to fetch the report before the server goes
READ_TIMEOUT_S = 30.0  # a request whose body never comes in full is dropped, not waited on forever
TOKEN_HEADER = "X-PoolBench-Token"
TOKEN_SLOT = b"{{POOLBENCH_TOKEN}}"  # where web_page.html holds the server's token
# On every response: no page elsewhere may show this one in a frame and lure clicks onto it. The policy names
# frame-ancestors only, so the page's inline script and style run as written.
FRAMING_HEADERS = {"X-Frame-Options": "DENY", "Content-Security-Policy": "frame-ancestors 'none'"}
# Every request that reads or changes the game: `refusal` checks each of them the same way.
ENDPOINTS = {("GET", "/api/state"): "state", ("POST", "/api/answer"): "answer", ("POST", "/api/stop"): "stop"}


def check_port(port) -> None:
    from poolbench_data.core.errors import UserError

    if port is not None and not 0 <= port <= 65535:
        raise UserError(f"--port {port} is not a port; give one in 1..65535, or leave --port out for one the "
                        "system picks")


def table_json(g=None, rules: str | None = None) -> dict:
    """What the page draws and shows: the table `g` (a Geometry; the benchmark's by default) and the rules."""
    from poolbench_data.core.records import V0_RANGE
    from poolbench_data.core.table import geometry
    from poolbench_data.protocol.prompts import ANGLE_DECIMALS, SPEED_DECIMALS, SYSTEM_PROMPT, fmt
    from poolbench_data.report.render import COLORS

    g = g or geometry()
    # Pocket centres as the prompt prints them, so the page writes the numbers a model would copy.
    pockets = [{"id": p.id, "x": p.x, "y": p.y, "r": p.radius, "text": [fmt(p.x), fmt(p.y)]} for p in g.pockets]
    return {"width": g.width, "length": g.length, "ball_radius": g.ball_radius, "pockets": pockets,
            "speed_range": list(V0_RANGE), "speed_default": 8.0, "angle_decimals": ANGLE_DECIMALS,
            "speed_decimals": SPEED_DECIMALS, "colors": {k: "rgb(%d,%d,%d)" % c for k, c in COLORS.items()},
            "rules": SYSTEM_PROMPT if rules is None else rules}


def _thin(xs: list, n: int = POINTS) -> list:
    step = max(1, -(-len(xs) // n))
    return xs[::step] + ([xs[-1]] if (len(xs) - 1) % step else [])


class Game:
    """The state the page sees. One lock: a person plays one shot at a time, and the simulator and the
    responses file are not shared between concurrent requests."""

    def __init__(self, session):
        self.session, self.table = session, table_json()
        self.lock = threading.Lock()
        self.ended = threading.Event()  # every board answered, or the person stopped
        self.delivered = threading.Event()  # the page has seen the report
        self.watched = False  # a page has loaded: only then is there someone to show the report to
        self.stage, self.report = "playing", ""

    def state(self) -> dict:
        from poolbench_data.protocol.prompts import user_prompt

        with self.lock:
            self.watched = True
            out = {"stage": self.stage, "n": self.session.n, "answered": len(self.session.done),
                   "player": self.session.name, "table": self.table, "report": self.report}
            pending = self.session.pending()
            if self.stage == "playing" and pending:
                i, s = pending[0]
                out["board"] = {"index": i, "id": s.id, "category": s.category, "prompt": user_prompt(s),
                                "balls": [{"id": b.id, "x": b.x, "y": b.y, "group": b.group} for b in s.balls]}
            return out

    def answer(self, scenario_id, text) -> dict:
        from poolbench_data.human.answers import SKIP, outcome, verdict
        from poolbench_data.protocol.parsing import parse_action

        with self.lock:
            pending = self.session.pending()
            if self.stage != "playing" or not pending or pending[0][1].id != scenario_id:
                # A second tab, or a page left open from before: never record an answer on the wrong board.
                return {"ok": False, "status": "stale", "message": "this board is not the one to play now; reload"}
            i, s = pending[0]
            if not isinstance(text, str):
                return {"ok": False, "status": "no-text", "message": "send the action as a string of JSON"}
            text = text.strip()  # as the terminal reads a line
            out = {"ok": True, "index": i, "id": s.id}
            if text.lower() == SKIP:
                text, line = "", "skipped: no shot (scored as a foul)"
            else:
                parsed = parse_action(text, s)
                if parsed.shot is None:
                    return {"ok": False, "status": parsed.status, "message": parsed.message}
                shot, result, metrics = outcome(s, text)
                line = verdict(metrics)
                out.update(events=result.event_text(), pocketed=[list(p) for p in result.pocketed],
                           final=[list(b) for b in result.final_positions], **self._paths(s, shot))
            self.session.record(s, text)
            print(f"board {i + 1}/{self.session.n}: {s.id} -> {line}", flush=True)
            if not self.session.pending():
                self.ended.set()
            return {**out, "verdict": line, "last": self.ended.is_set()}

    @staticmethod
    def _paths(scenario, shot) -> dict:
        from poolbench_data.report.figures import ball_paths

        try:
            times, paths = ball_paths(scenario, shot)
        except Exception:  # a drawing failure must not lose the answer, already scored by the real simulation
            return {"paths": {}, "duration": 0.0}
        return {"duration": times[-1] if times else 0.0,
                "paths": {b: [[round(x, 4), round(y, 4)] for x, y in _thin(xy)] for b, xy in paths.items()}}

    def stop(self) -> dict:
        self.ended.set()
        return {"ok": True}


def refusal(method: str, headers, port: int, token: str) -> tuple[int, str] | None:
    """(HTTP status, why) when an /api/ request does not show it comes from this server's page, else None."""
    here = (f"http://{HOST}:{port}", f"http://localhost:{port}")
    if not hmac.compare_digest((headers.get(TOKEN_HEADER) or "").encode(), token.encode()):
        return 403, f"this request does not come from the page (no {TOKEN_HEADER} of this server); reload {here[0]}/"
    if method != "POST":
        return None
    if headers.get("Origin") not in here:
        return 403, f"this request comes from {headers.get('Origin') or 'no page'!s:.80}, not from {here[0]}"
    if (headers.get("Content-Type") or "").split(";")[0].strip().lower() != "application/json":
        return 415, "send the request as JSON (Content-Type: application/json)"
    length = headers.get("Content-Length")
    if length is None:
        return 411, "the request has no Content-Length"
    if not (length.isascii() and length.strip().isdigit()):
        return 400, f"Content-Length {length!r:.40} is not a number of bytes"
    if int(length) > MAX_BODY:
        return 413, "request too large"
    return None


def read_body(data: bytes) -> dict:
    """An /api/ request's body: one JSON object (ValueError says why not); nesting is bounded before decoding."""
    from poolbench_data.protocol.parsing import decode_json

    body = decode_json(data or b"{}", "the request body")
    if not isinstance(body, dict):
        kind = {list: "array", str: "string", type(None): "null", bool: "boolean"}.get(type(body), "number")
        raise ValueError(f"the request body is a JSON {kind}, not an object")
    return body


def _handler(game: Game, page: bytes, port: int, token: str):
    class Handler(BaseHTTPRequestHandler):
        timeout = READ_TIMEOUT_S

        def log_message(self, *args):  # the console tells the shots, not every request
            pass

        def end_headers(self):
            # Every response, the server's own errors included: no other site may frame the page (clickjacking).
            for name, value in FRAMING_HEADERS.items():
                self.send_header(name, value)
            super().end_headers()

        def _send(self, code: int, body: bytes, kind: str = "application/json") -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def _json(self, obj, code: int = 200) -> None:
            self._send(code, json.dumps(obj).encode())

        def _local(self) -> bool:
            # A page elsewhere cannot reach 127.0.0.1 through a name it controls (DNS rebinding).
            ok = self.headers.get("Host", "") in (f"{HOST}:{port}", f"localhost:{port}")
            if not ok:
                self._json({"ok": False, "message": "use http://127.0.0.1 to reach this page"}, 403)
            return ok

        def do_GET(self):
            if not self._local():
                return
            if self.path in ("/", "/index.html"):
                self._send(200, page, "text/html; charset=utf-8")
            else:
                self._api("GET")

        def do_POST(self):
            if self._local():
                self._api("POST")

        def _api(self, method: str) -> None:
            route = ENDPOINTS.get((method, self.path))
            if route is None:
                return self._json({"ok": False, "message": "not found"}, 404)
            refused = refusal(method, self.headers, port, token)
            if refused is not None:
                self.close_connection = True  # any body sent is left unread
                return self._json({"ok": False, "message": refused[1]}, refused[0])
            if route == "state":
                state = game.state()
                self._json(state)
                if state["stage"] == "done":  # written to the socket: the server may go now
                    game.delivered.set()
                return
            try:
                body = read_body(self.rfile.read(int(self.headers["Content-Length"])))
            except ValueError as e:
                return self._json({"ok": False, "message": str(e)}, 400)
            except OSError:  # the body never came in full (READ_TIMEOUT_S) or the client went: nobody to answer
                self.close_connection = True
                return
            reply = game.answer(body.get("scenario_id"), body.get("text")) if route == "answer" else game.stop()
            self._json(reply, reply.pop("code", 200))  # a game's refusal of a turn carries its 4xx

    return Handler


def listen(port: int = 0) -> ThreadingHTTPServer:
    """The page's server, bound to `port` on loopback (0: one the system picks) and not yet serving: made before
    anything else, so a port in use costs nothing and leaves no folder behind."""
    from poolbench_data.core.errors import UserError

    try:
        server = ThreadingHTTPServer((HOST, port), BaseHTTPRequestHandler)  # `serve` sets the handler
    except OSError as e:
        raise UserError(f"--port {port}: cannot listen on {HOST} ({e.strerror or e}); give another --port, or "
                        "leave it out for one the system picks") from None
    server.daemon_threads = True
    return server


def serve(session, server: ThreadingHTTPServer, table=None):
    """Serve the boards on `server` (`listen`) until each is answered, the page stops, or Ctrl-C; then score them
    like `poolbench play` (the page shows the report) and close the server. Returns the scoring's EvalResult (None:
    nothing scored). `table`: what the page plays (Game, one shot a board; web_game.GameTable, a game)."""
    from importlib import resources

    from poolbench_data.core.shutdown import terminate_as_exit

    if session.resuming():
        print(session.resuming())
    if not session.pending():
        server.server_close()
        return session.finish()
    game, port, token = (table or Game)(session), server.server_address[1], secrets.token_urlsafe(32)
    page = resources.files("poolbench_data.human").joinpath("web_page.html").read_bytes()
    server.RequestHandlerClass = _handler(game, page.replace(TOKEN_SLOT, token.encode()), port, token)
    thread = threading.Thread(target=server.serve_forever, name="poolbench-web", daemon=True)
    with session, terminate_as_exit():
        thread.start()
        try:
            try:  # from the line that gives the address on: Ctrl-C may come as soon as it is read
                print(f"playing {session.n} {session.unit} at http://{HOST}:{port}/ (open it in a browser; "
                      "Ctrl-C here stops and scores what was played)", flush=True)
                while not game.ended.wait(0.5):  # a timed wait, so Ctrl-C is seen at once
                    pass
            except KeyboardInterrupt:  # the person stopped: score the boards played so far
                print()
            with game.lock:  # no answer is half-written when the scoring reads the file
                game.stage = "scoring"
            result = session.finish()
            with game.lock:
                game.stage = "done"
                scored = result is not None and not result.incomplete
                game.report = (session.out / "report.txt").read_text() if scored else "nothing to score"
            try:
                if game.watched:
                    game.delivered.wait(GRACE_S)
            except KeyboardInterrupt:  # a second Ctrl-C: the report is written, just go
                pass
            return result
        finally:
            server.shutdown()  # returns once serve_forever has stopped
            server.server_close()
            thread.join()
