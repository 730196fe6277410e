"""A person plays a game (`poolbench play --game nineball|nineball-seeded|runout`): DeepPHY's "Human" row for
nine-ball, and run-outs from the benchmark's boards.

Each turn shows what a model reads (llm.observation: the previous shot's outcome with its events, the attempt, the
table as text) and a picture of the game's own table; the rules are the model's system prompt for the game. The
answer is the game's action (DeepPHY's line for nine-ball, the protocol's JSON action with optional spin for a
run-out), read as a model's is, played through `games.step.step` as it is given and appended and flushed to the
answers file. The file is the session: the same command replays its answers through the step (the same start and
actions give the same table) and goes on where it stopped. The report is the game's table (report/games.py) over
the finished episodes, written beside the answers with each finished episode's row (episodes.jsonl).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from poolbench_data.human.answers import AnswersFile, ask_until, check_name

FIX = "delete that line to play its attempt again, or give another --out"
ENDS = {  # why an episode ended, in words
    "nine-potted": "the 9 is down: you win", "won": "the 8 is down after your group: you win",
    "attempts": "no attempts left", "foul": "a foul ends the visit", "eight-early": "the 8 went down early: a loss",
    "miss": "nothing potted ends the visit", "opponent-only": "only opponent balls potted ends the visit",
    "layout": "the balls stopped where the table cannot be played on",
}


def said(outcome) -> str:
    """What an attempt did, in the one line a person is told."""
    if not outcome.fired:
        parts = ["skipped: no shot" if outcome.parse_status == "empty" else f"not fired ({outcome.parse_status})"]
    else:
        parts = [f"potted {', '.join(outcome.potted)}" if outcome.potted else "nothing potted"]
        parts += [f"foul: {','.join(outcome.foul_reasons)}"] if outcome.foul_reasons else []
        parts += ["the cue ball is put back"] if outcome.respotted else []
    if outcome.end:
        parts.append(ENDS.get(outcome.end, f"the episode ends ({outcome.end})"))
    return "; ".join(parts)


def table_geometry(game: str):
    """The table a game is played on: pooltool's default for nine-ball, the benchmark's for a run-out."""
    from poolbench_data.core.table import geometry
    from poolbench_data.llm.observation import nineball_geometry

    return geometry() if game == "runout" else nineball_geometry()


def read_answer(state, text: str):
    """(action or None, parse status, message): the answer read as a model's is, in the game's default action."""
    from poolbench_data.llm.observation import default_action
    from poolbench_data.llm.observation import read_answer as read

    return read(state, text, default_action(state.game))


@dataclass(frozen=True)
class GamePlayResult:
    """What a person's finished episodes scored (`report`: the game's table, also in out/report.txt)."""

    game: str
    name: str
    episodes: tuple  # the finished Episodes, in episode order
    summary: dict
    report: str
    out: Path

    @property
    def incomplete(self) -> bool:
        """Never: every answer a person gives is recorded (a model's requests are what can fail)."""
        return False


def _row_problem(r: dict) -> str | None:
    for key, kind in (("player", str), ("game", str), ("start", str), ("seed", int), ("max_attempts", int),
                      ("episode", int), ("attempt", int), ("raw_response", str)):
        if not isinstance(r.get(key), kind) or isinstance(r.get(key), bool):
            return f"{key} is {r.get(key)!r}, not {'text' if kind is str else 'a whole number'}"
    return None


class GameSession(AnswersFile):
    """The episodes of one `poolbench play --game` and the answers given so far. Checks the settings (UserError:
    one line, exit 2) before any table is drawn or simulated."""

    def __init__(self, config):
        from poolbench_data.core.errors import UserError, check_output_dir
        from poolbench_data.players.traces import load_traces

        check_name(config.name)
        out = check_output_dir(config.out, "--out")
        self.name, self.game, self.seed, self.n, self.cap, self.out = (config.name, config.game, config.seed,
                                                                      config.n, config.attempts, out)
        self.unit = f"{config.game} episodes"
        self.responses = out / "responses.jsonl"
        self.rows = load_traces(self.responses, FIX, check=_row_problem) if self.responses.exists() else []
        mine = {"player": self.name, "game": self.game, "seed": self.seed, "max_attempts": self.cap}
        foreign = [r for r in self.rows if any(r[k] != v for k, v in mine.items()) or not 0 <= r["episode"] < self.n]
        if foreign:
            r = foreign[0]
            raise UserError(f"--out {config.out} holds answers to another game or by another player (episode "
                            f"{r['episode']} of {r['game']!r}, seed {r['seed']}, --attempts {r['max_attempts']}, by "
                            f"{r['player']!r}); give another --out, or the --game, --n, --seed, --attempts and "
                            "--name of that session to resume it")
        self.states: dict[int, list] = {}
        for r in self.rows:  # replayed through the step: the same start and answers give the same table
            state = self.table(r["episode"])
            if state.done or r["attempt"] != state.attempts + 1 or r["start"] != state.start:
                raise UserError(f"--out {config.out}: {self.responses.name} answers episode {r['episode'] + 1}'s "
                                f"attempt {r['attempt']} out of order or from another start; {FIX}")
            self._step(r["episode"], r["raw_response"])

    def table(self, k: int):
        """Episode k's table now (its start until an answer is given)."""
        from poolbench_data.games.step import start_game

        if k not in self.states:
            self.states[k] = [start_game(self.game, k, self.seed, self.cap)]
        return self.states[k][-1]

    def _step(self, k: int, text: str):
        from poolbench_data.llm.observation import default_action, play_answer

        state = self.table(k)
        _, after, outcome = play_answer(state, text, default_action(state.game))
        self.states[k].append(after)
        return outcome

    def resuming(self) -> str:
        return f"resuming: {len(self.rows)} answers already given in {self.responses}" if self.rows else ""

    def pending(self) -> list[int]:
        """The episodes not yet finished, in order (their tables are drawn as they come)."""
        return [k for k in range(self.n) if k not in self.states or not self.states[k][-1].done]

    def finished(self) -> list[int]:
        return [k for k in sorted(self.states) if self.states[k][-1].done]

    def turn(self):
        """(episode, its table) of the attempt to play now; None when every episode is finished."""
        pending = self.pending()
        return (pending[0], self.table(pending[0])) if pending else None

    def answer(self, k: int, text: str):
        """Play one answer ("" for a skipped attempt: a wasted one) on episode k, append it to the answers file and
        flush it: the file is the session. The attempt's Outcome."""
        state = self.table(k)
        row = {"player": self.name, "game": self.game, "seed": self.seed, "max_attempts": self.cap, "episode": k,
               "start": state.start, "attempt": state.attempts + 1, "raw_response": text}
        outcome = self._step(k, text)
        self._append({**row, "parse_status": outcome.parse_status})
        self.rows.append(row)
        return outcome

    def picture(self, k: int, state) -> Path:
        """The table now as a picture (the game's own table, drawn as a vision model's board is)."""
        from poolbench_data.report.render import table_png

        path = self.out / f"episode_{k + 1:03d}_attempt_{state.attempts + 1:02d}.png"
        title = f"{state.start}: attempt {state.attempts + 1} of {state.max_attempts}"
        path.write_bytes(table_png(state.balls, title, table_geometry(self.game)))
        return path

    def finish(self) -> GamePlayResult | None:
        """The game's table over the finished episodes (report.txt, episodes.jsonl); None (the reason on stderr)
        when no episode is finished."""
        from poolbench_data.games.records import Episode
        from poolbench_data.report.games import facts, game_report

        done = self.finished()
        if not done:
            print("no episode finished; nothing to score", file=sys.stderr)
            return None
        episodes = tuple(Episode(self.name, tuple(self.states[k]), (0,) * (len(self.states[k]) - 1),
                                 ("human",) * (len(self.states[k]) - 1)) for k in done)
        summary, report = game_report(self.game, [facts(e) for e in episodes], [self.name], len(episodes),
                                      self.seed, self.cap)
        if unfinished := sum(1 for k, states in self.states.items() if len(states) > 1 and k not in done):
            report += f"\n{unfinished} episode(s) unfinished: the same command plays on from where they stopped"
        (self.out / "report.txt").write_text(report + "\n")
        with open(self.out / "episodes.jsonl", "w") as f:
            f.writelines(json.dumps(e.to_row()) + "\n" for e in episodes)
        print(report)
        return GamePlayResult(self.game, self.name, episodes, summary, report, self.out)


def ask(state, read, write) -> str:
    """One attempt's answer: re-asked while it is not the game's action (people mistype), unless the person
    types `skip` (a wasted attempt)."""

    def problem(text: str) -> str | None:
        action, status, message = read_answer(state, text)
        return None if action is not None else f"{status}: {message}"

    prompt = "Speed: ..., Strikespot: ... (or skip)> " if state.game != "runout" else "action JSON (or skip)> "
    return ask_until(problem, prompt, "type it again", read, write)


def play_game(config, read, write):
    """The terminal's game (run.play's loop for --game): each turn's observation (the previous shot's outcome, the
    table) and its picture; the answer read until it is an action or `skip`; Ctrl-D or Ctrl-C stops (the
    finished episodes are scored, the same command resumes)."""
    from poolbench_data.llm.observation import default_action, game_system_prompt, observation

    session = GameSession(config)
    if session.resuming():
        write(session.resuming())
    if not config.brief:
        write(game_system_prompt(config.game, default_action(config.game)) + "\n")
    with session:
        while (turn := session.turn()) is not None:
            k, state = turn
            write(f"--- episode {k + 1}/{config.n}: {state.start}, attempt {state.attempts + 1}/{state.max_attempts}; "
                  f"picture: {session.picture(k, state)}\n{observation(state)}")
            try:
                text = ask(state, read, write)
            except (EOFError, KeyboardInterrupt):  # the person stopped: score the episodes finished so far
                write("")
                break
            outcome = session.answer(k, text)  # its events open the next turn; an episode's last are shown here
            write(f"  -> {said(outcome)}" + (f"\n  events: {outcome.event_text or 'none'}" if outcome.end else ""))
    return session.finish()
