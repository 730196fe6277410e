"""`game_baselines(config)`: the baselines of a game played alone (`poolbench baseline --game ...`): DeepPHY's
Table 16 layout for nine-ball, with its published MOCK row beside ours; balls per visit, run-out rate and fouls
for run-outs; and the first player listed against each of the others on the same starts (exact paired tests)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from poolbench_data.evaluation.baselines import BaselineConfig
from poolbench_data.players import DEFAULT_BASELINES


@dataclass(frozen=True)
class GameBaselineResult:
    """What the players scored in the game (`path`: the JSON results, None with out='')."""

    config: BaselineConfig
    players: tuple[str, ...]
    report: str  # the printed table
    summary: dict  # per player: the table's numbers (rates with their Wilson intervals)
    results: dict  # the JSON written to `path`: summary, paired, each episode's digest and end, elapsed_s, provenance
    path: Path | None


def _players(config: BaselineConfig) -> list[str]:
    from poolbench_data.games.players import DEFAULT_GAME_PLAYERS, check_game_players

    given = config.players
    names = DEFAULT_GAME_PLAYERS[config.game] if given == ",".join(DEFAULT_BASELINES) else given.split(",")
    return check_game_players(config.game, names, "--players")


def game_baselines(config: BaselineConfig) -> GameBaselineResult:
    """Check the config (before any work), play each player's n episodes, print the game's table, write the
    JSON results."""
    from poolbench_data.core.errors import UserError, check_at_least, check_output_file, check_seed
    from poolbench_data.games.play import run_episodes
    from poolbench_data.games.records import GAMES
    from poolbench_data.players.pool import check_executor, resolve_workers
    from poolbench_data.report.games import facts, format_paired, game_report, paired_tests
    from poolbench_data.report.provenance import provenance

    if config.game not in GAMES:
        raise UserError(f"--game {config.game!r} is not a game; choose from shot, {', '.join(GAMES)}")
    check_at_least("--n", config.n, 1)
    check_at_least("--attempts", config.attempts, 1)
    check_seed("--seed", config.seed)
    names = _players(config)
    workers = resolve_workers(config.workers)
    check_executor(config.executor, config.ray_address or None)
    out_path = config.out
    if out_path == BaselineConfig.out:  # the single-shot results keep their file
        out_path = f"results/baselines_{config.game}.json"
    path = check_output_file(out_path) if out_path else None
    t0 = time.perf_counter()
    rows, episodes = [], []
    for k, episode in enumerate(run_episodes(config.game, names, config.n, config.seed, config.attempts,
                                             workers=workers, executor=config.executor,
                                             ray_address=config.ray_address or None, progress=not config.quiet)):
        rows.append({**facts(episode), "key": k // len(names)})
        episodes.append({"player": episode.player, "episode": k // len(names), "start": episode.states[0].start,
                         "digest": episode.digest(), "end": episode.final.end, "attempts": episode.attempts,
                         "balls": episode.balls})
    elapsed = time.perf_counter() - t0
    summary, report = game_report(config.game, rows, names, config.n, config.seed, config.attempts)
    # the first player listed against each of the others, on the same starts
    paired = [paired_tests(rows, names[0], b) for b in names[1:]]
    if paired:
        report += "\n\n" + format_paired(paired, "run-out" if config.game == "runout" else "9 potted")
    report += f"\n{len(rows)} episodes in {elapsed:.1f} s with {workers} worker(s) ({config.executor})"
    print(report)
    results = {"game": config.game, "summary": summary, "paired": paired, "episodes": episodes,
               "elapsed_s": elapsed,
               "provenance": provenance(game=config.game, n=config.n, seed=config.seed, players=names,
                                        attempts=config.attempts, workers=workers)}
    if path is not None:
        path.write_text(json.dumps(results, indent=2, sort_keys=True, default=str))
        print(f"results saved to {path}")
    return GameBaselineResult(config, tuple(names), report, summary, results, path)
