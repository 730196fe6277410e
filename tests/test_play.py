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


@pytest.mark.slow
def test_a_person_plays_two_boards_at_a_terminal(tmp_path):
    boards = generate(2)
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "poolbench_data.cli", "play", "--n", "2", "--brief", "--out",
                             str(tmp_path / "h")], stdin=slave, stdout=slave, stderr=slave, cwd=REPO,
                            close_fds=True)
    os.close(slave)
    term = Terminal(master)
    try:
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
    finally:
        proc.kill()
        os.close(master)
    out = tmp_path / "h"
    assert (out / "board_pb0-000001.png").is_file()
    rows = [json.loads(x) for x in (out / "llm_traces.jsonl").read_text().splitlines()]
    assert [(r["player"], r["scenario_id"]) for r in rows] == [("human", "pb0-000000"), ("human", "pb0-000001")]
    assert rows[0]["clean_pot"] and rows[0]["parse_status"] == "ok"
    assert rows[1]["action"] is None and rows[1]["foul"]  # skipped: no shot, a foul
    report = (out / "report.txt").read_text()
    assert "human" in report and "oracle" in report and "random" in report
