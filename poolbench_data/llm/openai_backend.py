"""Any OpenAI-compatible chat endpoint (the `vllm` OpenAI server, hosted APIs),
with bounded concurrency, retries, per-request timeouts and a deadline for a
whole `generate` call."""

from __future__ import annotations

import base64
import json
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

from poolbench_data.llm.backend import (
    Conversation,
    GenerationFailure,
    GenerationResult,
    request_seed,
    tool_call_text,
    validate_request,
)
from poolbench_data.protocol.parsing import THINK_CLOSE, THINK_OPEN
from poolbench_data.protocol.prompts import DEFAULT_MAX_TOKENS, DEFAULT_TEMPERATURE


# Query parameters whose values are secrets (api_key=, access_token=, sig=, ...).
_SECRET_PARAM = re.compile(r"([?&;](?:[\w.-]*(?:key|token|secret|passw(?:or)?d|pwd|auth\w*|sig(?:nature)?|"
                           r"credential\w*|session\w*))=)[^&;#\s'\"]*", re.IGNORECASE)
_USERINFO = re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/?#\s'\"]+@", re.IGNORECASE)
# A run must still finish if a thread is stuck past its own timeout (a server
# that trickles bytes never trips a read timeout): the deadline plus this.
DEADLINE_GRACE_S = 5.0


def redact(text: str) -> str:
    """`text` with URL credentials masked: user:password@ -> ***@ and the
    values of secret-looking query parameters (?api_key=...) -> ***. Every
    message, log line and stored setting that can hold a base URL goes
    through it."""
    return _SECRET_PARAM.sub(r"\1***", _USERINFO.sub(r"\1***@", str(text)))


def _split_url(base_url: str) -> tuple[str, str | None, dict[str, str]]:
    """(URL without credentials or query, basic-auth header or None, query).

    urllib cannot send userinfo (it reads "user:secret@host" as a host with a
    bad port and puts the secret in its error), and the openai client would
    append paths after the query string, so both travel separately."""
    parts = urllib.parse.urlsplit(base_url.strip())
    auth = None
    if parts.username is not None or parts.password is not None:
        pair = f"{urllib.parse.unquote(parts.username or '')}:{urllib.parse.unquote(parts.password or '')}"
        auth = "Basic " + base64.b64encode(pair.encode()).decode()
    netloc = parts.netloc.rpartition("@")[2]
    query = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", "")), auth, query


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
    """Fail fast, before any work, if the server is not up; return its model ids.
    The probe carries the key every request will (`api_key`, else OPENAI_API_KEY),
    so a server that requires one is not refused for lacking it.
    Messages name the URL with its credentials masked (`redact`)."""
    try:
        return _models(base_url, timeout, api_key or os.environ.get("OPENAI_API_KEY"))
    except (ServerUnavailableError, PermissionError) as exc:
        raise type(exc)(redact(str(exc))) from None


def _models(base_url: str, timeout: float, api_key: str | None) -> list[str]:
    plain, basic, query = _split_url(base_url)
    base_url = redact(base_url)
    url = plain + "/models" + ("?" + urllib.parse.urlencode(query) if query else "")
    request = urllib.request.Request(url)
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    elif basic:
        request.add_header("Authorization", basic)
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
            f"server at {base_url} is not up: GET {redact(url)} answered HTTP {exc.code}; {_start_hint(base_url)}"
        ) from exc
    except (OSError, ValueError) as exc:  # URLError, timeouts, refused, bad JSON
        reason = getattr(exc, "reason", exc)
        raise ServerUnavailableError(
            f"server at {base_url} is not up: {type(exc).__name__}: {reason}; {_start_hint(base_url)}"
        ) from exc
    # OpenAI's shape is {"data": [{"id": ...}]}; some servers answer the bare list.
    listed = body.get("data", []) if isinstance(body, dict) else body if isinstance(body, list) else []
    return [m.get("id", "") for m in listed if isinstance(m, dict)]


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
    the result's `failures`. So one request takes at most
    timeout_s * (retries + 1) plus its backoff; `deadline_s` bounds a whole
    `generate` call: attempts are cut short at it, and requests not answered
    by then are failures of kind "deadline". The server is checked once, at
    construction. Credentials in `base_url` (user:password@, ?api_key=) are
    sent but never shown: settings and messages carry `redact(base_url)`.
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
        retries: int = 2,
        backoff_s: float = 1.0,
        deadline_s: float | None = None,
        extra_body: dict[str, Any] | None = None,
        thinking_token_budget: int | None = None,
        check: bool = True,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        if deadline_s is not None and not deadline_s > 0:
            raise ValueError(f"deadline_s must be > 0 (or None for no deadline), got {deadline_s}")
        self.base_url = base_url.strip().rstrip("/")
        self.shown_url = redact(self.base_url)
        self.model = model
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.deadline_s = deadline_s
        # Server-specific fields sent with every request (vLLM's top_k,
        # repetition_penalty, ...); they stay out of the portable signature.
        self.extra_body = dict(extra_body or {})
        if thinking_token_budget is not None:  # vLLM's server field (it needs --reasoning-parser)
            self.extra_body["thinking_token_budget"] = thinking_token_budget
        api_key = api_key or os.environ.get("OPENAI_API_KEY")
        if check:
            # A tiny request timeout must not make the liveness probe flaky.
            served = check_server(self.base_url, timeout=min(max(timeout_s, 2.0), 10.0), api_key=api_key)
            if served and model not in served:
                raise ValueError(
                    f"model {model!r} is not served at {self.shown_url}; it serves {served}. "
                    "Pass one of those names (vLLM serves the --model path unless --served-model-name is set)"
                )
        import openai  # after the check: a server that is down is reported without this import's seconds

        plain, basic, query = _split_url(self.base_url)
        # Retries are ours (to classify and record them), so the client's are off.
        self.client = openai.OpenAI(
            base_url=plain, api_key=api_key or "EMPTY", timeout=timeout_s, max_retries=0,
            default_query=query or None,
            default_headers={"Authorization": basic} if basic and not api_key else None,
        )

    def settings(self) -> dict[str, Any]:
        import openai

        return {
            "backend": self.name,
            "base_url": self.shown_url,
            "model": self.model,
            "concurrency": self.concurrency,
            "timeout_s": self.timeout_s,
            "retries": self.retries,
            "backoff_s": self.backoff_s,
            "deadline_s": self.deadline_s,
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
        tools: list[dict[str, Any]] | None = None,
        seeds: list[int] | None = None,
    ) -> GenerationResult:
        validate_request(conversations, n, max_tokens, seeds)
        extra: dict[str, Any] = {"extra_body": self.extra_body} if self.extra_body else {}
        if tools:
            extra["tools"] = tools
        if json_schema is not None:
            extra["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "response", "schema": json_schema, "strict": True},
            }

        deadline = None if self.deadline_s is None else time.monotonic() + self.deadline_s

        def one(i: int) -> tuple[list[str], GenerationFailure | None, dict[str, int]]:
            return self._request(i, conversations[i], n, temperature, max_tokens,
                                 request_seed(seed, i) if seeds is None else seeds[i], extra, deadline)

        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, max(1, len(conversations))))
        try:
            futures = [pool.submit(one, i) for i in range(len(conversations))]
            wait(futures, timeout=None if self.deadline_s is None else self.deadline_s + DEADLINE_GRACE_S)
        finally:
            # A thread still stuck is abandoned, not waited for: the deadline holds.
            pool.shutdown(wait=False, cancel_futures=True)
        done = [f.result() if f.done() and not f.cancelled() else
                self._past_deadline(i, n, 0, "still unanswered past the deadline; abandoned")
                for i, f in enumerate(futures)]
        total = {"prompt_tokens": 0, "completion_tokens": 0}
        for _, _, usage in done:
            for key, value in usage.items():
                total[key] = total.get(key, 0) + value
        return GenerationResult([texts for texts, _, _ in done], tuple(f for _, f, _ in done if f is not None), total)

    def close(self) -> None:
        self.client.close()

    def _past_deadline(self, index: int, n: int, attempts: int, cause: str = ""):
        what = f"cut short by the {self.deadline_s:g} s deadline" if attempts else (
            f"not answered within the {self.deadline_s:g} s deadline")
        return [""] * n, GenerationFailure(index, "deadline", what + (f" ({cause})" if cause else ""), attempts,
                                           missing=n), {}

    def _request(
        self,
        index: int,
        conversation: Conversation,
        n: int,
        temperature: float,
        max_tokens: int,
        seed: int,
        extra: dict[str, Any],
        deadline: float | None = None,
    ) -> tuple[list[str], GenerationFailure | None, dict[str, int]]:
        attempts = 0
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return self._past_deadline(index, n, attempts)
            attempts += 1
            timeout = self.timeout_s if left is None else min(self.timeout_s, left)
            try:
                response = self.client.chat.completions.create(
                    model=self.model,
                    messages=conversation,
                    n=n,
                    temperature=temperature,
                    max_tokens=max_tokens,
                    seed=seed,
                    timeout=timeout,
                    **extra,
                )
            except Exception as exc:  # noqa: BLE001 - classified, recorded, never raised
                kind, retryable = _classify(exc)
                error = redact(f"{type(exc).__name__}: {exc}")
                if kind == "timeout" and timeout < self.timeout_s:
                    return self._past_deadline(index, n, attempts, error)
                if retryable and attempts <= self.retries:
                    delay = _retry_after(exc) or self.backoff_s * 2 ** (attempts - 1)
                    if deadline is not None:
                        delay = min(delay, max(0.0, deadline - time.monotonic()))
                    time.sleep(delay)
                    continue
                return [""] * n, GenerationFailure(index, kind, error, attempts, missing=n), {}
            choices = sorted(response.choices, key=lambda c: c.index)
            texts = [message_text(c.message) for c in choices][:n]
            usage = {}
            if response.usage is not None:
                usage = {
                    "prompt_tokens": response.usage.prompt_tokens or 0,
                    "completion_tokens": response.usage.completion_tokens or 0,
                }
                details = getattr(response.usage, "completion_tokens_details", None)
                if getattr(details, "reasoning_tokens", None) is not None:
                    usage["reasoning_tokens"] = details.reasoning_tokens
            failure = None
            if len(texts) < n:  # some hosted APIs ignore n
                failure = GenerationFailure(
                    index, "short_response", f"asked for {n} choices, got {len(texts)}", attempts, n - len(texts)
                )
                texts += [""] * (n - len(texts))
            return texts, failure, usage


def message_text(message) -> str:
    """The answer's text in the form every backend shares: reasoning a server
    returned apart (vLLM's reasoning parsers) back inside <think> ... </think>
    before it, structured tool calls written after it (llm.tools)."""
    thought = getattr(message, "reasoning_content", None) or getattr(message, "reasoning", None)
    if thought is None and getattr(message, "model_extra", None):
        thought = message.model_extra.get("reasoning_content") or message.model_extra.get("reasoning")
    calls = [tool_call_text(c.function.name, c.function.arguments) for c in (getattr(message, "tool_calls", None) or [])
             if getattr(c, "function", None) is not None]
    think = f"{THINK_OPEN}{thought}{THINK_CLOSE}" if thought else ""
    return _unicode("".join([think, message.content or "", *calls]))


def _unicode(text: str) -> str:
    """`text` with unpaired surrogates as U+FFFD: JSON may escape one ("\\ud800"), but UTF-8 cannot hold it, so a
    later request carrying the answer (a refinement round, a tool turn) could not be sent, nor the answer stored in
    a dataset (Arrow strings are UTF-8)."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
