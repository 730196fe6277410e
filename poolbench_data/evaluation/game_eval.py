"""`evaluate(EvalConfig(game=...))`: a language model plays a game (DeepPHY's nine-ball task, or PoolBench
run-outs) from the same starts as the game's baselines; one report (docs/games.md#evaluating-a-model-in-a-game).

The baselines play first (games.play.run_episodes, a process pool), then the model (llm.game_player: every
unfinished episode's turn in one batched request). Every episode is written to OUT/episodes.jsonl as it ends and
every turn of the model's to OUT/llm_turns.jsonl as it is played, so a run stopped by SIGTERM keeps all it
finished, and the same command resumes it: OUT/run.json holds the settings, the episodes on disk are kept, and
only the others are played (a model's episode that a stop or a failed request cut short is played again from its
start). The report is DeepPHY's Table 16 layout with its published MOCK row (nine-ball) or the run-out table,
then exact paired tests of the model against each baseline on the same starts and samples.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from poolbench_data.core.errors import UserError
from poolbench_data.evaluation import checks

GAME_ONLY = ("attempts", "history", "action", "tool_lines")  # read only with --game
# Single-shot settings a game does not read: given with --game, the run would silently ignore them.
SHOT_ONLY = ("few_shot", "rounds", "dataset_dir", "split", "output_path", "log_samples", "eval_results",
             "eval_results_dataset", "overwrite", "limit", "categories", "boards")


def _defaults(config) -> dict:
    return {f.name: f.default for f in dataclasses.fields(config)}


def check_shot_flags(config) -> None:
    """--game shot (the paper's protocol): the game-only flags left at their defaults."""
    default = _defaults(config)
    for flag in GAME_ONLY:
        if getattr(config, flag) != default[flag]:
            raise UserError(f"--{flag} is read only with --game (nineball, nineball-seeded, runout); add --game, "
                            f"or leave --{flag} out")


def check_game(config) -> tuple[str, list[str]]:
    """The game's own flags, and the single-shot flags a game does not read; returns (the action format, the
    baselines). One UserError naming the flag, before any work."""
    from poolbench_data.games.players import DEFAULT_GAME_PLAYERS, check_game_players
    from poolbench_data.games.records import GAMES
    from poolbench_data.llm.observation import ACTIONS, HISTORIES, default_action
    from poolbench_data.players import EVAL_BASELINES

    if config.game not in GAMES:
        raise UserError(f"--game {config.game!r} is not a game; choose from shot, {', '.join(GAMES)}")
    checks.check_at_least("--attempts", config.attempts, 1)
    if config.history not in HISTORIES:
        raise UserError(f"--history {config.history!r}: choose from {', '.join(HISTORIES)}")
    if config.action is not None and config.action not in ACTIONS:
        raise UserError(f"--action {config.action!r}: choose from {', '.join(ACTIONS)}")
    if config.game == "runout" and config.action == "discrete":
        raise UserError("--action discrete is DeepPHY's nine-ball answer line; --game runout answers with the "
                        "protocol's JSON action (optional spin a, b): leave --action out")
    action = config.action or default_action(config.game)
    default = _defaults(config)
    for flag in SHOT_ONLY:
        if getattr(config, flag) != default[flag]:
            raise UserError(f"--{flag} is a setting of the single-shot protocol, not read with --game "
                            f"{config.game}; leave --{flag} out")
    if config.tools and config.game != "runout":
        raise UserError("--tools (the ghost_ball aim tool) applies to --game runout: a nine-ball shot is always "
                        "aimed at the lowest ball; leave --tools out")
    if config.tool_lines and not config.tools:
        raise UserError("--tool_lines is read only with --tools; add --tools, or leave --tool_lines out")
    if config.structured and action == "discrete":
        raise UserError("--structured constrains a JSON answer, and DeepPHY's line is none: pass --action continuous "
                        "with it, or leave --structured out")
    if config.structured and config.tools:
        raise UserError("--structured and --tools are separate conditions: pass one of them")
    given = config.baselines
    names = DEFAULT_GAME_PLAYERS[config.game] if given == ",".join(EVAL_BASELINES) else given.split(",")
    return action, check_game_players(config.game, [n for n in names if n] if given else [], "--baselines")


@dataclass(frozen=True)
class GameEvalResult:
    """What a game evaluation measured and where it wrote it (`out`: report.txt, results.json, episodes.jsonl,
    llm_turns.jsonl, engine.log)."""

    config: object  # the EvalConfig, with n, seed and action filled in
    name: str  # the model's player name
    report: str
    summary: dict  # the game table's numbers, per player (game_report)
    paired: tuple  # the model against each baseline (report.games.paired_tests)
    episode_rows: tuple  # episodes.jsonl's rows, every player's
    turn_rows: tuple  # llm_turns.jsonl's rows
    results: dict  # results.json
    out: Path

    @property
    def incomplete(self) -> bool:
        """More of the model's episodes stopped on a failed request than max_failed_share allows."""
        return self.results["request_failures"]["incomplete"]


def evaluate_game(config) -> GameEvalResult:
    """Check the config (before any work), play the baselines and the model from the same starts, write the report
    folder."""
    from poolbench_data.boards.generate import DEFAULT_N, DEFAULT_SEED
    from poolbench_data.core.errors import check_output_dir
    from poolbench_data.core.shutdown import terminate_as_exit
    from poolbench_data.evaluation.game_resume import resume
    from poolbench_data.evaluation.logs import engine_logs
    from poolbench_data.evaluation.outputs import command_line
    from poolbench_data.games.play import play_tasks
    from poolbench_data.games.players import GAME_PLAYERS
    from poolbench_data.games.step import start_game
    from poolbench_data.llm.game_player import GameSettings, episode_row, play_games, seats_of
    from poolbench_data.llm.model import model_name
    from poolbench_data.llm.registry import backend_spec
    from poolbench_data.players.pool import default_workers
    from poolbench_data.report.games import facts, facts_of_row
    from poolbench_data.report.provenance import provenance

    action, baselines = check_game(config)
    config = dataclasses.replace(config, action=action, n=DEFAULT_N if config.n is None else config.n,
                                 seed=DEFAULT_SEED if config.seed is None else config.seed)
    model = checks.check_config(config)
    name = config.name or model_name(model)
    checks.check_name(config, name, baselines, GAME_PLAYERS[config.game], f" in --game {config.game}")
    starts = [start_game(config.game, k, config.seed, config.attempts) for k in range(config.n)]
    # A backend that generates nothing replays stored answers: a game run's, looked up by episode, sample and turn.
    replay = None if backend_spec(config.backend).generates else _replay(config, starts)
    settings = GameSettings(model=model, backend=config.backend, game=config.game, action=action,
                            history=config.history, samples=config.samples, temperature=config.temperature,
                            max_tokens=config.max_tokens, seed=config.gen_seed, structured=config.structured,
                            vision=config.vision, tools=config.tools, max_tool_calls=config.max_tool_calls,
                            tool_lines=config.tool_lines)
    _check_context(config, model, starts, settings)
    out = check_output_dir(config.out or f"results/eval_{config.game}", "--out")
    stamp = {"game": config.game, "n": config.n, "seed": config.seed, "attempts": config.attempts,
             "baselines": baselines, "name": name, "responses": config.responses if replay else None,
             "settings": settings.to_dict()}
    kept = resume(out, stamp, name)
    t0 = time.perf_counter()
    rows = [{**facts_of_row(r), "episode": r["episode"], "sample": r["sample"], "key": (r["episode"], r["sample"])}
            for r in kept.episodes]  # resume keeps finished episodes only
    episode_rows, turn_rows, usage = list(kept.episodes), list(kept.turns), {}
    with open(out / "episodes.jsonl", "a") as episodes_file, open(out / "llm_turns.jsonl", "a") as turns_file:
        def keep(row: dict, file) -> None:
            file.write(json.dumps(row, sort_keys=True, default=str) + "\n")
            file.flush()

        with terminate_as_exit():
            done = {(r["player"], r["episode"], r["sample"]) for r in kept.episodes if r["player_kind"] == "baseline"}
            tasks = [(config.game, p, k, config.seed, config.attempts, j) for k in range(config.n)
                     for j in range(config.samples) for p in baselines if (p, k, j) not in done]
            for (_, _, k, _, _, j), ep in zip(tasks, play_tasks(tasks, workers=default_workers(),
                                                                progress=not config.quiet)):
                rows.append({**facts(ep), "episode": k, "sample": j, "key": (k, j)})
                row = {**ep.to_row(), "player_kind": "baseline", "episode": k, "sample": j, "digest": ep.digest(),
                       "balls": ep.balls}
                episode_rows.append(row)
                keep(row, episodes_file)
        t1 = time.perf_counter()
        finished = {(r["episode"], r["sample"]) for r in kept.episodes if r["player_kind"] == "llm"}
        seats = [s for s in seats_of(starts, settings) if (s.episode, s.sample) not in finished]
        image_of = _image_of(config.game) if config.vision else None

        def on_turn(row: dict) -> None:
            turn_rows.append(row)
            keep(row, turns_file)

        with engine_logs(out / "engine.log", verbose=config.verbose) as progress, terminate_as_exit():
            from tqdm.auto import tqdm

            bar = tqdm(total=len(seats), desc=f"{name} episodes", unit="episode", file=progress,
                       disable=config.quiet)

            def on_done(seat) -> None:
                row = episode_row(seat, name, model)
                episode_rows.append(row)
                keep(row, episodes_file)
                if seat.failure is None:
                    rows.append({**facts(seat.to_episode(name)), "episode": seat.episode, "sample": seat.sample,
                                 "key": (seat.episode, seat.sample)})
                bar.update()

            # a resumed run whose model episodes all finished starts no engine
            backend = None if replay is not None or not seats else backend_spec(config.backend).make(config, model, [])
            try:
                source = _RunDeadline(backend, config.timeout) if backend is not None else None
                play_games(seats, source, settings, player=name, replay=replay[0] if replay else None,
                           image_of=image_of, on_turn=on_turn, on_done=on_done, usage=usage)
                backend_settings = (backend.settings() if backend is not None else
                                    {"backend": config.backend, "responses": config.responses,
                                     "player": replay[1] if replay else None})
            finally:
                bar.close()
                if backend is not None:
                    backend.close()
    gen_s = time.perf_counter() - t1
    if kept.episodes:
        print(f"resumed {out}: {len(kept.episodes)} episodes kept from the stopped run, "
              f"{len(episode_rows) - len(kept.episodes)} played now")
    failed = _request_failures(config, name, seats, len(kept.model_done))
    report, summary, paired = _report(config, name, baselines, rows, turn_rows, failed)
    print(report)
    results = {"game": config.game, "command": command_line(config), "report": report,
               "settings": settings.to_dict(), "backend": backend_settings, "usage": usage,
               "system_prompt": seats[0].conv[0]["content"] if seats else None, "summary": summary,
               "paired": list(paired), "request_failures": failed, "incomplete": failed["incomplete"],
               "episodes": [{k: v for k, v in r.items() if k != "key"} for r in rows],
               "timing_s": {"baselines": t1 - t0, "generation_and_physics": gen_s},
               "provenance": provenance(game=config.game, n=config.n, seed=config.seed, attempts=config.attempts,
                                        baselines=baselines, evaluation=settings.to_dict())}
    (out / "results.json").write_text(json.dumps(results, indent=2, sort_keys=True, default=str))
    (out / "report.txt").write_text(report + "\n")
    print(f"report, episodes and the model's turns in {out}/ (generation and physics {gen_s:.0f} s)")
    return GameEvalResult(config, name, report, summary, tuple(paired), tuple(episode_rows), tuple(turn_rows),
                          results, out)


def _replay(config, starts) -> tuple[dict, str]:
    """({(episode, sample, turn): answer}, the stored player) of --responses, checked to hold the first turn of
    every episode asked for, from the same starts."""
    from poolbench_data.llm.replay import game_answers

    fix = "give --responses a game run's llm_turns.jsonl (poolbench eval --game ...), unedited"
    try:
        answers, player, rows = game_answers(config.responses, config.game, config.name, fix)
    except ValueError as e:  # a file that is not a game run's turns, or another game's
        raise UserError(str(e)) from None
    first = {(r["episode"], r["sample"]): r for r in rows if r["turn"] == 1}
    for k, start in enumerate(starts):
        for j in range(config.samples):
            row = first.get((k, j))
            if row is None:
                raise UserError(f"--responses {config.responses} holds no answer of {player!r} for episode {k} "
                                f"sample {j}; pass the --n, --samples and --seed of the run that wrote it")
            if row.get("start") != start.start:
                raise UserError(f"--responses {config.responses}: episode {k} was played from {row.get('start')!r}, "
                                f"not {start.start!r}; pass the --seed of the run that wrote it")
    return answers, player


def _image_of(game: str):
    """The picture of a game's table: the benchmark's for run-outs, pooltool's default for nine-ball."""
    from poolbench_data.core.table import geometry as benchmark_geometry
    from poolbench_data.llm.observation import nineball_geometry
    from poolbench_data.report.render import table_png

    geometry = benchmark_geometry() if game == "runout" else nineball_geometry()

    def image(state) -> bytes:
        return table_png(state.balls, state.start, geometry)

    return image


class _RunDeadline:
    """A backend whose requests, over every turn together, may take `seconds` (--timeout): before each turn a
    server backend's deadline is set to what is left of it."""

    def __init__(self, backend, seconds: float):
        self.backend, self.end = backend, time.monotonic() + seconds

    def generate(self, conversations, **kwargs):
        if getattr(self.backend, "deadline_s", None) is not None:
            self.backend.deadline_s = max(1e-3, self.end - time.monotonic())
        return self.backend.generate(conversations, **kwargs)


def _check_context(config, model: str, starts, settings) -> None:
    """The first turn's longest prompt, plus what later turns add (the last shot's outcome; with --history full
    every earlier turn's observation and answer; with --tools the calls), plus --max_tokens, must fit in
    --max_model_len: the engine would otherwise refuse the turn, a failed request that stops the episode."""
    from poolbench_data.core.records import group_of
    from poolbench_data.llm.game_player import seats_of
    from poolbench_data.llm.observation import longest_outcome, observation
    from poolbench_data.llm.player import prompt_tokens
    from poolbench_data.llm.tools import result_tokens

    tokenizer = checks.context_tokenizer(config, model)
    if tokenizer is None:
        return
    one = dataclasses.replace(settings, samples=1)
    convs = [seat.conv + [{"role": "user", "content": observation(seat.state)}] for seat in seats_of(starts, one)]
    first = max(prompt_tokens(tokenizer, convs))
    table = max(len(tokenizer.encode(c[-1]["content"], add_special_tokens=False)) for c in convs)
    outcome = len(tokenizer.encode(longest_outcome(config.game, config.attempts), add_special_tokens=False))
    calls = config.max_tool_calls * (config.max_tokens + result_tokens(config.tool_lines)) if config.tools else 0
    turns = config.attempts
    if config.game == "runout":  # a visit ends once its own balls and the 8 are down: a shot a ball at least
        turns = min(turns, max(sum(group_of(b) == s.group for b in s.object_ids) + 1 for s in starts))
    later = outcome + calls
    if config.history == "full":
        later += (turns - 1) * (table + outcome + config.max_tokens + calls)
    need = first + later + config.max_tokens
    if need <= config.max_model_len:
        return
    if config.history == "full" and turns > 1:
        raise UserError(f"--history full keeps every turn: up to {need} tokens with --attempts {config.attempts} and "
                        f"--max_tokens {config.max_tokens} (the first prompt is {first}), more than --max_model_len "
                        f"{config.max_model_len}; pass --history current, lower --attempts, or raise --max_model_len "
                        f"to {need}")
    raise UserError(f"a turn needs up to {need} tokens (the first prompt is {first}, the last shot's outcome adds up "
                    f"to {outcome}{', the tool calls ' + str(calls) if calls else ''}, and --max_tokens "
                    f"{config.max_tokens}), more than --max_model_len {config.max_model_len}; raise --max_model_len "
                    f"to {need} or lower --max_tokens")


def _request_failures(config, name: str, seats, kept: int = 0) -> dict:
    """The model's episodes a failed request stopped, by failure kind, and whether they are more than
    --max_failed_share allows (the run is incomplete): the single-shot evaluator's counts, by episode. `kept`: the
    model's finished episodes a resumed run took from disk."""
    from poolbench_data.llm.openai_backend import redact

    lost = [s.failure for s in seats if s.failure is not None]
    total = len(seats) + kept
    by_kind: dict[str, int] = {}
    for f in lost:
        by_kind[f.kind] = by_kind.get(f.kind, 0) + 1
    by_kind = dict(sorted(by_kind.items()))
    share = len(lost) / total if total else 0.0
    incomplete = share > config.max_failed_share
    kinds = ", ".join(f"{k}: {v}" for k, v in by_kind.items())
    text = (f"{len(lost)} of {total} episodes of {name} stopped on a request that got no response ({kinds}), "
            f"{'more than' if incomplete else 'within what'} --max_failed_share {config.max_failed_share:g} allows")
    example = " ".join(redact(lost[0].error).split())[:300] if lost else ""
    return {"episodes": total, "failed": len(lost), "share": share, "by_kind": by_kind,
            "max_failed_share": config.max_failed_share, "incomplete": incomplete, "text": text, "example": example}


def _report(config, name: str, baselines: list[str], rows: list[dict], turn_rows: list[dict], failed: dict):
    """(the printed report, the game table's summary, the paired tests)."""
    from collections import Counter

    from poolbench_data.report.games import format_paired, game_report, paired_tests

    players = [*baselines, name]
    n = config.n if config.game == "runout" else config.n * config.samples
    summary, table = game_report(config.game, rows, players, n, config.seed, config.attempts)
    lines = [f"INCOMPLETE: {failed['text']}", ""] if failed["incomplete"] else []
    lines.append(table)
    if config.samples > 1:
        lines.append(f"{config.samples} episodes a player from each of the {config.n} starts (sample j: player seed j; "
                     f"the model's requests seeded by episode, sample and turn).")
    if failed["failed"]:
        lines.append(f"{name}: {failed['text']}; those episodes are left out of its rates.")
    statuses = Counter(r["parse_status"] for r in turn_rows)
    lines.append(f"{name} answers: {len(turn_rows)} turns, " + ", ".join(f"{k} {v}" for k, v in
                                                                         sorted(statuses.items())))
    paired = [paired_tests(rows, name, b) for b in baselines]
    lines += ["", format_paired(paired, "run-out" if config.game == "runout" else "9 potted")]
    lines.append(f"Answers: {config.action} ({'DeepPHY line' if config.action == 'discrete' else 'JSON'}), history "
                 f"{config.history}{', vision' if config.vision else ''}{', tools' if config.tools else ''}.")
    return "\n".join(lines), summary, paired
