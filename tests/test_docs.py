"""The documentation cannot drift from the code.

- Every command in a fenced shell block of README.md and docs/**/*.md that calls an entry point (`poolbench ...`,
  a script under builders/, training/, benchmarks/ or analysis/, `lm_eval`, `inspect eval`) is handed to that
  entry point's own parser (tests/entry_parsers.py builds them as the entry points do; lm-eval's from its
  HarnessCLI): an unknown or abbreviated flag, a value of the wrong type or not a choice, a subcommand or
  script that does not exist, a recipe (TRL's or the loop's) that is missing or holds an unknown key, fails.
  The loop's --extra_<stage>_args are checked against the script their help names, and no documented command
  uses them. Inline `code` that starts with an entry point has its flag names checked the same way (its values
  may be placeholders).
- Every relative link and image resolves: the file exists, and a #anchor names a heading of the target.
- Every Python block of README.md runs as a user runs it, saved as a file (`python snippet.py`) and piped in
  (`python - < snippet.py`), with no `if __name__ == "__main__":` guard and the baselines in two worker
  processes: on its own tiny board counts, in a folder holding a small dataset built by the real builder; the
  one server a snippet names is a loopback stand-in answering the Oracle's action.
Each failure names the file and line. test_a_drifted_doc_fails feeds altered text through the same checks."""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from entry_parsers import OUTSIDE, REPO, is_trl_script, load_script, poolbench_parsers, script_parser

DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]  # docs/results/README.md too
SHELL = {"", "bash", "sh", "shell", "console"}  # an untagged block is read as shell too; outputs are `text`
SCRIPT_DIRS = ("builders", "training", "benchmarks", "analysis")
WRAPPERS = {"time": 0, "env": 0, "nohup": 0, "flock": 1, "timeout": 1}  # a prefix and the words it takes
OPERATORS = {"&&", "||", ";", "|", "&", "(", ")"}
REDIRECTS = {">", ">>", "<", ">&", "&>", "2>"}
INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def fences(text: str):
    """(language, line number of the first content line, content lines) of each fenced block."""
    out, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = re.match(r"^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)", lines[i])
        if not m:
            i += 1
            continue
        fence, start, body = m.group(1), i + 2, []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        out.append((m.group(2).lower(), start, body))
        i += 1
    return out


def prose(text: str):
    """(line number, line) outside fenced blocks."""
    inside = set()
    for _, start, body in fences(text):
        inside.update(range(start - 1, start + len(body) + 1))
    return [(n, line) for n, line in enumerate(text.splitlines(), 1) if n not in inside]


def shell_lines(start: int, body: list[str]):
    """(line number, logical line): backslash continuations joined."""
    out, buf, first = [], "", start
    for n, line in enumerate(body, start):
        if not buf:
            first = n
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        out.append((first, buf + line))
        buf = ""
    return out + ([(first, buf)] if buf else [])


def commands(line: str) -> list[list[str]]:
    """The simple commands of a shell line, as words (quotes removed, comments dropped)."""
    lex = shlex.shlex(line, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    out, cmd, skip = [], [], False
    for word in lex:
        if skip:
            skip = False
        elif word in OPERATORS:
            out, cmd = out + [cmd], []
        elif word in REDIRECTS:
            skip = True
        else:
            cmd.append(word)
    return [c for c in out + [cmd] if c]


def entry_point(words: list[str]):
    """(label, how to check it, arguments) of a command that calls an entry point; None for any other."""
    while words and (re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]) or words[0] in WRAPPERS):
        words = words[1 + WRAPPERS.get(words[0], 0):] if words[0] in WRAPPERS else words[1:]
    if not words:
        return None
    head, rest = words[0].rsplit("/", 1)[-1], words[1:]
    if head == "poolbench":
        return "poolbench", "poolbench", rest
    if re.fullmatch(r"python(3(\.\d+)?)?", head):
        if rest[:2] == ["-m", "poolbench_data.cli"]:
            return "poolbench", "poolbench", rest[2:]
        words, rest = rest[:1], rest[1:]
    if words and words[0].endswith(".py") and words[0].removeprefix("./").split("/")[0] in SCRIPT_DIRS:
        return words[0].removeprefix("./"), "script", rest
    if head in ("lm_eval", "lm-eval"):
        return "lm_eval", "lm_eval", rest
    if head == "inspect" and rest[:1] == ["eval"]:
        return "inspect eval", "inspect", rest[1:]
    return None


@functools.cache
def _captured(rel: str):
    return script_parser(rel)


@functools.cache
def _commands():
    return poolbench_parsers()


def _parser(label: str, kind: str, args: list[str]):
    """(parser, arguments for it, a prefix for messages) or raise LookupError saying what cannot be found."""
    if kind == "poolbench":
        subs = _commands()
        if not args or args[0] not in subs:
            raise LookupError(f"poolbench {' '.join(args[:1])}: no such command (commands: {', '.join(subs)})")
        return subs[args[0]], args[1:], f"poolbench {args[0]}"
    if kind == "lm_eval":
        from lm_eval._cli import HarnessCLI

        subs = HarnessCLI()._subparsers.choices  # as HarnessCLI.parse_args: no subcommand means `run`
        command, args = (args[0], args[1:]) if args and args[0] in subs else ("run", args)
        return subs[command], args, f"lm_eval {command}"
    if not (REPO / label).is_file():
        raise LookupError(f"{label}: no such script")
    return (script_parser(label) if is_trl_script(load_script(label)) else _captured(label)), args, label


@contextlib.contextmanager
def _strict(parser: argparse.ArgumentParser):
    """No abbreviations, in the parser and its subcommands: a flag must be written as the parser names it."""
    parsers = [parser] + [p for a in parser._actions if isinstance(a, argparse._SubParsersAction)
                          for p in a.choices.values()]
    saved = [p.allow_abbrev for p in parsers]
    for p in parsers:
        p.allow_abbrev = False
    try:
        yield
    finally:
        for p, s in zip(parsers, saved):
            p.allow_abbrev = s


def _parse(parser: argparse.ArgumentParser, args: list[str]) -> str | None:
    """The parser's own complaint about `args`, or None."""
    err = io.StringIO()
    try:
        with _strict(parser), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(args)
    except SystemExit as e:
        if e.code:
            line = (err.getvalue().strip().splitlines() or [f"exit {e.code}"])[-1]
            line = re.sub(r"^error: [^:]+: |^[^:]+: error: ", "", line)  # the project's style, then argparse's
            return re.sub(r"; see \S+ --help$", "", line)
    return None


def _recipe(parser, args: list[str], name: str) -> tuple[list[str], str | None]:
    """A TRL script's --config, as TrlParser reads it: taken out of the arguments; the file must exist and
    hold only the parser's settings."""
    from poolbench_data.config import check_known, yaml_settings
    from poolbench_data.core.errors import UserError

    if "--config" not in args[:-1]:
        return args, None
    i = args.index("--config")
    path, rest = args[i + 1], args[:i] + args[i + 2:]
    try:
        check_known(path, yaml_settings(str(REPO / path), name), {a.dest for a in parser._actions} | {"env"}, name)
    except UserError as e:
        return rest, str(e).replace(f"{REPO}/", "")
    return rest, None


def _settings(parser, args: list[str]) -> str | None:
    """A project entry point's --config file (the loop's recipe), read as the entry point reads it: the file
    exists and each setting is a field of the right type."""
    from poolbench_data.config import read_yaml
    from poolbench_data.core.errors import UserError

    try:
        read_yaml(str(REPO / args[args.index("--config") + 1]), parser.config_class)
    except UserError as e:
        return str(e).replace(f"{REPO}/", "")
    return None


def _tasks(args: list[str]) -> str | None:
    """lm_eval's --tasks: each poolbench task it names is one the package's task folder defines."""
    import yaml

    from poolbench_data.cli.lm_eval_tasks import PATH

    if "--tasks" not in args[:-1]:
        return None
    defined = {v for f in PATH.glob("*.yaml") for k, v in yaml.safe_load(f.read_text()).items()
               if k in ("task", "group") and isinstance(v, str)}
    unknown = [t for t in args[args.index("--tasks") + 1].split(",") if t.startswith("poolbench") and t not in defined]
    return f"--tasks: {', '.join(unknown)} not defined in {PATH.relative_to(REPO)}" if unknown else None


def _flags(parser, args: list[str]) -> list[tuple[str, str | None]]:
    """(flag, value) as the parser reads `args`: a flag that takes one value takes the next word, whatever it
    looks like; an optional value or an unknown flag's is the next word unless that is another flag."""
    out, i = [], 0
    while i < len(args):
        word, i = args[i], i + 1
        if not word.startswith("--") or word == "--":
            continue
        name, eq, value = word.partition("=")
        action = parser._option_string_actions.get(name)
        if not eq and i < len(args) and (action is None or action.nargs != 0):
            if (action is not None and action.nargs is None) or not args[i].startswith("-"):
                value, i = args[i], i + 1
        out.append((name, value if value or eq else None))
    return out


def check_command(words: list[str], names_only: bool = False) -> list[str]:
    """What is wrong with one command line's call of an entry point ([] when it is fine or calls none)."""
    found = entry_point(words)
    if found is None:
        return []
    label, kind, args = found
    if label in OUTSIDE:
        return []
    if names_only and kind in ("poolbench", "lm_eval", "inspect") and not args:
        return []  # prose naming the command, not a call of it
    if kind == "inspect":
        return _check_inspect(args)
    try:
        parser, args, name = _parser(label, kind, args)
    except LookupError as e:
        return [str(e)]
    except Exception as e:  # noqa: BLE001 - a script that cannot be imported cannot be checked: say so
        return [f"{label}: its parser could not be built ({type(e).__name__}: {e})"]
    problems = []
    if kind == "script" and is_trl_script(load_script(label)):
        args, problem = _recipe(parser, args, name)
        problems += [problem] if problem else []
    elif getattr(parser, "config_class", None) and "--config" in args[:-1] and not names_only:
        problems += [p for p in [_settings(parser, args)] if p]
    if kind == "lm_eval":
        problems += [p for p in [_tasks(args)] if p]
    given = _flags(parser, args)
    unknown = [f for f, _ in given if f not in parser._option_string_actions]
    problems += [f"{name}: {f} is not a flag of it" for f in unknown]
    if not unknown and not names_only:
        problems += [f"{name}: {p}" for p in [_parse(parser, args)] if p]
    for flag, value in given if not names_only else []:
        if re.fullmatch(r"--extra_\w+_args", flag) and flag in parser._option_string_actions:
            # the loop hands this value to one script's command line: the script its help names
            script = re.search(r"(?:builders|training)/\w+\.py", parser._option_string_actions[flag].help or "")
            if not script:
                problems.append(f"{name}: {flag}'s help names no script to check it against")
                continue
            problems += [f"{flag}: {p}" for p in check_command(["python", script.group(0), *shlex.split(value or "")])]
    return problems


def _check_inspect(args: list[str]) -> list[str]:
    """`inspect eval FILE -T key=value`: FILE exists, and each key is a parameter of a task it defines."""
    import inspect as pyinspect

    file = next((a for a in args if a.endswith(".py")), None)
    if file is None or not (REPO / file).is_file():
        return [f"inspect eval: no task file {file!r}"]
    module = load_script(file)
    params = {p for obj in vars(module).values() if callable(obj) and getattr(obj, "__module__", "") == module.__name__
              and hasattr(obj, "__wrapped__") for p in pyinspect.signature(obj).parameters}
    keys = [args[i + 1].split("=")[0] for i, a in enumerate(args[:-1]) if a == "-T"]
    return [f"inspect eval {file}: -T {k} is not a parameter of its task" for k in keys if k not in params]


def shell_commands(text: str):
    """(line, words or None, error) of every command in the shell blocks; the line is where the command starts."""
    for lang, start, body in fences(text):
        if lang not in SHELL:
            continue
        for n, line in shell_lines(start, body):
            try:
                parts = commands(line)
            except ValueError as e:  # an untagged block may be output, not shell
                if lang:
                    yield n, None, f"not shell ({e}); tag an output block `text`"
                continue
            for words in parts:
                yield n, words, None


def check_commands(text: str, name: str) -> list[str]:
    out = []
    for n, words, error in shell_commands(text):
        out += [f"{name}:{n}: {p}" for p in ([error] if error else check_command(words))]
    for n, line in prose(text):
        for span in INLINE.findall(line):
            try:
                parts = commands(span)
            except ValueError:
                continue
            out += [f"{name}:{n}: {p}" for words in parts for p in check_command(words, names_only=True)]
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for _, line in prose(path.read_text()):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            s = slug(m.group(1))
            out.add(s if s not in seen else f"{s}-{seen[s]}")
            seen[s] = seen.get(s, 0) + 1
    return out


def check_links(text: str, path: Path, name: str) -> list[str]:
    out = []
    for n, line in prose(text):
        for target in LINK.findall(INLINE.sub("", line)):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not files of this repository
                continue
            file, _, anchor = target.partition("#")
            dest = (path.parent / file).resolve() if file else path
            if not dest.exists():
                out.append(f"{name}:{n}: {target}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                out.append(f"{name}:{n}: {target}: no heading with anchor #{anchor} in {dest.relative_to(REPO)}")
    return out


def _name(path: Path) -> str:
    return str(path.relative_to(REPO))


@pytest.mark.parametrize("path", DOCS, ids=_name)
def test_every_documented_command_is_one_its_parser_accepts(path):
    problems = check_commands(path.read_text(), _name(path))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", DOCS, ids=_name)
def test_every_link_and_image_resolves(path):
    problems = check_links(path.read_text(), path, _name(path))
    assert not problems, "\n".join(problems)


def test_the_docs_call_the_entry_points_they_teach():
    """The checker is not vacuous: the docs' commands reach every kind of entry point it checks."""
    kinds = {entry_point(words)[1] for path in DOCS for _, words, _ in shell_commands(path.read_text())
             if words and entry_point(words)}
    assert {"poolbench", "script", "lm_eval", "inspect"} <= kinds, kinds


# The server README's evaluate snippet names; a loopback stand-in answering the Oracle's action takes its place.
SERVER_URL = "http://127.0.0.1:8000/v1"


def python_blocks(text: str) -> list[tuple[int, str]]:
    return [(start, "\n".join(body)) for lang, start, body in fences(text) if lang in ("python", "py")]


@pytest.fixture(scope="module")
def readme_folder(tmp_path_factory) -> Path:
    """Where README's snippets run: a small ./poolbench built by the real builder."""
    from poolbench_data.hub.build import build_benchmark

    root = tmp_path_factory.mktemp("readme")
    build_benchmark(root / "poolbench", eval_n=3, train_n=2, train_seed=1, players=("oracle", "random"),
                    progress=False)
    return root


@contextlib.contextmanager
def oracle_server(source: str):
    """A loopback OpenAI-compatible server serving the model the snippet names, answering each board with the
    Oracle's action."""
    from poolbench_data.boards.generate import generate
    from poolbench_data.players.baselines import oracle
    from poolbench_data.protocol.prompts import format_action, user_prompt
    from test_experiments import _text, recording_server

    boards = {user_prompt(s): s for s in generate(50)}

    def reply(messages):
        board = boards[_text(messages[1]["content"])]
        return format_action(oracle(board).shot, board)

    with recording_server(reply) as (url, server):
        model = re.search(r"model=\"([^\"]+)\"", source)
        server.model = model.group(1) if model else server.model
        yield url, server


# How a user runs a README block: the arguments after the interpreter, and whether the block goes in on stdin.
RUNS = {"file": (lambda script: [script.name], False), "stdin": (lambda script: ["-"], True)}


@pytest.mark.slow  # builds a dataset; each run starts Python and plays the baselines in worker processes
@pytest.mark.parametrize("how", RUNS)
@pytest.mark.parametrize("start, source", [pytest.param(start, source, id=f"README.md:{start}")
                                           for start, source in python_blocks((REPO / "README.md").read_text())])
def test_every_python_block_of_the_readme_runs_as_a_script(start, source, how, readme_folder):
    """The block as a plain script, no `__main__` guard: the process pool (and any process a library call
    starts) must not run the script again in its children, nor look for a file named `<stdin>`. Two workers, as
    on any machine with two cores (the test runner's own POOLBENCH_WORKERS=1 would play in this process)."""
    from poolbench_data.players.pool import WORKERS_ENV

    args, piped = RUNS[how]
    with oracle_server(source) as (url, server):
        script = readme_folder / f"readme_{start}.py"  # blank lines first: a traceback names README's line
        script.write_text("\n" * (start - 1) + source.replace(SERVER_URL, url))
        done = subprocess.run([sys.executable, *args(script)], cwd=readme_folder, capture_output=True, text=True,
                              input=script.read_text() if piped else None, timeout=600,
                              env={**os.environ, WORKERS_ENV: "2"})
    if done.returncode:
        lines = re.findall(rf'File "(?:[^"]*/)?(?:{re.escape(script.name)}|<stdin>)", line (\d+)', done.stderr)
        error = re.findall(r"^[\w.]+(?:Error|Exception|Pool|Exit)\b.*", done.stderr, re.M) or [
            f"exit {done.returncode}"]
        pytest.fail(f"README.md:{lines[-1] if lines else start}: {error[-1]} (python {' '.join(args(script))})\n"
                    f"{done.stderr[-3000:]}")
    assert SERVER_URL not in source or server.requests, "the snippet never reached the server it names"


def _first_line(text: str, word: str) -> int:
    """The line a message names for `word`: where its shell command starts, else its own line."""
    commands_at = [n for lang, start, body in fences(text) if lang in SHELL
                   for n, line in shell_lines(start, body) if word in line]
    return commands_at[0] if commands_at else next(n for n, line in enumerate(text.splitlines(), 1) if word in line)


def test_a_drifted_doc_fails():
    """The same checks on altered text: a renamed flag, a value of the wrong type, a loop recipe that does not
    exist, a script that does not exist, a dead link and a dead anchor each fail, naming the file and line."""
    readme = (REPO / "README.md").read_text()
    assert not check_commands(readme, "README.md")
    for old, new, words in [("--train_n 400", "--train_boards 400", "--train_boards is not a flag"),
                            ("--samples 4", "--samples four", "invalid int value: 'four'"),
                            ("loop-tools-headline.yaml", "loop-tools-best.yaml", "loop-tools-best.yaml: no such file"),
                            ("--tasks poolbench", "--tasks poolbench_everything", "poolbench_everything not defined"),
                            ("training/sft.py", "training/sft_v2.py", "training/sft_v2.py: no such script"),
                            ("sft-smollm2-135m-cpu.yaml", "sft-smollm2-1b.yaml", "no such file")]:
        assert old in readme, old
        drifted = readme.replace(old, new, 1)
        line = _first_line(drifted, new)
        problems = check_commands(drifted, "README.md")
        assert any(p.startswith(f"README.md:{line}:") and words in p for p in problems), (old, problems)
    path = REPO / "README.md"
    for old, new, words in [("(docs/evaluation.md)", "(docs/evaluating.md)", "no such file"),
                            ("(docs/scenarios.md)", "(docs/scenarios.md#categories)", "no heading"),
                            ("(docs/figures/before_after.png)", "(docs/figures/after.png)", "no such file")]:
        assert old in readme, old
        drifted = readme.replace(old, new, 1)
        problems = set(check_links(drifted, path, "README.md")) - set(check_links(readme, path, "README.md"))
        assert any(p.startswith(f"README.md:{_first_line(drifted, new)}:") and words in p for p in problems), (
            old, problems)


NESTED = re.compile(r"--extra_\w+_args[= ]+\S")  # a loop flag whose value is another script's flags


def test_no_documented_command_hands_flags_on_inside_a_string():
    """Every setting of a documented command is a flag or recipe field of its own (the tool track's headline:
    training/recipes/loop-tools-headline.yaml), never another script's flags inside --extra_<stage>_args."""
    found = []
    for path in DOCS:
        text = path.read_text()
        lines = [(n, line) for _, start, body in fences(text) for n, line in shell_lines(start, body)]
        lines += [(n, span) for n, line in prose(text) for span in INLINE.findall(line)]
        found += [f"{path.relative_to(REPO)}:{n}: {line}" for n, line in lines if NESTED.search(line)]
    for path in [*(REPO / "training").rglob("*.py"), *(REPO / "training" / "recipes").glob("*.yaml"),
                 *(REPO / "builders").glob("*.py"), *(REPO / "analysis").glob("*.py")]:
        found += [f"{path.relative_to(REPO)}:{n}: {line}" for n, line in enumerate(path.read_text().splitlines(), 1)
                  if NESTED.search(line) or re.match(r"\s*extra_\w+_args\s*:", line)]
    assert not found, found


def test_a_flag_renamed_in_the_code_fails_the_docs_that_name_it(monkeypatch):
    """`poolbench eval --max_tokens` documented, then the field renamed in EvalConfig: the doc's line fails."""
    import dataclasses
    import typing

    from poolbench_data.evaluation import config as eval_config

    doc = "# Evaluating\n\n```bash\npoolbench eval --max_tokens 64 --n 5\n```\n"
    assert check_commands(doc, "doc.md") == []
    hints = typing.get_type_hints(eval_config.EvalConfig)
    renamed = dataclasses.make_dataclass("EvalConfig", [
        ("max_new_tokens" if f.name == "max_tokens" else f.name, hints[f.name],
         dataclasses.field(default=f.default, default_factory=f.default_factory, metadata=f.metadata)) for f in dataclasses.fields(eval_config.EvalConfig)
    ], frozen=True)
    from poolbench_data.cli import eval as eval_command

    monkeypatch.setattr(eval_config, "EvalConfig", renamed)
    monkeypatch.setattr(eval_command, "CONFIG", renamed)  # the class `poolbench eval` builds its parser from
    _commands.cache_clear()
    try:
        assert check_commands(doc, "doc.md") == ["doc.md:4: poolbench eval: --max_tokens is not a flag of it"]
    finally:
        monkeypatch.undo()
        _commands.cache_clear()
