"""The boards a person plays for the human baseline and the answers they give,
whatever they play in (a terminal, `poolbench play`; a browser, `poolbench
play --web`): the answers file (appended and flushed as each answer is given,
so an interrupt loses nothing and the same command resumes), each shot's
outcome, and the final scoring exactly like a model's (the replay backend)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

SKIP = "skip"  # typed instead of an action: no shot (a foul, as an unparseable answer)


def ask_until(problem, prompt: str, again: str, read, write) -> str:
    """A line typed at `prompt`, re-asked (saying why, then `again`) while `problem(line)` names one; `skip` is ""."""
    while True:
        text = read(prompt).strip()
        if text.lower() == SKIP:
            return ""
        why = problem(text)
        if why is None:
            return text
        write(f"  not an action ({why}); {again}")


def check_name(name: str) -> None:
    """A person's name in the report: neither empty nor a baseline's (UserError naming --name)."""
    from poolbench_data.core.errors import UserError
    from poolbench_data.players import BASELINES

    if name in BASELINES or not name.strip():
        raise UserError(f"--name {name!r} is {'a baseline name' if name in BASELINES else 'empty'}; "
                        "pass --name with your name")


class AnswersFile:
    """The answers file (`responses`) held open while a person plays: each row appended and flushed at once,
    so the file is the session and a later run resumes from it."""

    responses: Path
    _file = None

    def __enter__(self):
        self._file = open(self.responses, "a")
        return self

    def __exit__(self, *exc):
        self._file.close()

    def _append(self, row: dict) -> None:
        self._file.write(json.dumps(row) + "\n")
        self._file.flush()


class Session(AnswersFile):
    """The boards of one `poolbench play` and the answers given so far. Checks the settings
    (UserError: one line, exit 2) before any board is drawn or simulated."""

    def __init__(self, config):
        from poolbench_data.boards.generate import generate
        from poolbench_data.core.errors import UserError, check_output_dir
        from poolbench_data.llm.replay import replay_rows

        check_name(config.name)
        out = check_output_dir(config.out, "--out")
        self.name, self.seed, self.n, self.out = config.name, config.seed, config.n, out
        self.boards = generate(config.n, config.seed)
        self.responses = out / "responses.jsonl"
        self.rows = replay_rows(self.responses, f"delete that line to play its board again, or give another "
                                                f"--out") if self.responses.exists() else []
        ids = {s.id for s in self.boards}
        foreign = [r["scenario_id"] for r in self.rows
                   if r.get("scenario_id") not in ids or r.get("player") != config.name]
        if foreign:
            raise UserError(f"--out {config.out} holds answers to other boards or by another player ({foreign[0]!r}, "
                            "...); give another --out, or the --n, --seed and --name of that session to resume it")
        self.done = {r["scenario_id"] for r in self.rows}

    unit = "boards"  # what --n counts, in the lines a person reads

    def resuming(self) -> str:
        """The line that says how much of the session is already in the answers file ("" when nothing)."""
        return (f"resuming: {len(self.done)} of {self.n} boards already answered in {self.responses}"
                if self.done else "")

    def pending(self) -> list[tuple[int, object]]:
        """(index, board) of the boards still to answer, in order."""
        return [(i, s) for i, s in enumerate(self.boards) if s.id not in self.done]

    def picture(self, scenario) -> Path:
        from poolbench_data.report.render import render_board

        return render_board(scenario, [(self.name, None, "your shot")], self.out / f"board_{scenario.id}.png")

    def record(self, scenario, text: str) -> dict:
        """Append one answer ("" for a skipped board) and flush it: the file is the session."""
        row = {"player": self.name, "player_kind": "llm", "scenario_id": scenario.id, "sample": 0,
               "raw_response": text, "temperature": None}
        self._append(row)
        self.rows.append(row)
        self.done.add(scenario.id)
        return row

    def finish(self):
        """Score the answers given, like any model's: the replay backend, the same report and traces. The
        EvalResult, or None (the reason on stderr) when there is nothing that can be scored."""
        from poolbench_data.evaluation import EvalConfig, evaluate

        if not self.rows:
            print("no board played; nothing to score", file=sys.stderr)
            return None
        # The replay backend reads answers by board id, for the first len(rows) boards: they must be those, once each.
        if sorted(r["scenario_id"] for r in self.rows) != sorted(s.id for s in self.boards[:len(self.rows)]):
            print(f"the answers in {self.responses} are not boards 1..{len(self.rows)} once each; play on in order "
                  "(or give another --out) before scoring", file=sys.stderr)
            return None
        return evaluate(EvalConfig(backend="replay", responses=str(self.responses), name=self.name,
                                   n=len(self.rows), seed=self.seed, out=str(self.out), boards=0, quiet=True))


def outcome(scenario, text: str):
    """(shot, result, metrics) of an answer the protocol's parser accepts, simulated as the scoring will."""
    from poolbench_data.core.physics import simulate
    from poolbench_data.core.scoring import score
    from poolbench_data.protocol.parsing import parse_action

    shot = parse_action(text, scenario).shot
    result = simulate(scenario, shot)
    return shot, result, score(result)


def verdict(m) -> str:
    """The one line a person is told after a shot."""
    return (f"{'legal contact' if m.legal_contact else 'no legal contact'}"
            f"{', own ball potted' if m.own_potted else ''}"
            f"{', foul: ' + ','.join(m.foul_reasons) if m.foul else ''}")
