"""`serve_env(config)`: the OpenEnv server of rl.server on a socket, what `poolbench serve-env` calls.

The socket is bound before anything else, so a port in use or a host that is not an address is one line and
exit 2 before openenv, pooltool or uvicorn load. On loopback (the default) the server answers only requests
whose Host names it (rl.asgi_guard); `--host 0.0.0.0` serves every interface (a container's), without that
check. Port 0 lets the system pick; the line printed at start names the port either way.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass, field

HOST = "127.0.0.1"
WS_MAX_SIZE = 1 << 20  # uvicorn closes a socket sending a bigger frame; smaller ones over MAX_BODY get an error


@dataclass(frozen=True)
class ServeEnvConfig:
    """Serve PoolBench's games (shot, nineball, nineball-seeded, runout) as an OpenEnv environment: HTTP /reset,
    /step, /state, /schema, /health and the WebSocket /ws, one game session a WebSocket (docs/openenv.md)."""

    port: int = field(default=8000, metadata={"help": "the port to listen on (0: one the system picks, printed "
                                                      "at start)"})
    host: str = field(default=HOST, metadata={"help": "the address to listen on: loopback by default; 0.0.0.0 "
                                                      "serves every interface (a container's)"})
    max_sessions: int = field(default=64, metadata={"help": "game sessions open at once (one a WebSocket); one "
                                                            "more is refused"})


def check_host(host: str) -> tuple[str, bool]:
    """(the address to bind, whether it is loopback); a host that is no IP address (or `localhost`) is refused."""
    from poolbench_data.core.errors import UserError

    if host == "localhost":
        return HOST, True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise UserError(f"--host {host!r} is not an IP address; give one (127.0.0.1, the default, or 0.0.0.0 for "
                        "every interface)") from None
    return str(address), address.is_loopback


def listen(host: str, port: int) -> socket.socket:
    from poolbench_data.core.errors import UserError

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart may bind while old sockets wait
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError as e:
        sock.close()
        raise UserError(f"--port {port}: cannot listen on {host} ({e.strerror or e}); give another --port, or 0 "
                        "for one the system picks") from None
    return sock


def serve_env(config: ServeEnvConfig) -> int:
    from poolbench_data.core.errors import UserError, check_whole

    check_whole("--port", config.port, 0, 65535, "a port")
    check_whole("--max_sessions", config.max_sessions, 1, 10_000)
    host, loopback = check_host(config.host)
    try:
        import uvicorn

        from poolbench_data.rl.server import make_app
    except ImportError as e:
        raise UserError(f"serving needs openenv ({e}); install the extra: pip install 'poolbench-data[openenv]'") \
            from None
    sock = listen(host, config.port)
    port = sock.getsockname()[1]
    name = f"[{host}]" if ":" in host else host
    hosts = frozenset(f"{h}:{port}" for h in ("127.0.0.1", "localhost", "[::1]")) if loopback else None
    app = make_app(max_sessions=config.max_sessions, allowed_hosts=hosts)
    server = uvicorn.Server(uvicorn.Config(app, ws_max_size=WS_MAX_SIZE, log_level="warning", lifespan="on",
                                           timeout_graceful_shutdown=5))
    # Printed once the socket listens: a client connecting now waits in its backlog until uvicorn accepts.
    print(f"serving PoolBench's OpenEnv environment at http://{name}:{port} (WebSocket ws://{name}:{port}/ws); "
          "Ctrl-C stops", flush=True)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    return 0
