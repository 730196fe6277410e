"""Games as multi-turn verifiers environments: what `game` adds to PoolBench's verifiers taskset and harness
(poolbench_data.cli.verifiers_env, which exports the environment), as `poolbench eval --game G` plays a game
(docs/games.md):

    vf-eval poolbench --env.taskset.game runout --env.taskset.n 20 -m served-name --client.base-url ... --no-push
    env = load_environment(game="nineball-seeded", reward="success", n=200, train=True)

A rollout is one episode: episode k of base seed `seed` (`n` episodes; `train` refuses the evaluation seed 0, and
`nineball`, whose one rack is the evaluation's). A turn is one model answer, played as the evaluator plays it
(rl.game_env.GameSession: the answer read as the game's action, one step of the game, an answer that cannot be
played a wasted attempt); the next user message is the new observation, until the episode ends or `attempts`
are spent. `history` says what each turn sends: `full`, the conversation so far; `current`, the system prompt
and the table now (the evaluator's default). `action` picks nine-ball's answer (discrete: DeepPHY's line;
continuous: a JSON of speed and spin); a run-out answers with the protocol's JSON action and optional spin.
`reward` is GameSession's, summed over the episode's turns: `balls` (balls potted on clean attempts, the default),
`success` (1 for a won episode) or `physics` (each attempt's level: 0 not fired, 1 foul, 2 legal contact,
3 clean pot). Each turn's verdict is kept in the trace (`info.game.turns`); the metrics are the episode's balls,
success, attempts, fouls (attempts with a foul), unplayable (answers that could not be played), and for a run-out
run_out (the visit won) and eight_early.

The harness plays an episode with the loop of the tools track, GameSession in place of the tool (`play`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator

from poolbench_data.games.records import GAMES
from poolbench_data.llm.observation import HISTORIES
from poolbench_data.rl.game_env import REWARDS as GAME_REWARDS

SHOT = "shot"  # the single shot: the paper's protocol
GAME_METRICS = ("balls", "success", "attempts", "fouls", "unplayable")
RUNOUT_METRICS = ("run_out", "eight_early")


def check_game_arguments(config, shot_rewards: tuple[str, ...], shot_only: Callable[[str], None]) -> None:
    """A game's arguments (config.game is not SHOT): one ValueError naming the argument. `shot_rewards` are the
    single shot's rewards; `shot_only(what)` refuses the single shot's settings given with a game, `what` saying
    why with {} for the setting's name."""
    from poolbench_data.rl.game_env import check_game_args, check_starts

    if config.game not in GAMES:
        raise ValueError(f"game {config.game!r} is unknown; choose {SHOT} or a game: {', '.join(GAMES)}")
    if config.reward in shot_rewards and config.reward not in GAME_REWARDS:
        raise ValueError(f"reward {config.reward!r} scores a single shot; a game takes {', '.join(GAME_REWARDS)}")
    shot_only(f"a setting of the single shot (game={SHOT!r}), not read with game={config.game!r}; leave {{}} out")
    check_game_args(config.game, config.action, config.attempts, config.reward)
    if config.history not in HISTORIES:
        raise ValueError(f"history {config.history!r} is unknown; choose {' or '.join(HISTORIES)}")
    check_starts(config.game, config.n, config.seed, config.train)


def episodes(config) -> Iterator[dict]:
    """Each episode's start as the evaluator deals it, its first messages the evaluator's: the fields of the
    taskset's task data (PoolBenchData), one episode at a time, made as read."""
    from poolbench_data.rl.game_env import GameSession, check_starts

    c = config
    n, seed = check_starts(c.game, c.n, c.seed, c.train)
    session = GameSession(c.game, action=c.action, attempts=c.attempts, reward=c.reward)
    for k in range(n):
        session.reset(k, seed)
        system, user = session.messages()
        yield dict(id=f"{c.game}:{seed}:{k}", name=f"{c.game} episode {k} ({session.state.start})",
                   prompt=user["content"], system_prompt=system["content"], reward=c.reward, game=c.game,
                   action=session.action, attempts=c.attempts, history=c.history, episode=k, seed=seed)


async def play(ask: Callable[[list[dict]], Awaitable[str]], conv: list[dict], data, trace) -> str:
    """One episode: each answer (`ask`, the model's reply to a conversation) played by GameSession (the evaluator's
    turn), the next observation the next user message, until the episode ends. Each turn's verdict goes into the
    trace as it is played (`info.game`), so a rollout stopped by a failed request keeps the turns it played. The
    last answer."""
    from poolbench_data.rl.game_env import GameSession

    session = GameSession(data.game, action=data.action, attempts=int(data.attempts), reward=data.reward)
    session.reset(int(data.episode), int(data.seed))
    record = {"start": session.state.start, "turns": [], "attempts": 0, "success": False, "end": "", "done": False}
    if trace is not None:
        trace.info["game"] = record
    system, text = conv[0], ""
    while not session.done:
        text = await ask(conv)
        turn = session.step(text)
        record["turns"].append(turn_record(turn, data.game))
        state = turn.state
        record.update(attempts=state.attempts, success=state.success, end=state.end, done=state.done)
        if data.history == "current":
            conv = [system, {"role": "user", "content": turn.observation}]
        else:  # the conversation so far, the model's own answers in it (the evaluator's --history full)
            conv = [*conv, {"role": "assistant", "content": text}, {"role": "user", "content": turn.observation}]
    return text


def turn_record(turn, game: str) -> dict:
    """One turn's verdict as the trace keeps it: the evaluator's turn-row fields without the simulation's events,
    the turn's reward and the balls it adds to the episode's count."""
    from poolbench_data.games.records import outcome_balls

    o = turn.state.last
    return {"attempt": o.attempt, "parse_status": o.parse_status, "fired": o.fired, "potted": list(o.potted),
            "foul_reasons": list(o.foul_reasons), "clean": o.clean, "end": o.end, "reward": turn.reward,
            "balls": outcome_balls(o, turn.state.game, turn.state.group), "message": o.message}


def played(trace) -> dict:
    """The episode the harness played (`info.game`): none, where the rollout stopped before its first turn."""
    return trace.info.get("game") or {"turns": [], "attempts": 0, "success": False, "end": "", "done": False}


def game_metrics(game: str, record: dict) -> dict[str, float]:
    """The episode's metrics: the balls of its clean attempts, success, attempts, attempts with a foul, answers
    that could not be played; a run-out's run_out (won) and eight_early."""
    turns = record["turns"]
    out = {"balls": float(sum(t["balls"] for t in turns)), "success": float(record["success"]),
           "attempts": float(record["attempts"]), "fouls": float(sum(bool(t["foul_reasons"]) for t in turns)),
           "unplayable": float(sum(not t["fired"] for t in turns))}
    if game == "runout":
        out.update(run_out=float(record["success"]), eight_early=float(record["end"] == "eight-early"))
    return out
