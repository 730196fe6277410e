"""The one configuration system (poolbench_data.config): a frozen dataclass, a YAML file, flags that override
it; every `poolbench` command, builder, benchmark and analysis script and the loop parse with it."""

from __future__ import annotations

from dataclasses import dataclass, field
import pytest

from poolbench_data.config import parse, run_main, write_yaml
from poolbench_data.core.errors import UserError


@dataclass(frozen=True)
class Args:
    """A command's arguments."""

    dataset_dir: str = field(default="poolbench", metadata={"help": "folder"})
    n: int = field(default=50, metadata={"help": "boards"})
    rate: float = field(default=0.5, metadata={"help": "share"})
    push_to_hub: bool = field(default=False, metadata={"help": "push"})
    resume: bool = field(default=True, metadata={"help": "resume"})


def test_yaml_then_flags_then_defaults(tmp_path):
    path = tmp_path / "a.yaml"
    path.write_text("n: 7\nrate: 1\npush_to_hub: true\n")
    assert parse(Args, ["--config", str(path), "--n", "9"]) == Args(n=9, rate=1, push_to_hub=True)
    assert parse(Args, ["--no-resume", "--dataset_dir", "d"]) == Args(dataset_dir="d", resume=False)
    assert parse(Args, []) == Args()
    write_yaml(Args(n=3, resume=False), path)
    assert path.read_text() == "n: 3\nresume: false\n" and parse(Args, ["--config", str(path)]) == Args(n=3,
                                                                                                      resume=False)


@pytest.mark.parametrize("text, words", [("nn: 3\n", "did you mean 'n'"), ("n: three\n", "n is 'three', expected int"),
                                         ("- 1\n", "not `field: value`"), ("n: [1\n", "is not YAML")])
def test_a_bad_config_file_is_one_user_error(tmp_path, text, words):
    path = tmp_path / "a.yaml"
    path.write_text(text)
    with pytest.raises(UserError, match=words.replace("[", r"\[")):
        parse(Args, ["--config", str(path)])
    with pytest.raises(UserError, match="no such file"):
        parse(Args, ["--config", str(tmp_path / "none.yaml")])


def test_run_main_turns_a_mistake_into_exit_2(capsys):
    def bad():
        raise UserError("--n must be >= 1 (got 0)")

    assert run_main(bad) == 2
    assert capsys.readouterr().err == "error: --n must be >= 1 (got 0)\n"


def test_a_builder_reads_its_arguments_from_a_yaml_file(tmp_path, capsys):
    from test_tool_sft import _load

    module = _load("builders/build_pairs")
    path = tmp_path / "pairs.yaml"
    path.write_text(f"dataset_dir: {tmp_path / 'nowhere'}\n")
    assert module.main(["--config", str(path)]) == 2  # the folder from the file is the one checked
    assert str(tmp_path / "nowhere") in capsys.readouterr().err


@dataclass(frozen=True)
class Files:
    """A command with positional arguments, a repeated flag and a required flag."""

    before: str = field(metadata={"help": "first file", "positional": True})
    dataset_dir: str = field(metadata={"help": "folder"})
    after: str = field(default="", metadata={"help": "second file", "positional": True})
    eval_dir: tuple[str, ...] = field(default=(), metadata={"help": "a folder"})
    mode: str = field(default="a", metadata={"help": "how", "choices": ("a", "b")})


def test_positionals_repeated_flags_and_required_fields(tmp_path):
    got = parse(Files, ["x", "y", "--eval_dir", "d1", "--dataset_dir", "data", "--eval_dir", "d2"])
    assert got == Files(before="x", after="y", dataset_dir="data", eval_dir=("d1", "d2"))
    assert parse(Files, ["x", "--dataset_dir", "data"]) == Files(before="x", dataset_dir="data")
    path = tmp_path / "f.yaml"
    path.write_text("dataset_dir: data\neval_dir: [d3]\n")  # a required flag may come from the file
    assert parse(Files, ["x", "--config", str(path)]) == Files(before="x", dataset_dir="data", eval_dir=("d3",))
    assert parse(Files, ["x", "--config", str(path), "--eval_dir", "d4"]).eval_dir == ("d4",)  # the flag wins
    write_yaml(Files(before="x", dataset_dir="data", eval_dir=("d1", "d2")), path)
    assert parse(Files, ["x", "--config", str(path)]) == Files(before="x", dataset_dir="data", eval_dir=("d1", "d2"))
    with pytest.raises(UserError, match="the following arguments are required: --dataset_dir"):
        parse(Files, ["x"])
    path.write_text("eval_dir: d1\n")
    with pytest.raises(UserError, match="eval_dir is 'd1', expected a list of str"):
        parse(Files, ["x", "--config", str(path)])


@pytest.mark.parametrize("argv, words", [([], "the following arguments are required: before"),
                                         (["x", "--dataset_dir", "d", "--mode", "c"], "--mode: invalid choice"),
                                         (["x", "--dataset_dir", "d", "--eval"], "unrecognized arguments: --eval")])
def test_a_bad_command_line_is_one_line_and_exit_2(argv, words, capsys):
    with pytest.raises(SystemExit) as done:
        parse(Files, argv, prog="files")
    err = capsys.readouterr().err
    assert done.value.code == 2 and len(err.strip().splitlines()) == 1 and words in err, err
    assert err.startswith("error: files: ") and err.strip().endswith("see files --help")


def test_help_shows_each_fields_help_and_default(capsys):
    with pytest.raises(SystemExit):
        parse(Files, ["--help"], prog="files")
    text = " ".join(capsys.readouterr().out.split())
    assert "first file" in text and "a folder (default: ()) (repeat the flag for more)" in text
    assert "how (default: 'a')" in text and "{a,b}" in text


# A settings file that is no plain `field: value` list: each is refused in one line naming the file and the fix.
REFUSED = {
    "alias": (b"n: &a 3\nrate: *a\n", "anchor or alias (line 1)"),
    "merge-key": (b"base: &b {n: 3}\n<<: *b\n", "anchor or alias"),
    "duplicate-key": (b"n: 3\nrate: 1\nn: 4\n", "gives 'n' twice (line 3); keep one"),
    "not-utf8": (b"dataset_dir: caf\xe9\n", "is not UTF-8 text (byte 0xe9 at offset 16)"),
    "long-value": (b"n: " + b"x" * 100_000 + b"\n", "n is 'xxxx"),
    "long-key": (b"? " + b"k" * 100_000 + b"\n: 1\n", "unknown setting 'kkkk"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_config_file_that_is_not_plain_settings_is_refused_in_a_short_line(tmp_path, case):
    text, words = REFUSED[case]
    path = tmp_path / "a.yaml"
    path.write_bytes(text)
    with pytest.raises(UserError) as refused:
        parse(Args, ["--config", str(path)])
    message = str(refused.value)
    assert message.startswith(f"--config {path}") and words in message and len(message) < 300, message[:500]


def test_a_folder_and_a_second_config_are_named(tmp_path, capsys):
    with pytest.raises(UserError, match=f"--config {tmp_path} is a folder; give a YAML file"):
        parse(Args, ["--config", str(tmp_path)])
    (tmp_path / "a.yaml").write_text("n: 3\n")
    (tmp_path / "b.yaml").write_text("n: 4\n")
    with pytest.raises(SystemExit) as done:
        parse(Args, ["--config", str(tmp_path / "a.yaml"), "--config", str(tmp_path / "b.yaml")], prog="args")
    err = capsys.readouterr().err
    assert done.value.code == 2 and len(err.strip().splitlines()) == 1 and "--config: given twice" in err, err


def test_nested_aliases_are_refused_before_they_expand(tmp_path):
    """The billion laughs at the real command line: nine levels of nine aliases in a setting's value is ~400
    bytes that the type error would print as 9**9 items; here six levels (531,441 items, megabytes printed),
    and the refusal is one short line, exit 2."""
    import subprocess
    import sys

    levels = ['&a0 ["x","x","x","x","x","x","x","x","x"]']
    levels += [f"&a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 6)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("out: [" + ", ".join(levels) + "]\n")
    done = subprocess.run([sys.executable, "-m", "poolbench_data.cli", "score", "traces.jsonl", "--config", str(bomb)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr) < 300, done.stderr[:500]
    assert done.stderr.startswith(f"error: --config {bomb} uses a YAML anchor or alias (line 1)"), done.stderr[:500]


def test_an_error_quoting_a_huge_value_prints_one_bounded_line_with_its_fix(tmp_path, capsys):
    """A check that quotes what it refuses (here `--players`' unknown names, from a --config file) may quote
    megabytes: the line keeps its start and its fix, and drops the middle."""
    from poolbench_data.cli import main

    path = tmp_path / "b.yaml"
    path.write_text("players: " + "z" * 100_000 + "\n")
    assert main(["baseline", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err) < 1100 and len(err.strip().splitlines()) == 1, len(err)
    assert err.startswith("error: --players: unknown player") and err.strip().endswith("random"), err
