"""The package's shape: dependencies one way (import-linter's contracts in
pyproject.toml), no import cycle, small modules, a documented tree."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from entry_parsers import OUTSIDE

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "poolbench_data"
MAX_LINES = 400


def _graph():
    import grimp

    return grimp.build_graph("poolbench_data")


def test_import_contracts_hold():
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint), "--config", str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_no_import_cycle():
    graph = _graph()
    modules = sorted(graph.modules)
    cycles = []
    for m in modules:
        for imported in graph.find_modules_directly_imported_by(m):
            # imported -> ... -> m closes a cycle through m -> imported
            chain = graph.find_shortest_chain(importer=imported, imported=m)
            if chain:
                cycles.append((m,) + tuple(chain))
    assert not cycles, cycles[:5]


def test_layers_cannot_be_broken_silently(tmp_path):
    """The checker is live: a board module importing a player breaks a contract."""
    import shutil

    copy = tmp_path / "repo"
    shutil.copytree(PACKAGE, copy / "poolbench_data", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    bad = copy / "poolbench_data" / "boards" / "categories.py"
    bad.write_text(bad.read_text() + "\nfrom poolbench_data.players import oracle  # noqa\n")
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint)], cwd=copy, capture_output=True, text=True,
                          env={"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin"})
    assert done.returncode != 0 and "BROKEN" in done.stdout, done.stdout + done.stderr


def test_no_module_over_the_limit():
    long = {p.relative_to(ROOT).as_posix(): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"split these modules (limit {MAX_LINES} lines): {long}"


def test_readme_layout_matches_the_tree():
    readme = (ROOT / "README.md").read_text()
    layout = readme[readme.index("## Layout"):]
    subpackages = sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py"))
    for name in subpackages:
        assert f"poolbench_data/{name}/" in layout, f"README's layout does not mention {name}/"
    for line in layout.splitlines():
        if line.startswith("poolbench_data/") and "/" in line[15:]:
            name = line.split("/")[1]
            assert name in subpackages, f"README's layout names {name}/, which is not in the package"


def test_public_api_resolves():
    import poolbench_data

    for name in poolbench_data.__all__:
        assert getattr(poolbench_data, name) is not None, name
    board = poolbench_data.generate(1)[0]
    m = poolbench_data.score(poolbench_data.simulate(board, poolbench_data.oracle(board).shot))
    assert m.legal_contact


def test_training_scripts_are_thin_and_import_the_package_as_installed():
    """training/*.py are TRL-style scripts: what they share lives in poolbench_data.finetune (under the import
    contracts), found the way the package is, never by editing sys.path."""
    import ast

    for script in sorted((ROOT / "training").glob("*.py")):
        text = script.read_text()
        assert "sys.path" not in text, f"{script.name} edits sys.path"
        tree = ast.parse(text)
        body = tree.body[1:] if ast.get_docstring(tree) else tree.body
        code = sum(node.end_lineno - node.lineno + 1 for node in body)
        assert code <= 150, f"{script.name}: {code} lines of code besides its docstring; move the logic to the package"


def test_scripts_are_short_and_import_the_package_as_installed():
    """builders/, benchmarks/ and analysis/ hold thin scripts: each under the modules' line limit (what they
    share lives in the package), none editing sys.path to find it."""
    for folder in ("builders", "benchmarks", "analysis"):
        for script in sorted((ROOT / folder).glob("*.py")):
            text = script.read_text()
            lines = len(text.splitlines())
            assert lines <= MAX_LINES, f"{folder}/{script.name}: {lines} lines (limit {MAX_LINES}); split it"
            assert "sys.path" not in text, f"{folder}/{script.name} edits sys.path"


def test_arguments_are_read_by_the_configuration_system_only():
    """One configuration system: no entry point adds its own argparse arguments; poolbench_data/config.py makes
    every parser from a dataclass (the TRL scripts use TRL's TrlParser, which does the same)."""
    sources = [p for folder in ("poolbench_data", "builders", "benchmarks", "analysis", "training")
               for p in (ROOT / folder).rglob("*.py")]
    found = [p.relative_to(ROOT).as_posix() for p in sources
             if "add_argument(" in p.read_text() and p != PACKAGE / "config.py"
             and p.relative_to(ROOT).as_posix() not in OUTSIDE]  # runs without the package (entry_parsers)
    assert not found, f"parse with poolbench_data.config (a frozen dataclass) instead: {found}"


def test_what_documented_commands_write_is_ignored_by_git():
    """The folders the README's and the tools' commands write in the checkout (datasets, shards, runs, results,
    vf-eval's outputs/) never show as changes; the code beside them does."""
    import shutil

    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    written = ["poolbench/scenarios/test.parquet", "parts/0/shard.json", "runs/sft/merged/config.json",
               "results/eval/report.txt", "outputs/evals/poolbench--served-name/0/results.jsonl"]
    done = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], cwd=ROOT, input="\n".join(written),
                          capture_output=True, text=True)
    assert done.stdout.split() == written, sorted(set(written) - set(done.stdout.split()))
    kept = subprocess.run(["git", "check-ignore", "--no-index", "builders/parts.py", "docs/results/x.json"],
                          cwd=ROOT, capture_output=True, text=True)
    assert kept.returncode == 1 and not kept.stdout, kept.stdout
