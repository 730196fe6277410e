"""Re-score responses that were generated elsewhere (a hosted API run, an old
traces file): a backend whose 'generation' is a lookup, so the physics and
scoring stay exactly those of a live run."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from poolbench_data.llm.backend import GenerationFailure, GenerationResult, validate_request


class ReplayBackend:
    name = "replay"

    def __init__(self, responses: Sequence[Sequence[str | None]], model: str = "replay"):
        """responses[i] holds the n responses for conversation i (None = no response: its request
        failed, e.g. a timeout; it is replayed as a failure of kind "missing", not as an answer)."""
        self.responses = [list(r) for r in responses]
        self.model = model

    def generate(self, conversations, *, n=1, temperature=None, max_tokens=1, seed=0, json_schema=None, tools=None,
                 seeds=None):
        validate_request(conversations, n, max_tokens, seeds)
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


def row_problem(r: dict) -> str | None:
    """What a stored answer row lacks for a replay (the fields the replay backend reads), or None."""
    for key in ("player", "player_kind", "scenario_id"):
        if not isinstance(r.get(key), str):
            return f"{key} is {r.get(key)!r}, not text" if key in r else f"it has no {key!r}"
    sample = r.get("sample")
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
        return f"sample is {sample!r}, not a count from 0"
    if "raw_response" not in r:  # null is a request that failed; absent is a row that is not an answer
        return "it has no 'raw_response'"
    if not isinstance(r["raw_response"], (str, type(None))):
        return f"raw_response is a {type(r.get('raw_response')).__name__}, not text"
    t = r.get("temperature")
    if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0):
        return f"the stored temperature is {t!r}, not a finite number >= 0"
    return None


def replay_rows(path, fix: str) -> list[dict]:
    """The answer rows of a JSON-lines file (an llm_traces.jsonl, a `poolbench play` responses.jsonl), each one a
    row the replay backend can read: a line that is not JSON, not an object or lacks a field is a ValueError
    naming the file, the line and `fix`."""
    from poolbench_data.players.traces import load_traces

    return load_traces(Path(path), fix, check=row_problem)


def coverage_problem(rows: Sequence[dict], scenario_ids: Sequence[str], player: str, samples: int) -> str | None:
    """Why the rows of `player` cannot answer `samples` responses for each board (None when they can)."""
    by_id: dict[str, set[int]] = {}
    for r in rows:
        if r["player"] == player:
            by_id.setdefault(r["scenario_id"], set()).add(r["sample"])
    missing = [s for s in scenario_ids if s not in by_id]
    if missing:
        return (f"holds answers of {player!r} for {len(scenario_ids) - len(missing)} of the {len(scenario_ids)} "
                f"boards (none for {missing[0]}); pass the --n and --seed of the boards it answers")
    short = [s for s in scenario_ids if len(by_id[s]) < samples]
    if short:
        fewest = min(len(by_id[s]) for s in scenario_ids)
        return (f"holds {len(by_id[short[0]])} answer(s) of {player!r} for board {short[0]}, fewer than --samples "
                f"{samples}; pass --samples {fewest}")
    return None


def turn_row_problem(r: dict) -> str | None:
    """What a stored game turn (a row of a game run's llm_turns.jsonl) lacks for a replay, or None."""
    for key in ("player", "game"):
        if not isinstance(r.get(key), str):
            return f"{key} is {r.get(key)!r}, not text" if key in r else f"it has no {key!r}"
    for key, low in (("episode", 0), ("sample", 0), ("turn", 1)):
        value = r.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            return f"{key} is {value!r}, not a count from {low}"
    if "raw_response" not in r:
        return "it has no 'raw_response'"
    if not isinstance(r["raw_response"], (str, type(None))):
        return f"raw_response is a {type(r['raw_response']).__name__}, not text"
    return None


def game_answers(path, game: str, player: str | None, fix: str) -> tuple[dict, str, list[dict]]:
    """({(episode, sample, turn): answer or None}, the player, the rows) of a game run's llm_turns.jsonl: every row
    readable and of `game`, one player (`player` where the file holds several). A row twice for one turn is an
    error: which answer to replay would be a guess."""
    from poolbench_data.players.traces import load_traces

    rows = load_traces(Path(path), fix, check=turn_row_problem)
    games = sorted({r["game"] for r in rows})
    if games and games != [game]:
        raise ValueError(f"--responses {path} holds turns of --game {', '.join(games)}, not {game}; pass the --game "
                         "of the run that wrote it")
    players = sorted({r["player"] for r in rows})
    picked = player if player in players else (players[0] if len(players) == 1 else None)
    if picked is None:
        raise ValueError(f"--responses {path} holds turns of {players or 'no player'}; pick one with --name")
    answers: dict = {}
    for r in rows:
        if r["player"] != picked:
            continue
        key = (r["episode"], r["sample"], r["turn"])
        if key in answers:
            raise ValueError(f"--responses {path} holds two answers of {picked!r} for episode {key[0]} sample "
                             f"{key[1]} turn {key[2]}; keep one run's turns in the file")
        answers[key] = r["raw_response"]
    return answers, picked, [r for r in rows if r["player"] == picked]
