"""Every committed figure (docs/figures/*.png) is what its documented command draws from the committed JSONs
today: the command in docs/results.md#figures is run as written (into a temporary folder) and each PNG is
compared with the committed one pixel for pixel, so a figure cannot drift from the tables beside it. The
browser screenshot is the one exception, and the page says how it is taken."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("matplotlib")

from poolbench_data.cli import main  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
FIGURES = REPO / "docs" / "figures"
SCREENSHOT = "web_play.png"  # taken by tests/test_play_web.py in Chromium, not redrawn here


def figures_section() -> str:
    text = (REPO / "docs" / "results.md").read_text()
    return text.split("\n## Figures\n", 1)[1].split("\n## ", 1)[0]


def documented_command() -> list[str]:
    """The `poolbench figures` command of docs/results.md#figures, as arguments after `poolbench`."""
    blocks = re.findall(r"```bash\n(.*?)```", figures_section(), re.S)
    (command,) = [b for b in blocks if "poolbench figures" in b]
    words = shlex.split(command.replace("\\\n", " "))
    assert words[0].endswith("poolbench"), words
    return words[1:]


def test_every_committed_figure_is_its_documented_command_s_output(tmp_path):
    args = documented_command()
    assert args[args.index("--out") + 1] == "docs/figures"
    args[args.index("--out") + 1] = str(tmp_path / "figures")
    for i, word in enumerate(args):  # the JSONs, wherever the test runs from
        if word.startswith("docs/"):
            args[i] = str(REPO / word)
    assert main(args) == 0
    drawn = sorted(p.name for p in (tmp_path / "figures").iterdir())
    assert sorted(p.name for p in FIGURES.glob("*.png")) == sorted([*drawn, SCREENSHOT])
    for name in drawn:
        want = np.asarray(Image.open(FIGURES / name).convert("RGB"))
        got = np.asarray(Image.open(tmp_path / "figures" / name).convert("RGB"))
        assert got.shape == want.shape, (name, got.shape, want.shape)
        differ = int((got != want).any(axis=2).sum())
        assert differ == 0, f"{name}: {differ} pixels differ from the committed figure; redraw it with the command " \
                            "in docs/results.md#figures"


def test_the_screenshot_says_how_it_is_taken():
    section = figures_section()
    assert SCREENSHOT in section and "POOLBENCH_SCREENSHOTS=docs/figures" in section
    assert (REPO / "tests" / "test_play_web.py").read_text().count(f'shots / "{SCREENSHOT}"') == 1


def test_no_other_example_writes_into_the_committed_figures():
    """Only the documented regeneration command (and the screenshot's) writes docs/figures: an example for a
    user's own run writes elsewhere."""
    found = []
    for path in [REPO / "README.md", *(REPO / "docs").glob("*.md"), *(REPO / "poolbench_data").rglob("*.py")]:
        text = path.read_text()
        if path.name == "results.md":
            text = text.replace(figures_section(), "")
        found += [f"{path.relative_to(REPO)}: {line.strip()}" for line in text.splitlines()
                  if re.search(r"--out[ =]docs/figures", line)]
    assert found == []


def test_the_figures_name_players_as_the_tables_do():
    """The baselines' display names (players.DISPLAY_NAMES) are the names of the rows of README.md's table and of
    docs/results.md's 200-board table, which table1.png and before_after.png draw."""
    from poolbench_data.players import DISPLAY_NAMES

    shown = ("random", "heuristic-centre", "heuristic", "oracle", "oracle-kick")
    readme = (REPO / "README.md").read_text().split("## Results: 200 held-out boards", 1)[1]
    results = (REPO / "docs" / "results.md").read_text().split("## Baselines on 200 held-out boards", 1)[1]
    for text in (readme, results):
        rows = [line.split("|")[1].strip() for line in text.split("\n## ", 1)[0].splitlines()
                if line.startswith("| ") and not line.startswith("| player")]
        names = [DISPLAY_NAMES[p] for p in shown]
        baselines = [r for r in rows if any(r.startswith(n) for n in names)]
        assert len(baselines) == len(names), (names, rows)
        assert all(row.startswith(name) for row, name in zip(baselines, names)), (names, rows)  # in this order
