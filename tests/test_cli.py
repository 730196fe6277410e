import json

import pytest

from poolbench_data.cli import main


@pytest.mark.slow
def test_baseline_command_prints_table_and_saves_json(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["baseline", "--n", "7", "--workers", "2", "--out", str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    for word in ("Contact %", "Potted %", "Foul %", "Clean pot %", "oracle", "heuristic-centre", "random",
                 "Straight-pottable boards", "by category"):
        assert word in text
    data = json.loads(out.read_text())
    assert set(data["summary"]) == {"oracle", "heuristic-centre", "heuristic", "random"}
    assert data["provenance"]["versions"]["pooltool"] == "0.6.0"
    assert len(data["labels"]) == 7
    o = data["summary"]["oracle"]["overall"]["legal_contact"]
    assert o["n"] == 7 and 0 <= o["lo"] <= o["pct"] <= o["hi"] <= 100


def test_bad_arguments_are_refused(capsys):
    assert main(["baseline", "--players", "oracle,genius", "--out", ""]) == 2
    assert "unknown player" in capsys.readouterr().err
    assert main(["baseline", "--n", "0"]) == 2
    assert capsys.readouterr().err.strip() == "error: --n must be >= 1 (got 0)"


def test_a_negative_field_reads_as_a_flag_and_its_opposite(tmp_path, capsys):
    """A bool field named no_X is --no_X, undone by --X: never `--no-no_X`."""
    with pytest.raises(SystemExit):
        main(["baseline", "--help"])
    text = capsys.readouterr().out
    assert "--no_label, --label" in text and "no-no_" not in text and "--label turns it off" in text
    config = tmp_path / "b.yaml"
    config.write_text("no_label: true\n")
    from poolbench_data.cli import build_parser
    from poolbench_data.config import from_namespace
    from poolbench_data.evaluation.baselines import BaselineConfig

    parse = lambda *argv: from_namespace(BaselineConfig, build_parser().parse_args(["baseline", *argv]))  # noqa: E731
    assert parse("--no_label").no_label and not parse("--config", str(config), "--label").no_label
    assert parse("--config", str(config)).no_label and not parse().no_label
