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
