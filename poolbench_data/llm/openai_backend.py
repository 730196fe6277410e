"""Any OpenAI-compatible chat endpoint (the `vllm` OpenAI server, hosted APIs),
with bounded concurrency, retries and per-request timeouts."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from poolbench_data.llm.backend import (
    Conversation,
    GenerationFailure,
    GenerationResult,
    request_seed,
    validate_request,
)
from poolbench_data.protocol.prompts import DEFAULT_MAX_TOKENS, DEFAULT_TEMPERATURE


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
    the result's `failures`. The server is checked once, at construction.
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
    ) -> GenerationResult:
        validate_request(conversations, n, max_tokens)
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
        total = {"prompt_tokens": 0, "completion_tokens": 0}
        for _, _, usage in done:
            for key in total:
                total[key] += usage.get(key, 0)
        return GenerationResult([texts for texts, _, _ in done], tuple(f for _, f, _ in done if f is not None), total)

    def close(self) -> None:
        self.client.close()

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
