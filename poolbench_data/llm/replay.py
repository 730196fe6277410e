"""Re-score responses that were generated elsewhere (a hosted API run, an old
traces file): a backend whose 'generation' is a lookup, so the physics and
scoring stay exactly those of a live run."""

from __future__ import annotations

from collections.abc import Sequence

from poolbench_data.llm.backend import GenerationFailure, GenerationResult, validate_request


class ReplayBackend:
    name = "replay"

    def __init__(self, responses: Sequence[Sequence[str | None]], model: str = "replay"):
        """responses[i] holds the n responses for conversation i (None = no response: its request
        failed, e.g. a timeout; it is replayed as a failure of kind "missing", not as an answer)."""
        self.responses = [list(r) for r in responses]
        self.model = model

    def generate(self, conversations, *, n=1, temperature=None, max_tokens=1, seed=0, json_schema=None, tools=None):
        validate_request(conversations, n, max_tokens)
        if len(conversations) != len(self.responses):
            raise ValueError(f"replay has responses for {len(self.responses)} conversations, "
                             f"asked for {len(conversations)}")
        short = [i for i, r in enumerate(self.responses) if len(r) < n]
        if short:
            raise ValueError(f"replay conversation {short[0]} has fewer than n={n} responses")
        texts = [[t if t is not None else "" for t in r[:n]] for r in self.responses]
        failures = []
        for i, r in enumerate(self.responses):
            gaps = tuple(j for j, t in enumerate(r[:n]) if t is None)
            if gaps:
                failures.append(GenerationFailure(i, "missing", "no stored response", 0, len(gaps), samples=gaps))
        return GenerationResult(texts, tuple(failures))

    def settings(self) -> dict:
        return {"backend": self.name, "model": self.model}

    def close(self) -> None:
        pass

    @staticmethod
    def from_traces(rows: Sequence[dict], scenario_ids: Sequence[str], player: str) -> ReplayBackend:
        """Responses of one player from trace rows, in scenario then sample order."""
        by_id: dict[str, list[tuple[int, str | None]]] = {}
        for r in rows:
            if r["player"] == player:
                by_id.setdefault(r["scenario_id"], []).append((r["sample"], r["raw_response"]))
        missing = [s for s in scenario_ids if s not in by_id]
        if missing:
            raise ValueError(f"no {player!r} responses for scenario {missing[0]} ({len(missing)} missing)")
        return ReplayBackend([[t for _, t in sorted(by_id[s])] for s in scenario_ids], model=player)
