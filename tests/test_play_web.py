"""`poolbench play --web`, played in a real headless Chromium (the system's, from apt: scripts/setup.sh installs it)
driven by Selenium: three boards, one a pot, then the same answers typed into `poolbench play` at its prompt must
leave the same files."""

from __future__ import annotations

import json
import math
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from poolbench_data.boards.generate import generate

REPO = Path(__file__).resolve().parents[1]
URL = re.compile(rb"at (http://127\.0\.0\.1:(\d+)/)")


def _default_sigint() -> None:
    # A background job of a non-interactive shell (CI's runner) inherits SIGINT ignored; a person's terminal has it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Console:
    """The server's stdout, read by a thread so a wait can time out."""

    def __init__(self, proc):
        self.lines: queue.Queue = queue.Queue()
        self.seen = b""
        threading.Thread(target=lambda: [self.lines.put(x) for x in iter(proc.stdout.readline, b"")], daemon=True).start()

    def expect(self, pattern: re.Pattern, timeout: float = 120.0):
        end = time.monotonic() + timeout
        while not (m := pattern.search(self.seen)):
            try:
                self.seen += self.lines.get(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"waited for {pattern.pattern!r}; the console shows:\n{self.seen.decode()}")
        return m


@contextmanager
def serving(out: Path, n: int, *flags: str):
    """`poolbench play --web --n n --out out [flags]` as a real process: (process, url, console); killed on exit."""
    proc = subprocess.Popen([sys.executable, "-m", "poolbench_data.cli", "play", "--web", "--n", str(n), "--out",
                             str(out), *flags], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=REPO,
                            preexec_fn=_default_sigint)
    try:
        console = Console(proc)
        yield proc, console.expect(URL).group(1).decode(), console
    finally:
        proc.kill()
        proc.wait()


def _port_open(url: str) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", int(url.rsplit(":", 1)[1].strip("/")))) == 0


@pytest.fixture
def browser():
    """Headless Chromium from the system's packages; a browser download at test time cannot work here."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        webdriver = None
    if webdriver is None or not chromium or not driver_path:
        missing = "selenium (the dev extra)" if webdriver is None else "chromium and chromium-driver (apt)"
        if os.environ.get("CI"):
            pytest.fail(f"{missing} not installed: scripts/setup.sh installs them")
        pytest.skip(f"{missing} not installed: bash scripts/setup.sh installs them")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1000,740"):
        opts.add_argument(a)
    driver = webdriver.Chrome(options=opts, service=Service(driver_path))
    try:
        yield driver
    finally:
        driver.quit()


def _shots_dir(tmp_path: Path) -> Path:
    # POOLBENCH_SCREENSHOTS=DIR keeps the screenshots (docs/figures/web_play.png is one).
    return Path(os.environ.get("POOLBENCH_SCREENSHOTS") or tmp_path)


class Page:
    def __init__(self, driver):
        from selenium.webdriver.support.ui import WebDriverWait

        self.d, self.wait = driver, WebDriverWait(driver, 60)

    def el(self, id_: str):
        return self.d.find_element("id", id_)

    def choose(self, id_: str, value: str) -> None:
        from selenium.webdriver.support.ui import Select

        Select(self.el(id_)).select_by_value(value)

    def type_aim(self, text: str) -> None:
        self.el("aim").clear()
        self.el("aim").send_keys(text)

    def at(self, x: float, y: float) -> tuple[int, int]:
        """Offset from the canvas's centre of table point (x, y), from the page's own scale."""
        px, pad, length = self.d.execute_script("return [PX, PAD, T.length]")
        c = self.el("table")
        return round(pad + x * px - c.size["width"] / 2), round(pad + (length - y) * px - c.size["height"] / 2)

    def shoot(self) -> str:
        self.el("shoot").click()
        self.wait.until(lambda d: self.el("result").is_displayed() or self.el("error").text)
        return self.el("verdict").text if self.el("result").is_displayed() else self.el("error").text

    def drawn(self) -> None:
        self.wait.until(lambda d: self.el("table").get_attribute("data-drawn") == "1")

    def board(self, sid: str) -> None:
        self.wait.until(lambda d: self.el("table").get_attribute("data-board") == sid)


def _answers(out: Path) -> list[dict]:
    path = out / "responses.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.slow
def test_a_person_plays_three_boards_in_a_browser(tmp_path, browser):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    from poolbench_data.human.answers import outcome, verdict
    from poolbench_data.core.geometry import angle_deg
    from poolbench_data.players.baselines import oracle
    from poolbench_data.protocol.prompts import format_action

    boards = generate(3)
    best = oracle(boards[0]).shot  # the Oracle's legal pot on board 1 (ghost-ball aim, checked in the simulator)
    pot = json.loads(format_action(best, boards[0]))
    assert verdict(outcome(boards[0], json.dumps(pot))[2]) == "legal contact, own ball potted"
    out, shots = tmp_path / "web" / "h", _shots_dir(tmp_path)
    texts = []
    with serving(out, 3) as (proc, url, console):
        page = Page(browser)
        browser.get(url)
        page.board(boards[0].id)
        assert "Board 1 of 3: pb0-000000" in page.el("title").text

        # Board 1: picked from the lists, the angle typed; a mistyped angle is refused as the protocol refuses it.
        page.choose("ball", pot["target_ball"])
        page.choose("pocket", best.target_pocket)
        page.type_aim("400")
        assert page.shoot().startswith("Not an action (out-of-range)") and _answers(out) == []
        page.type_aim(str(pot["aim_angle_deg"]))
        assert float(page.el("speed").get_attribute("value")) == pot["cue_speed"]  # the slider starts at 8 m/s
        texts.append(page.el("action").get_attribute("value"))
        assert json.loads(texts[0]) == pot
        assert page.shoot() == "legal contact, own ball potted"
        assert "ball-pocket-" + pot["target_ball"] in page.el("events").text
        assert [a["raw_response"] for a in _answers(out)] == texts  # on disk as soon as it is given
        page.drawn()
        browser.save_screenshot(str(shots / "web_play.png"))
        console.expect(re.compile(rb"board 1/3: pb0-000000 -> legal contact, own ball potted"))
        page.el("next").click()

        # Board 2: the ball and the pocket clicked on the table, the aim dragged, the speed by the slider's keys.
        s = boards[1]
        page.board(s.id)
        target = s.nearest_own()
        ActionChains(browser).move_to_element_with_offset(page.el("table"), *page.at(target.x, target.y)).click().perform()
        assert page.el("ball").get_attribute("value") == target.id
        lt = _pocket("lt")
        ActionChains(browser).move_to_element_with_offset(page.el("table"), *page.at(lt.x, lt.y)).click().perform()
        assert page.el("pocket").get_attribute("value") == "lt"
        toward = angle_deg(s.cue.x, s.cue.y, target.x, target.y)
        far = _along(s.cue.x, s.cue.y, toward)  # dragged well past the ball, so a pixel is a small angle
        (ActionChains(browser).move_to_element_with_offset(page.el("table"), *page.at(s.cue.x, s.cue.y))
         .click_and_hold().move_by_offset(8, 0).move_to_element_with_offset(page.el("table"), *page.at(*far))
         .release().perform())
        pixel = math.degrees(2.0 / (math.dist((s.cue.x, s.cue.y), far) * browser.execute_script("return PX")))
        assert abs(float(page.el("aim").get_attribute("value")) - toward) < pixel  # within 2 pixels at the pointer
        page.el("speed").send_keys(*[Keys.ARROW_RIGHT] * 20)
        assert page.el("speedval").text == "10.0"
        texts.append(page.el("action").get_attribute("value"))
        assert json.loads(texts[1])["cue_speed"] == 10.0 and json.loads(texts[1])["target_pocket"] == [-0.0295, 2.1631]
        assert page.shoot() == verdict(outcome(s, texts[1])[2])
        page.drawn()
        page.el("next").click()

        # Board 3: an opponent's ball struck full: the page says what the scoring will (a foul).
        s = boards[2]
        page.board(s.id)
        stripe = next(b for b in s.object_balls if b.group == "stripes")
        page.choose("ball", stripe.id)
        page.choose("pocket", "rb")
        page.type_aim(f"{angle_deg(s.cue.x, s.cue.y, stripe.x, stripe.y):.2f}")
        texts.append(page.el("action").get_attribute("value"))
        said = page.shoot()
        assert said == verdict(outcome(s, texts[2])[2]) and "foul" in said
        assert page.el("next").text == "See the report"
        page.el("next").click()
        page.wait.until(lambda d: "Done: 3 of 3" in page.el("title").text)
        shown = page.el("report").text
        assert proc.wait(timeout=60) == 0  # the server goes once the page has the report
        assert not _port_open(url)
    report = (out / "report.txt").read_text()
    assert "human" in shown and "oracle" in shown and shown.strip() == report.strip()

    # The same answers at `poolbench play`'s prompt leave the same files.
    term = tmp_path / "term" / "h"  # the same folder name: traces carry it as the model's name
    typed = subprocess.run([sys.executable, "-m", "poolbench_data.cli", "play", "--n", "3", "--brief", "--out",
                            str(term)], input="\n".join(texts) + "\n", capture_output=True, text=True, cwd=REPO,
                           timeout=300)
    assert typed.returncode == 0, typed.stdout + typed.stderr
    for name in ("responses.jsonl", "report.txt", "llm_traces.jsonl"):
        assert (out / name).read_text() == (term / name).read_text(), name
    assert [a["raw_response"] for a in _answers(out)] == texts


@pytest.mark.slow
def test_a_person_plays_two_attempts_of_a_nineball_episode_in_a_browser(tmp_path, browser):
    """DeepPHY's "Human" row: the speed picked from a list and the strike spot clicked, on pooltool's default table
    as the page is sent it; each attempt says what the game's step made of it, the next shows the previous
    shot's outcome, and the last brings the game's table."""
    from poolbench_data.games.nineball import strike
    from poolbench_data.games.step import start_game, step
    from poolbench_data.human.games import said

    state, expected = start_game("nineball", 0, max_attempts=2), []
    for speed, spot in (("High", "Middle Spin"), ("Low", "Bottom Spin")):
        state, outcome = step(state, strike(speed, spot))
        expected.append(said(outcome))
    out, shots = tmp_path / "h", _shots_dir(tmp_path)
    with serving(out, 1, "--game", "nineball", "--attempts", "2") as (proc, url, console):
        page = Page(browser)
        browser.get(url)
        page.board("episode-1-attempt-1")
        assert page.el("title").text == "Episode 1 of 1: rack-0, attempt 1 of 2"
        width, length, px, pad = browser.execute_script("return [T.width, T.length, PX, PAD]")
        assert (width, length) == (pytest.approx(0.9906), pytest.approx(1.9812))  # the game's table, drawn to size
        assert int(page.el("table").get_attribute("height")) == math.ceil(length * px + 2 * pad)
        assert not page.el("ball").is_displayed() and not page.el("aim").is_displayed()  # the aim is the game's

        for i, (speed, spot) in enumerate((("High", "Middle Spin"), ("Low", "Bottom Spin"))):
            page.choose("nb_speed", speed)
            browser.find_element("css selector", f'#spots button[data-spot="{spot}"]').click()
            assert page.el("action").get_attribute("value") == f"Speed: {speed}, Strikespot: {spot}."
            assert page.shoot() == expected[i]
            assert [a["raw_response"] for a in _answers(out)][i] == f"Speed: {speed}, Strikespot: {spot}."
            page.drawn()
            if i == 0:
                assert "ball-ball-cue-1" in page.el("events").text and page.el("next").text == "Next attempt"
                browser.save_screenshot(str(shots / "web_play_nineball.png"))
                page.el("next").click()
                page.board("episode-1-attempt-2")
                assert page.el("last").text.startswith("Your last shot (attempt 1): Speed: High, Strikespot: "
                                                       "Middle Spin. Events: ball-ball-cue-1")
        assert page.el("next").text == "See the report"
        page.el("next").click()
        page.wait.until(lambda d: "Done: 1 of 1 episodes finished" in page.el("title").text)
        shown = page.el("report").text
        assert proc.wait(timeout=60) == 0
    assert "human (n=1)" in shown and shown.strip() == (out / "report.txt").read_text().strip()


def _along(x: float, y: float, deg: float, reach: float = 0.6) -> tuple[float, float]:
    """The point `reach` metres from (x, y) toward `deg`, or short of it at the table's edge (+0.1 m of rail)."""
    from poolbench_data.core.table import geometry

    g, dx, dy = geometry(), math.cos(math.radians(deg)), math.sin(math.radians(deg))
    for lo, hi, p, d in ((-0.1, g.width + 0.1, x, dx), (-0.1, g.length + 0.1, y, dy)):
        if d:
            reach = min(reach, ((hi if d > 0 else lo) - p) / d)
    return x + reach * dx, y + reach * dy


def _pocket(pid: str):
    from poolbench_data.core.table import geometry

    return geometry().pocket(pid)


@pytest.mark.slow
def test_ctrl_c_closes_the_server_and_scores_what_was_played(tmp_path):
    with serving(tmp_path / "h", 2) as (proc, url, console):
        proc.send_signal(signal.SIGINT)
        console.expect(re.compile(rb"no board played; nothing to score"))
        assert proc.wait(timeout=60) == 1  # as `poolbench play` at a terminal: nothing to score
        assert not _port_open(url)


def test_bad_web_flags_say_which_and_how_to_fix(tmp_path, capsys):
    from poolbench_data.cli import main

    assert main(["play", "--web", "--port", "70000", "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "--port 70000" in err and "1..65535" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "a").exists()  # refused before anything is made
    assert main(["play", "--port", "8000", "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "add --web" in err and len(err.strip().splitlines()) == 1
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["play", "--web", "--port", str(port), "--n", "1", "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert f"--port {port}" in err and "another --port" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "c").exists()  # the port is taken before the folder is made
