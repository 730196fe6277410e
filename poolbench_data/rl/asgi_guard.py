"""The request guard in front of the OpenEnv server (rl.server.make_app): plain ASGI, no dependency.

- An HTTP body over MAX_BODY bytes is refused 413 (by its Content-Length, or as it streams in), and a JSON body
  nested deeper than MAX_DEPTH 400, before the app reads it: Python's JSON parser recurses once a level, so a
  body of a few kilobytes of brackets would otherwise raise RecursionError inside the app.
- A WebSocket frame over MAX_BODY, nested deeper than MAX_DEPTH, or binary, is answered with an OpenEnv error
  message (`{"type": "error", "data": {"message", "code"}}`) and never reaches the app, so the session and its
  episode stay as they were (OpenEnv's own loop ends a session on an error its JSON parser does not expect).
  Frames over the server's WebSocket limit (serving.WS_MAX_SIZE) are refused by uvicorn, closing the socket.
- `body_check(path, body)`, given, may refuse a well-formed HTTP body with a reason (400).
- With `allowed_hosts` (the server on loopback), a Host header naming anything else is refused 403: a page
  elsewhere cannot reach the server through a name it controls (DNS rebinding).
- A request with an Origin header (a browser's) from another origin than its own Host is refused 403: a page
  a person opens cannot drive sessions. OpenEnv's Python clients send no Origin.
"""

from __future__ import annotations

import json
import re

MAX_BODY = 256 * 1024  # bytes: an answer is at most rl.server.MAX_ANSWER characters, JSON-escaped
MAX_DEPTH = 32  # nesting levels of a JSON body; the protocol's bodies use 3

_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)


def too_deep(body: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether a JSON text nests deeper than `limit` (brackets inside strings do not count)."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    depth = 0
    for m in _TOKENS.finditer(body):
        c = m.group()
        if c in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        elif c in (b"]", b"}"):
            depth -= 1
    return False


def _error_frame(message: str) -> str:
    return json.dumps({"type": "error", "data": {"message": message, "code": "VALIDATION_ERROR"}})


class Guard:
    def __init__(self, app, *, max_body: int = MAX_BODY, max_depth: int = MAX_DEPTH,
                 allowed_hosts: frozenset[str] | None = None, body_check=None):
        self.app, self.max_body, self.max_depth, self.allowed_hosts = app, max_body, max_depth, allowed_hosts
        self.body_check = body_check

    def __getattr__(self, name):  # the wrapped app's attributes (routes, state) for whoever inspects it
        return getattr(self.app, name)

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        refused = self._refusal(scope)
        if refused is not None:
            if scope["type"] == "websocket":
                return await send({"type": "websocket.close", "code": 1008, "reason": refused})
            return await _reply(send, 403, refused)
        if scope["type"] == "websocket":
            return await self.app(scope, self._frames(receive, send), send)
        return await self._http(scope, receive, send)

    def _refusal(self, scope) -> str | None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
        host = headers.get("host", "")
        if self.allowed_hosts is not None and host.lower() not in self.allowed_hosts:
            return f"Host {host!r} is not this server's; reach it at http://{min(self.allowed_hosts)}"
        origin = headers.get("origin")
        if origin is not None and re.sub(r"^[a-z]+://", "", origin.lower()).rstrip("/") != host.lower():
            return f"Origin {origin!r} is another site's; this server takes no requests from web pages"
        return None

    async def _http(self, scope, receive, send):
        declared = dict(scope.get("headers", ())).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body):
            return await _reply(send, 413, f"the body is over {self.max_body} bytes; send at most that")
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_body:
                return await _reply(send, 413, f"the body is over {self.max_body} bytes; send at most that")
        if too_deep(body, self.max_depth):
            return await _reply(send, 400, f"the JSON body nests deeper than {self.max_depth} levels")
        problem = self.body_check(scope.get("path", ""), body) if self.body_check and body else None
        if problem:
            return await _reply(send, 400, problem)
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: the client's disconnect, when it comes

        await self.app(scope, replay, send)

    def _frames(self, receive, send):
        async def checked():
            while True:
                message = await receive()
                if message["type"] != "websocket.receive":
                    return message
                text = message.get("text")
                if text is None:
                    problem = "send JSON text frames, not binary ones"
                elif len(text) > self.max_body or len(text.encode()) > self.max_body:
                    problem = f"the message is over {self.max_body} bytes; send at most that"
                elif too_deep(text.encode(), self.max_depth):
                    problem = f"the JSON message nests deeper than {self.max_depth} levels"
                else:
                    return message
                await send({"type": "websocket.send", "text": _error_frame(problem)})

        return checked


async def _reply(send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
