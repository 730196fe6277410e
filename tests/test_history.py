"""The project's words speak of it as it is; its history is `git log`.

Two checks over the text the project ships (README.md, docs/, the package, training/, builders/,
benchmarks/, analysis/, tests/, scripts/), each failure named file:line:
- no run of work named by its place in a sequence: an ordinal, or this/last/next/earlier/previous,
  before the word "session" (issue 55's grep), in any text file;
- no date as provenance in a .py or .yaml file: a 20NN-NN-NN date in a comment, a docstring or a string
  with words in it (a help text, a message). A date in a literal without whitespace (a URL's api-version,
  a timestamp a test feeds in) is data, not provenance, and stays.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCOPE = ("README.md", "docs", "poolbench_data", "training", "builders", "benchmarks", "analysis", "tests", "scripts")
SKIP_DIRS = {"__pycache__", "node_modules"}  # and every hidden folder (.venv, .git, caches)
SESSION = re.compile(r"(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth"
                     r"|[a-z]+teenth|twentieth|twenty[- ][a-z]+|thirtieth|this|last|next|earlier|previous) session",
                     re.IGNORECASE)
DATE = re.compile(r"20[0-9]{2}-[0-9]{2}-[0-9]{2}")


def text_files(root: Path, scope=SCOPE):
    """(path, text) of every text file under `scope` (files or folders of `root`); binary files are skipped."""
    missing = [name for name in scope if not (root / name).exists()]
    assert not missing, f"the history check names paths this checkout lacks: {missing}"
    for name in scope:
        top = root / name
        paths = [top] if top.is_file() else sorted(top.rglob("*"))
        for path in paths:
            parts = path.relative_to(root).parts
            if not path.is_file() or any(p in SKIP_DIRS or p.startswith(".") for p in parts[:-1]):
                continue
            data = path.read_bytes()
            if b"\0" in data:
                continue
            try:
                yield path, data.decode("utf-8")
            except UnicodeDecodeError:
                continue


def session_hits(root: Path, scope=SCOPE) -> list[str]:
    return [f"{path.relative_to(root)}:{n}: {line.strip()}" for path, text in text_files(root, scope)
            for n, line in enumerate(text.splitlines(), 1) if SESSION.search(line)]


def _python_prose_dates(text: str) -> list[int]:
    """Line numbers of the dates in a module's comments and in its strings that hold whitespace."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):  # not Python after all: every date counts
        return [n for n, line in enumerate(text.splitlines(), 1) if DATE.search(line)]
    lines = []
    for tok in tokens:
        prose = tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and re.search(r"\s", tok.string))
        if prose:
            lines += [tok.start[0] + tok.string.count("\n", 0, m.start()) for m in DATE.finditer(tok.string)]
    return sorted(set(lines))


def date_hits(root: Path, scope=SCOPE) -> list[str]:
    hits = []
    for path, text in text_files(root, scope):
        if path.suffix == ".py":
            numbers = _python_prose_dates(text)
        elif path.suffix in (".yaml", ".yml"):
            numbers = [n for n, line in enumerate(text.splitlines(), 1) if DATE.search(line)]
        else:
            continue
        lines = text.splitlines()
        hits += [f"{path.relative_to(root)}:{n}: {lines[n - 1].strip()}" for n in numbers]
    return hits


def test_no_work_is_named_by_when_it_happened():
    hits = session_hits(ROOT)
    assert not hits, "say what the code or result is, not when it came about:\n" + "\n".join(hits)


def test_no_date_as_provenance_in_code_or_recipes():
    hits = date_hits(ROOT)
    assert not hits, "a date as provenance (git log keeps when):\n" + "\n".join(hits)


def test_the_checks_find_what_they_look_for_and_leave_data_alone(tmp_path):
    """Each pattern is planted once in a throwaway tree and found at its file and line; data is left alone."""
    day = "20" + "26-11-23"  # assembled, so this file holds no date and no phrase of its own
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# Page\n\nFine.\nAs the Twenty-Eighth " + "session showed.\n")
    (tmp_path / "docs" / "figure.png").write_bytes(b"\x89PNG\0 the eleventh " + b"session")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(
        f'"""A module.\n\nMeasured {day}."""\n'
        f"X = 1  # chosen on {day}\n"
        f'URL = "https://h/v1?api-version={day}"\n'
        f'HELP = dict(help="seconds a step ({day} run)")\n'
        f'STAMP = "{day}T00:00:00Z"\n')
    (tmp_path / "pkg" / "recipe.yaml").write_text(f"lr: 1.0e-4  # since {day}\nseed: 1\n")
    (tmp_path / "pkg" / ".hidden").mkdir()
    (tmp_path / "pkg" / ".hidden" / "venv.py").write_text(f"# {day}, the last " + "session\n")
    (tmp_path / "pkg" / "notes.txt").write_text(f"{day}: not code, not a recipe\n")
    scope = ("docs", "pkg")

    assert [h.split(": ")[0] for h in session_hits(tmp_path, scope)] == ["docs/page.md:4"]
    assert [h.split(": ")[0] for h in date_hits(tmp_path, scope)] == ["pkg/mod.py:3", "pkg/mod.py:4", "pkg/mod.py:6",
                                                                     "pkg/recipe.yaml:1"]


def test_a_path_the_check_names_must_exist(tmp_path):
    with pytest.raises(AssertionError, match=r"lacks: \['analysis'\]"):
        session_hits(tmp_path / "nowhere", ("analysis",))
