"""Play episodes: one player's game from its start to its end, and many of them, in order, in a process pool
or on Ray (players.pool). An episode is a pure function of (game, player, k, base seed, cap, player seed): where
it runs changes no byte of it (Episode.digest)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from poolbench_data.core.shutdown import stop_if_requested
from poolbench_data.games.players import check_game_players, make_player
from poolbench_data.games.records import Episode, GameState
from poolbench_data.games.step import start_game, step
from poolbench_data.players.pool import check_executor, cores, imap, resolve_workers


def play(state: GameState, player, name: str = "") -> Episode:
    """Play `player` (anything with decide(state) -> Move) from `state` to the episode's end."""
    states, sims, hows = [state], [], []
    while not state.done:
        move = player.decide(state)
        state, _ = step(state, move.action, result=move.result)
        states.append(state)
        sims.append(move.sims)
        hows.append(move.how)
    return Episode(name, tuple(states), tuple(sims), tuple(hows))


def play_episode(game: str, player: str, k: int, base_seed: int = 0, max_attempts: int = 15,
                 player_seed: int = 0) -> Episode:
    """Episode k of `game` (its rack or board from `base_seed`) played by the named baseline."""
    return play(start_game(game, k, base_seed, max_attempts), make_player(game, player, player_seed), player)


def _task(args) -> Episode:
    return play_episode(*args)


def run_episodes(game: str, players: Sequence[str], n: int, base_seed: int = 0, max_attempts: int = 15, *,
                 workers: int = 1, executor: str = "local", ray_address: str | None = None,
                 progress: bool = False, samples: int = 1) -> Iterator[Episode]:
    """Episodes 0 .. n-1 of `game` for each player (episode-major: every player's episode k, then k + 1), in
    that order, streamed. `samples`: episodes a player plays from each start, sample j with player seed j
    (k-major, then j, then the player). The game, the players, the cap, --workers and the executor are checked
    when this is called, before any episode is played."""
    names = check_game_players(game, players)
    if max_attempts < 1:
        raise ValueError(f"--attempts must be >= 1 (got {max_attempts})")
    if samples < 1:
        raise ValueError(f"--samples must be >= 1 (got {samples})")
    check_executor(executor, ray_address)
    workers = resolve_workers(workers) if executor == "local" else (workers or cores())
    tasks = [(game, p, k, base_seed, max_attempts, j) for k in range(n) for j in range(samples) for p in names]
    return _run(tasks, workers, executor, ray_address, progress)


def play_tasks(tasks: Sequence[tuple], *, workers: int = 1, executor: str = "local", ray_address: str | None = None,
               progress: bool = False) -> Iterator[Episode]:
    """The episodes of `tasks` (play_episode's arguments, a tuple an episode), in their order, streamed: several
    games and base seeds in one pool, started once (a dataset build's episodes). `workers` as resolved."""
    return _run(list(tasks), workers, executor, ray_address, progress)


def _run(tasks, workers, executor, address, progress) -> Iterator[Episode]:
    from tqdm.auto import tqdm

    bar = tqdm(total=len(tasks), desc="episodes", unit="episode", disable=not progress)
    for episode in imap(_task, iter(tasks), workers, executor, address):
        stop_if_requested()
        yield episode
        bar.update()
    bar.close()
