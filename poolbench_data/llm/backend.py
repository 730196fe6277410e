"""The generation interface every backend implements, and the name table.

`Backend.generate(conversations, n=..., ...)` returns a `GenerationResult`:
for each conversation exactly `n` strings, the requests that failed for good
(their slots hold ""), and the token usage. Only problems that make every
later request fail too (a dead engine, a bad argument) raise.

Implementations, one module each, chosen by name in `llm.registry`: `vllm`
(in process, one batched call), `openai` (any OpenAI-compatible server),
`replay` (stored responses). Conversation i's request is seeded with
`request_seed(seed, i)`, or with `seeds[i]` where `seeds` is given (a game's
episodes, whose batch changes from turn to turn). `tools` (OpenAI function specs) reach the chat
template or the server; a call the model makes comes back in its text as
`<tool_call>{...}</tool_call>` (llm.tools runs it).
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from poolbench_data.protocol.prompts import DEFAULT_MAX_TOKENS, DEFAULT_TEMPERATURE

Conversation = list[dict[str, Any]]


@dataclass(frozen=True)
class GenerationFailure:
    """One request that produced no (or too few) responses.

    kind: "timeout", "connection", "rate_limit", "server_error", "client_error",
    "short_response" (fewer than n choices came back), "deadline" (the run's
    deadline passed before it was answered), "engine" or "missing" (replay:
    no stored response).
    """

    conversation: int
    kind: str
    error: str
    attempts: int
    missing: int  # how many of the n slots were filled with ""
    # Which slots those are; () means the last `missing` (a short response is
    # cut at its end), replay names them because a stored None can be anywhere.
    samples: tuple[int, ...] = ()

    def slots(self, n: int) -> tuple[int, ...]:
        return tuple(self.samples) or tuple(range(n - self.missing, n))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class GenerationResult:
    """What one `generate` call produced."""

    texts: list[list[str]]  # texts[i][j]: sample j of conversation i
    failures: tuple[GenerationFailure, ...] = ()
    usage: dict[str, int] = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0})

    @property
    def requests(self) -> int:
        return len(self.texts)

    def failure_of(self, conversation: int) -> GenerationFailure | None:
        return next((f for f in self.failures if f.conversation == conversation), None)

    def failed_slots(self) -> dict[tuple[int, int], GenerationFailure]:
        """{(conversation, sample): its failure} for every slot that holds no response."""
        return {(f.conversation, j): f for f in self.failures for j in f.slots(len(self.texts[f.conversation]))}

    def failed_by_kind(self) -> dict[str, int]:
        """Slots without a response, by failure kind."""
        out: dict[str, int] = {}
        for f in self.failed_slots().values():
            out[f.kind] = out.get(f.kind, 0) + 1
        return dict(sorted(out.items()))


@runtime_checkable
class Backend(Protocol):
    name: str

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
    ) -> GenerationResult: ...

    def settings(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


def tool_call_text(name: str, arguments: dict | str) -> str:
    """A structured tool call written as text, the form every backend returns."""
    import json

    from poolbench_data.protocol.parsing import decode_json

    if isinstance(arguments, str):
        try:
            arguments = decode_json(arguments)
        except ValueError:
            pass  # kept as the model wrote it: reading the call (llm.tools.read_call) answers with an error
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def request_seed(seed: int, index: int) -> int:
    """Seed of conversation `index` in a run seeded with `seed`.

    Hash-derived (not seed + index) so neighbouring runs do not share
    streams; 31 bits because some hosted APIs reject larger seeds. Every
    backend uses it, so sampling is seeded alike on either. Texts repeat
    exactly only where the logits do: vLLM is not batch-invariant, and the
    engine may batch the same requests differently from run to run.
    """
    digest = hashlib.sha256(f"poolbench:{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def validate_request(conversations: list[Conversation], n: int, max_tokens: int,
                     seeds: list[int] | None = None) -> None:
    if seeds is not None and len(seeds) != len(conversations):
        raise ValueError(f"seeds: {len(seeds)} seeds for {len(conversations)} conversations; give one a conversation")
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
