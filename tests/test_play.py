"""`poolbench play`, driven at a real terminal (a pty): a person's answers are
re-asked when malformed, then scored like a model's."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from poolbench_data.boards.generate import generate
from poolbench_data.players.baselines import oracle
from poolbench_data.protocol.prompts import format_action

REPO = Path(__file__).resolve().parents[1]
PROMPT = b"action JSON (or skip)> "


class Terminal:
    def __init__(self, fd: int):
        self.fd, self.seen = fd, b""

    def expect(self, text: bytes, timeout: float = 300.0) -> bytes:
        end = time.monotonic() + timeout
        while text not in self.seen:
            left = end - time.monotonic()
            assert left > 0, f"waited for {text!r}; the terminal shows:\n{self.seen[-2000:].decode(errors='replace')}"
            if select.select([self.fd], [], [], min(left, 1.0))[0]:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:  # the child closed the terminal
                    chunk = b""
                if not chunk:
                    assert text in self.seen, f"the program ended before {text!r}:\n{self.seen[-2000:].decode()}"
                self.seen += chunk
        before, _, self.seen = self.seen.partition(text)
        return before

    def type(self, line: str) -> None:
        os.write(self.fd, line.encode() + b"\n")


def _default_sigint() -> None:
    # A job started in the background of a non-interactive shell (CI's runner) inherits SIGINT ignored, and
    # Python then never raises KeyboardInterrupt; a person's terminal delivers it.
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def playing(out: Path, n: int):
    """`poolbench play --n n --brief --out out` at a pty: (process, terminal); killed and closed on exit."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "poolbench_data.cli", "play", "--n", str(n), "--brief", "--out",
                             str(out)], stdin=slave, stdout=slave, stderr=slave, cwd=REPO, close_fds=True,
                            preexec_fn=_default_sigint)
    os.close(slave)
    try:
        yield proc, Terminal(master)
    finally:
        proc.kill()
        os.close(master)


@pytest.mark.slow
def test_a_person_plays_two_boards_at_a_terminal(tmp_path):
    boards = generate(2)
    with playing(tmp_path / "h", 2) as (proc, term):
        shown = term.expect(PROMPT)
        assert b"board 1/2: pb0-000000" in shown and b"board_pb0-000000.png" in shown
        term.type("aim a bit left of the 3")
        term.expect(b"not an action")
        term.expect(PROMPT)
        term.type(format_action(oracle(boards[0]).shot, boards[0]))
        assert b"-> legal contact, own ball potted" in term.expect(PROMPT)
        term.type("skip")
        term.expect(b"report, heatmap")
        assert proc.wait(timeout=300) == 0
    out = tmp_path / "h"
    assert (out / "board_pb0-000001.png").is_file()
    rows = [json.loads(x) for x in (out / "llm_traces.jsonl").read_text().splitlines()]
    assert [(r["player"], r["scenario_id"]) for r in rows] == [("human", "pb0-000000"), ("human", "pb0-000001")]
    assert rows[0]["clean_pot"] and rows[0]["parse_status"] == "ok"
    assert rows[1]["action"] is None and rows[1]["foul"]  # skipped: no shot, a foul
    report = (out / "report.txt").read_text()
    assert "human" in report and "oracle" in report and "random" in report




@pytest.mark.slow
def test_an_interrupt_keeps_every_answer_and_the_same_command_resumes(tmp_path):
    import signal

    boards = generate(3)
    out = tmp_path / "h"
    with playing(out, 3) as (proc, term):
        term.expect(PROMPT)
        term.type(format_action(oracle(boards[0]).shot, boards[0]))
        assert b"board 2/3" in term.expect(PROMPT)
        proc.send_signal(signal.SIGINT)  # Ctrl-C at the second board
        term.expect(b"report, heatmap")
        assert proc.wait(timeout=300) == 0
    answers = [json.loads(x) for x in (out / "responses.jsonl").read_text().splitlines()]
    assert [a["scenario_id"] for a in answers] == ["pb0-000000"]
    with playing(out, 3) as (proc, term):
        shown = term.expect(PROMPT)
        assert b"resuming: 1 of 3 boards already answered" in shown and b"board 2/3" in shown
        term.type("skip")
        term.expect(PROMPT)
        term.type("skip")
        term.expect(b"report, heatmap")
        assert proc.wait(timeout=300) == 0
    rows = [json.loads(x) for x in (out / "llm_traces.jsonl").read_text().splitlines()]
    assert [r["scenario_id"] for r in rows] == [b.id for b in boards] and rows[0]["clean_pot"]


def test_play_out_must_be_a_folder_for_these_boards(tmp_path, capsys):
    from poolbench_data.cli import main

    taken = tmp_path / "file"
    taken.write_text("x")
    assert main(["play", "--out", str(taken), "--n", "1"]) == 2
    assert "--out" in capsys.readouterr().err
    other = tmp_path / "other"
    other.mkdir()
    (other / "responses.jsonl").write_text(json.dumps({"player": "human", "player_kind": "llm", "sample": 0,
                                                       "scenario_id": "pb7-000000", "raw_response": ""}) + "\n")
    assert main(["play", "--out", str(other), "--n", "1"]) == 2
    err = capsys.readouterr().err
    assert "other boards" in err and len(err.strip().splitlines()) == 1


# --- resuming from responses.jsonl: the file is the session, and a damaged one is named, never misread --------

ANSWER = {"player": "human", "player_kind": "llm", "scenario_id": "pb0-000001", "sample": 0, "raw_response": "skip",
          "temperature": None}
WRONG = {"player": [1, None, ["h"]], "player_kind": [1, None], "scenario_id": [1, None, {"id": "pb0-000001"}],
         "sample": ["0", None, -1, 1.5, True], "raw_response": [1, ["x"], {"text": "x"}],
         "temperature": ["0.2", -1, [0.2], True]}
RESUME_CASES = ([(f"{k}:missing", {x: v for x, v in ANSWER.items() if x != k}) for k in ANSWER if k != "temperature"]
                + [(f"{k}={json.dumps(w)}", {**ANSWER, k: w}) for k, ws in WRONG.items() for w in ws]
                + [(f"line={json.dumps(w)}", w) for w in ([1, 2], "x", 3, None)])


def _resume(tmp_path, capsys, second_line: str) -> str:
    """`poolbench play` on a folder whose responses.jsonl holds a good first answer and `second_line`: the
    error (one line, exit 2), with nothing written beside the answers file."""
    from poolbench_data.cli import main

    out = tmp_path / "h"
    out.mkdir(parents=True)
    first = json.dumps({**ANSWER, "scenario_id": "pb0-000000"})
    (out / "responses.jsonl").write_text(first + "\n" + second_line)
    assert main(["play", "--n", "3", "--brief", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and "Traceback" not in err, err
    assert f"{out / 'responses.jsonl'}: line 2" in err, err
    assert sorted(p.name for p in out.iterdir()) == ["responses.jsonl"]  # no board drawn, nothing scored
    return err


@pytest.mark.parametrize("case, row", RESUME_CASES, ids=[c[0] for c in RESUME_CASES])
def test_a_resumed_answer_with_a_missing_key_or_a_wrong_type_is_named(tmp_path, capsys, case, row):
    _resume(tmp_path, capsys, json.dumps(row) + "\n")


def test_a_last_line_cut_short_is_named_with_its_file_and_line(tmp_path, capsys):
    whole = json.dumps(ANSWER)
    for cut in (1, 20, len(whole) // 2, len(whole) - 1):
        err = _resume(tmp_path / str(cut), capsys, whole[:cut])
        assert "is not JSON" in err and "delete that line" in err


def test_a_line_that_is_a_list_is_named(tmp_path, capsys):
    assert "line 2 is not a JSON object" in _resume(tmp_path, capsys, "[1,2]\n")
