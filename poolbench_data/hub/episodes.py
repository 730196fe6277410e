"""The `episodes` config: one row an episode of a game, games.records.Episode.to_row() with each turn's prompt and
answer (empty for a baseline) and the episode's identity: the baselines' episodes a build plays (EpisodePlan,
write_episodes) and a model's episodes.jsonl from `poolbench eval --game` (model_episode_rows). `episode_record`
turns a row back into the Episode.to_row() it was made from, so a row's digest is the episode's.

The simulation counts (`sims`) are left out, as Episode.digest leaves them out: a worker that met a layout before
reuses its simulations, so they depend on which worker played what, and the rows would not be the same bytes on
any number of workers."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from poolbench_data.boards.generate import scenario_seed
from poolbench_data.boards.splits import scenario_id
from poolbench_data.core.records import EIGHT, group_of
from poolbench_data.games.players import GAME_PLAYERS
from poolbench_data.players import check_players
from poolbench_data.games.records import GAMES
from poolbench_data.hub.folder import ShardWriter

RECORD_KEYS = ("player", "start", "hows", "turns", "success", "attempts", "end")  # Episode.to_row()'s, less sims
TURN_EXTRAS = ("prompt", "answer")  # a turn's columns beside Outcome.to_row() and "after"
ACTION_KEYS = {"strike": ("kind", "V0", "a", "b", "name"),
               "shot": ("kind", "phi", "V0", "a", "b", "theta", "target_ball", "target_pocket")}


@dataclass(frozen=True)
class EpisodePlan:
    """The baselines' episodes a build plays: for each game its players, episodes 0 .. n-1 of each split's base
    seed (at most one a board of the split), each capped at `attempts`."""

    games: tuple[str, ...]
    players: tuple[tuple[str, ...], ...]  # one tuple a game, in the order of `games`
    n: int
    attempts: int

    def count(self, boards: int) -> int:
        """Episodes of each game and player in a split of `boards` boards."""
        return min(self.n, boards)

    def keys(self, lo: int, hi: int) -> list[tuple[str, str, int]]:
        """(game, player, k) of episodes lo .. hi-1 of a split, in the order a build writes them: episode-major,
        so K shards' rows, one after the other, are the one-piece build's."""
        return [(g, p, k) for k in range(lo, hi) for g, names in zip(self.games, self.players) for p in names]

    def settings(self) -> dict:
        return {"games": list(self.games), "players": dict(zip(self.games, map(list, self.players))), "n": self.n,
                "attempts": self.attempts}

    @classmethod
    def from_settings(cls, d: dict) -> EpisodePlan:
        return cls(tuple(d["games"]), tuple(tuple(d["players"][g]) for g in d["games"]), d["n"], d["attempts"])


def plan_episodes(games: str, players: str, n: int, attempts: int) -> EpisodePlan | None:
    """The builder's --episodes_* flags, checked before any work; None where they ask for no episodes. A player
    is `name` (every listed game that has it) or `game:name`."""
    if n < 0:
        raise ValueError(f"--episodes_n {n} is negative; give the episodes of each game and player a split, "
                         f"0 for none")
    if attempts < 1:
        raise ValueError(f"--episodes_attempts {attempts} must be >= 1 (the cap of attempts an episode)")
    names = [g.strip() for g in games.split(",") if g.strip()]
    if not names or n == 0:
        return None
    for g in names:
        if g not in GAMES:
            raise ValueError(f"--episodes_games {g!r} is not a game; choose from {', '.join(GAMES)}")
    if len(set(names)) < len(names):
        raise ValueError(f"--episodes_games {games!r} names a game twice; name each once")
    chosen: dict[str, list[str]] = {g: [] for g in names}
    for entry in (p.strip() for p in players.split(",") if p.strip()):
        game, _, name = entry.rpartition(":")
        if game and game not in chosen:
            raise ValueError(f"--episodes_players {entry!r}: {game!r} is not one of --episodes_games "
                             f"({', '.join(names)})")
        to = [game] if game else [g for g in names if name in GAME_PLAYERS[g]]
        if not to:
            known = sorted({p for g in names for p in GAME_PLAYERS[g]})
            raise ValueError(f"--episodes_players {name!r} plays none of {', '.join(names)}; choose from "
                             f"{', '.join(known)}, or write game:player")
        for g in to:
            chosen[g].append(name)
    for g in (g for g in names if chosen[g]):
        check_players(chosen[g], "--episodes_players", GAME_PLAYERS[g], f" for {g}")
    for g in (g for g in names if not chosen[g]):
        raise ValueError(f"--episodes_players names no player for {g}; add one (e.g. {g}:"
                         f"{next(iter(GAME_PLAYERS[g]))}), or leave {g} out of --episodes_games")
    return EpisodePlan(tuple(names), tuple(tuple(chosen[g]) for g in names), n, attempts)


def episode_id(game: str, base_seed: int, k: int) -> str:
    """Episode k's start of `game` from `base_seed`, shared by every player that plays it."""
    return f"{game}-{scenario_id(base_seed, k)}"


def episode_row(record: dict, base_seed: int, index: int, *, player_kind: str = "baseline", model: str = "",
                sample: int = 0, prompts: Sequence[list] | None = None, answers: Sequence[str] | None = None) -> dict:
    """The dataset row of an episode's record (Episode.to_row()); `prompts` and `answers` one a turn (a model's
    messages and raw text), empty for a baseline."""
    game, turns = record["start"]["game"], record["turns"]
    prompts = [[] for _ in turns] if prompts is None else prompts
    answers = ["" for _ in turns] if answers is None else answers
    if not len(prompts) == len(answers) == len(turns):
        raise ValueError(f"episode {index} of {game}: {len(turns)} turns, {len(prompts)} prompts and "
                         f"{len(answers)} answers; write one of each a turn")
    return {"id": episode_id(game, base_seed, index), "game": game, "base_seed": base_seed, "index": index,
            "player_kind": player_kind, "model": model, "sample": sample,
            **{k: record[k] for k in RECORD_KEYS},
            "turns": [{**t, "prompt": p, "answer": a} for t, p, a in zip(turns, prompts, answers)],
            "balls": clean_balls(record)}


def episode_record(row: dict) -> dict:
    """The Episode.to_row() a dataset row was made from, less `sims` (its digest is Episode.digest())."""
    turns = []
    for t in row["turns"]:
        a = t["action"]
        action = None if a is None else {k: a[k] for k in ACTION_KEYS[a["kind"]]}
        turns.append({**{k: v for k, v in t.items() if k not in TURN_EXTRAS}, "action": action})
    return {**{k: row[k] for k in RECORD_KEYS}, "turns": turns}


def record_digest(record: dict) -> str:
    """Episode.digest() of an episode's record."""
    text = json.dumps({k: v for k, v in record.items() if k != "sims"}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def clean_balls(record: dict) -> int:
    """Episode.balls of a record: balls potted on clean attempts (a run-out's own balls, and the 8 on a win)."""
    group = record["start"]["group"]
    if record["start"]["game"] != "runout":
        return sum(len(t["potted"]) for t in record["turns"] if t["clean"])
    return sum(1 for t in record["turns"] if t["clean"] for b in t["potted"]
               if group_of(b) == group or (b == EIGHT and t["end"] == "won"))


def write_episodes(root: Path, plan: EpisodePlan, ranges: Sequence[tuple[str, int, int, int]], *, workers: int,
                   executor: str = "local", ray_address: str | None = None, progress: bool = True,
                   rows_per_shard: int | None = None) -> dict[str, int]:
    """The `episodes` config of the splits in `ranges` ((split, base seed, lo, hi): episodes lo .. hi-1), played
    in one pool; rows in split, episode, game, player order. {split: rows}."""
    from poolbench_data.games.play import play_tasks

    keyed = [(split, seed, key) for split, seed, lo, hi in ranges for key in plan.keys(lo, hi)]
    tasks = [(g, p, k, seed, plan.attempts) for _, seed, (g, p, k) in keyed]
    writers = {split: ShardWriter(root, "episodes", split, rows_per_shard) for split, *_ in ranges}
    episodes = play_tasks(tasks, workers=workers, executor=executor, ray_address=ray_address, progress=progress)
    for (split, seed, (_, _, k)), episode in zip(keyed, episodes):
        writers[split].add(episode_row(episode.to_row(), seed, k))
    return {split: w.close() for split, w in writers.items()}


def model_episode_rows(records: Iterable[dict], seeds: dict[str, int], field: str = "--episodes") -> dict:
    """{split: rows} of a model's episodes (the evaluator's episodes.jsonl: Episode.to_row() with `model`,
    `episode` (k), `sample`, `answers` and `prompts` one a turn): each in the split whose base seed (`seeds`:
    {split: base seed}) drew its start; an episode whose request failed is no answer of the model's and is left
    out."""
    out: dict[str, list[dict]] = {split: [] for split in seeds}
    for r in records:
        if r.get("request_failed"):
            continue
        k = r["episode"]
        split = next((s for s, seed in seeds.items() if scenario_seed(seed, k) == r["start"]["seed"]), None)
        if split is None:
            raise ValueError(f"{field}: episode {k} of {r['start']['game']} ({r['start']['start']}) was drawn from "
                             f"none of the folder's base seeds {seeds}; evaluate on its test or train seed")
        out[split].append(episode_row(r, seeds[split], k, player_kind=r.get("player_kind", "llm"),
                                      model=r.get("model", ""), sample=r.get("sample", 0),
                                      prompts=r.get("prompts"), answers=r.get("answers")))
    return out
