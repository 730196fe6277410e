"""`poolbench play --game`: a person plays a game's episodes in a terminal (stdin, a real process) and through the
browser page's endpoints. Each answer goes through the game's step and is on disk as it is given; a stop and the
same command give the same episode as one run; the page's requests for a game keep every protection of the
single-shot page, and an answer to a turn that is over, or one that is not the game's action, is a 4xx that
records nothing."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from poolbench_data.human.web import ENDPOINTS, TOKEN_HEADER
from test_play_web import REPO, _answers
from test_web_requests import FORGED, MALFORMED, drained, page_headers, send, served

BREAK = "Speed: High, Strikespot: Middle Spin"


def _play(out: Path, typed: str, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "poolbench_data.cli", "play", "--game", "nineball", "--n", "1",
                           "--attempts", "2", "--brief", "--out", str(out), *flags], input=typed, capture_output=True,
                          text=True, cwd=REPO, timeout=300)


def _episodes(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "episodes.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_a_person_plays_a_nineball_episode_at_the_terminal_and_a_stop_resumes_it(tmp_path):
    """Two attempts fed through stdin: a mistyped line is asked again, the break is played through the step, a
    `skip` wastes the second attempt, and the report is Table 16's layout. Stopped after the break, the same
    command plays on from attempt 2 and leaves the same episode, byte for byte."""
    whole = tmp_path / "whole"
    run = _play(whole, f"hello\n{BREAK}\nskip\n")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.count("not an action (no-json") == 1  # asked again, not recorded
    assert "episode 1/1: rack-0, attempt 1/2" in run.stdout and "width=0.9906m, length=1.9812m" in run.stdout
    assert re.search(r"attempt 2/2; picture: .*episode_001_attempt_02\.png\nYour last shot \(attempt 1\): "
                     r"Speed: High, Strikespot: Middle Spin\. Events: ball-ball-cue-1", run.stdout)  # a model's words
    assert "-> skipped: no shot; no attempts left" in run.stdout
    rows = _answers(whole)
    assert [(r["episode"], r["attempt"], r["raw_response"], r["parse_status"]) for r in rows] == [
        (0, 1, BREAK, "ok"), (0, 2, "", "empty")]
    report = (whole / "report.txt").read_text()
    assert "human (n=1)" in report and "Att. 2" in report and "DeepPHY MOCK (published)" in report
    (episode,) = _episodes(whole)
    assert episode["player"] == "human" and episode["end"] == "attempts" and len(episode["turns"]) == 2

    # Stopped after the break (stdin ends: Ctrl-D), the same settings play on from attempt 2.
    from poolbench_data.core.errors import UserError
    from poolbench_data.human import PlayConfig, play

    halves, shown = tmp_path / "halves", []
    config = PlayConfig(game="nineball", n=1, attempts=2, brief=True, out=str(halves))
    assert play(config, read=_typed([BREAK]), write=shown.append) is None  # nothing finished: nothing to score
    assert len(_answers(halves)) == 1  # on disk as soon as it was given
    result = play(config, read=_typed(["skip"]), write=shown.append)
    assert shown[-3].startswith("resuming: 1 answers") and "attempt 2/2" in shown[-2]
    assert _episodes(halves) == _episodes(whole) and _answers(halves) == rows
    assert json.loads(json.dumps(result.episodes[0].to_row())) == episode and result.summary["human"]["n"] == 1
    with pytest.raises(UserError, match="give another --out"):  # another session's folder: refused, not mixed
        play(PlayConfig(game="nineball", n=1, attempts=2, seed=7, out=str(halves)), read=_typed([]))


def _typed(lines):
    it = iter(lines)

    def read(prompt):
        try:
            return next(it)
        except StopIteration:
            raise EOFError from None

    return read


def test_a_wrong_game_flag_is_one_line_before_any_work(tmp_path, capsys):
    from poolbench_data.cli import main

    assert main(["play", "--game", "nineball", "--attempts", "0", "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "--attempts" in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "a").exists()


@pytest.fixture(scope="module")
def game_web(tmp_path_factory):
    """`poolbench play --web --game nineball --n 2 --attempts 1`: two one-attempt episodes."""
    with served(tmp_path_factory.mktemp("game") / "h", 2, "--game", "nineball", "--attempts", "1") as w:
        yield w


def _state(web) -> dict:
    code, got = send(web.port, "GET", "/api/state", {TOKEN_HEADER: web.token})
    assert code == 200, got
    return got


def _answer(web, turn: str, text) -> tuple[int, dict]:
    body = json.dumps({"scenario_id": turn, "text": text}).encode()
    return send(web.port, "POST", "/api/answer", page_headers(web, body), body)


@pytest.mark.parametrize("forged", sorted(FORGED))
@pytest.mark.parametrize("endpoint", sorted(ENDPOINTS), ids="-".join)
def test_a_game_request_not_from_the_page_is_refused_and_records_nothing(game_web, endpoint, forged):
    method, path = endpoint
    make, (post_code, get_code) = FORGED[forged]
    body = json.dumps({"scenario_id": "episode-1-attempt-1", "text": "skip"}).encode() if method == "POST" else b""
    headers = {**make(game_web), **({"Content-Length": str(len(body))} if method == "POST" else {})}
    code, got = send(game_web.port, method, path, headers, body)
    assert code == (post_code if method == "POST" else get_code), got
    assert _answers(game_web.out) == [] and game_web.proc.poll() is None
    assert _state(game_web)["board"]["id"] == "episode-1-attempt-1"


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_game_request_is_a_4xx_saying_why(game_web, case):
    extra, body, want = MALFORMED[case]
    headers = {k: v for k, v in {**page_headers(game_web, body), **extra}.items() if v is not None}
    code, got = send(game_web.port, "POST", "/api/answer", headers, body)
    assert code == want and got["ok"] is False and len(got["message"]) < 200, (code, got)
    assert _answers(game_web.out) == [] and "Traceback" not in drained(game_web.console)


def test_a_game_s_turn_is_the_state_s_and_a_turn_that_is_over_is_refused(game_web):
    """The page is sent the game's own table (pooltool's default, not the benchmark's); an answer that is not
    DeepPHY's line is 400, one to another turn 409, neither recorded; a skip ends the one-attempt episode, and
    an answer to that episode afterwards is refused while the next episode plays on."""
    s = _state(game_web)
    assert s["game"] == "nineball" and s["table"]["width"] == pytest.approx(0.9906)
    assert s["table"]["length"] == pytest.approx(1.9812) and s["board"]["target"] == "1"
    assert s["board"]["attempt"] == 1 and s["board"]["max_attempts"] == 1 and s["board"]["last"] is None
    assert "Attempt 1 of 1." in s["board"]["prompt"] and "width=0.9906m" in s["board"]["prompt"]
    for text, status in [("Speed: Warp, Strikespot: Top Spin", "out-of-range"), ("", "empty"), (5, "no-text")]:
        code, got = _answer(game_web, "episode-1-attempt-1", text)
        assert code == 400 and got["status"] == status, got
    code, got = _answer(game_web, "episode-1-attempt-2", "skip")
    assert code == 409 and got["status"] == "stale"
    assert _answers(game_web.out) == []
    code, got = _answer(game_web, "episode-1-attempt-1", "skip")
    assert code == 200 and got["ok"] and got["episode_done"] and not got["last"], got
    assert got["verdict"] == "skipped: no shot; no attempts left"
    for turn in ("episode-1-attempt-1", "episode-1-attempt-2"):  # the episode has ended: nothing more is played
        code, got = _answer(game_web, turn, BREAK)
        assert code == 409 and got["status"] == "stale"
    assert [(r["episode"], r["attempt"]) for r in _answers(game_web.out)] == [(0, 1)]
    assert _state(game_web)["board"]["id"] == "episode-2-attempt-1" and game_web.proc.poll() is None
    assert "Traceback" not in drained(game_web.console)
