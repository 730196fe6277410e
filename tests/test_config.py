"""The one configuration system (core.config): a dataclass, a YAML file, flags that override it; the builders
and the loop parse with it, `poolbench eval` too."""

from __future__ import annotations

from dataclasses import dataclass, field
import pytest

from poolbench_data.core.config import parse, run_main, write_yaml
from poolbench_data.core.errors import UserError


@dataclass
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
