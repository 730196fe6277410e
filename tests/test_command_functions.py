"""The library function behind each `poolbench` command, called directly with its config (the commands are thin
wrappers over them, as `poolbench eval` is over `evaluate`): what each plays, scores, writes and returns."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from poolbench_data.boards.generate import generate
from poolbench_data.core.errors import UserError
from poolbench_data.core.physics import simulate
from poolbench_data.core.scoring import score
from poolbench_data.players.baselines import oracle
from poolbench_data.protocol.prompts import format_action

REPO = Path(__file__).resolve().parents[1]


def _traces(path: Path, answers: list[str], name: str = "m") -> Path:
    """An llm_traces.jsonl of `name` answering the first len(answers) evaluation boards, as `poolbench eval`
    writes it (the replay backend)."""
    from poolbench_data.llm.player import EvalSettings, evaluate_model, llm_trace_rows
    from poolbench_data.llm.replay import ReplayBackend

    settings = EvalSettings(model=name, backend="replay")
    records, _ = evaluate_model(generate(len(answers)), ReplayBackend([[a] for a in answers]), settings, player=name,
                                progress=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in llm_trace_rows(records, {}, settings)))
    return path


def _oracle_answers(n: int) -> list[str]:
    return [format_action(oracle(s).shot, s) for s in generate(n)]


def test_baselines_scores_each_players_shots_and_writes_what_it_returns(tmp_path, capsys):
    from poolbench_data.evaluation.baselines import BaselineConfig, baselines

    result = baselines(BaselineConfig(n=3, players="oracle,random", workers=1, out=str(tmp_path / "b.json"),
                                      quiet=True))
    assert result.players == ("oracle", "random") and len(result.runs) == 3
    boards = generate(3)
    assert [run.scenario.id for run in result.runs] == [s.id for s in boards]
    for player in result.players:
        records = [r for run in result.runs for r in run.records if r.player == player]
        assert len(records) == 3
        for r in records:  # each recorded outcome is the simulator's for the recorded shot
            assert r.metrics == score(simulate(next(s for s in boards if s.id == r.scenario_id), r.shot))
        for metric, cell in result.summary[player]["overall"].items():
            assert (cell["k"], cell["n"]) == (sum(bool(getattr(r.metrics, metric)) for r in records), 3)
    assert [r.shot for run in result.runs for r in run.records if r.player == "oracle"] == [
        oracle(s).shot for s in boards]
    assert json.loads(result.path.read_text()) == json.loads(json.dumps(result.results))
    assert set(result.results["labels"]) == {s.id for s in boards}
    out = capsys.readouterr().out
    assert out == f"{result.report}\nresults saved to {result.path}\n"
    with pytest.raises(ValueError, match="--players: unknown player"):  # checked before any board is played
        baselines(BaselineConfig(n=1, players="oracle,genius", out=""))


def test_rounding_replays_the_oracles_aim_rounded(tmp_path):
    from poolbench_data.evaluation.rounding import RoundingConfig, rounding

    result = rounding(RoundingConfig(n=4, decimals="0,1", workers=1, out=str(tmp_path / "r.json"), quiet=True))
    shots = [(s, oracle(s).shot) for s in generate(4)]
    for d in (0, 1):
        metrics = [score(simulate(s, replace(shot, phi=round(shot.phi, d) % 360.0))) for s, shot in shots]
        cell = result.table[f"{d} decimals"]
        assert cell["clean_pot"]["k"] == sum(m.clean_pot for m in metrics) and cell["clean_pot"]["n"] == 4
        assert cell["legal_contact"]["k"] == sum(m.legal_contact for m in metrics)
    exact = [score(simulate(s, shot)) for s, shot in shots]
    assert result.table["exact"]["clean_pot"]["k"] == sum(m.clean_pot for m in exact)
    assert json.loads((tmp_path / "r.json").read_text())["table"] == json.loads(json.dumps(result.table))
    with pytest.raises(UserError, match="--decimals 'one'"):
        rounding(RoundingConfig(decimals="one"))


@pytest.fixture(scope="module")
def rescored(tmp_path_factory):
    """(the traces file, `rescore`'s result): two of the oracle's answers and one that is no action."""
    from poolbench_data.evaluation.rescore import ScoreConfig, rescore

    traces = _traces(tmp_path_factory.mktemp("rescore") / "run" / "llm_traces.jsonl", _oracle_answers(2) + ["no idea"])
    return traces, rescore(ScoreConfig(traces=str(traces)))


@pytest.mark.slow
def test_rescore_scores_the_stored_responses_on_the_boards_they_answer(rescored, tmp_path):
    from poolbench_data.evaluation.rescore import ScoreConfig, rescore

    traces, result = rescored
    assert result.out == traces.parent.parent / "run_rescored" and result.name == "m"
    assert [r.scenario_id for r in result.records] == [s.id for s in generate(3)]
    stored = [json.loads(line) for line in traces.read_text().splitlines()]
    assert [r.metrics.clean_pot for r in result.records] == [row["clean_pot"] for row in stored]
    for s, r in zip(generate(2), result.records):  # the oracle's own action, scored as the oracle's shot
        assert r.metrics == score(simulate(s, oracle(s).shot))
    assert result.records[2].parse_status != "ok"
    with pytest.raises(UserError, match="does not exist"):
        rescore(ScoreConfig(traces=str(tmp_path / "none.jsonl")))


def test_compare_runs_pairs_the_same_shots_of_two_runs(tmp_path, capsys):
    from poolbench_data.report.compare import CompareConfig, compare_runs

    answers = _oracle_answers(4)
    before = _traces(tmp_path / "before" / "llm_traces.jsonl", ["no idea"] * 4)
    after = _traces(tmp_path / "after" / "llm_traces.jsonl", answers)
    result = compare_runs(CompareConfig(before=str(before), after=str(after), out=str(tmp_path / "report.txt")))
    potted = sum(json.loads(line)["clean_pot"] for line in after.read_text().splitlines())
    assert potted > 0
    assert result.counts["n"] == 4 and result.counts["clean_pot"]["after"] == potted
    assert (result.counts["clean_pot"]["only_after"], result.counts["clean_pot"]["only_before"]) == (potted, 0)
    assert result.counts["parse_ok"] == {"before": 0, "after": 4}
    assert (tmp_path / "report.txt").read_text() == result.report + "\n"
    assert capsys.readouterr().out == result.report + "\n"
    assert "before" in result.report.splitlines()[1] and "after" in result.report.splitlines()[1]


@pytest.mark.slow
def test_draw_figures_draws_each_figure_the_files_make(rescored, tmp_path):
    import matplotlib.image

    from poolbench_data.report.figure_inputs import FiguresConfig, draw_figures

    scored = rescored[1]
    pilot = REPO / "docs/results/tool_track_smollm2_135m_cpu.json"
    out = tmp_path / "figures"
    drawn = draw_figures(FiguresConfig(eval_dir=str(scored.out), pilot_json=str(pilot), out=str(out)))
    assert drawn == (out / "table1.png", out / "board_pair.png", out / "before_after.png")
    for png in drawn:
        pixels = matplotlib.image.imread(png)
        assert pixels.ndim == 3 and pixels.std() > 0.05, png  # drawn, not blank
    with pytest.raises(UserError, match="--board"):  # a board the run has no shot on, before any drawing
        draw_figures(FiguresConfig(eval_dir=str(scored.out), board="no-such-board", out=str(tmp_path / "none")))
    assert not (tmp_path / "none").exists()


def test_scenarios_are_the_generated_boards_made_as_they_are_read():
    from poolbench_data.boards.generate import ScenariosConfig, scenarios

    boards = scenarios(ScenariosConfig(n=3, seed=5))
    assert not isinstance(boards, list)  # a stream: `poolbench scenarios --n 1000000` prints as it goes
    assert [s.to_json() for s in boards] == [s.to_json() for s in generate(3, 5)]
    with pytest.raises(UserError, match="--n must be >= 1"):
        scenarios(ScenariosConfig(n=0))


@pytest.mark.slow
def test_play_records_each_answer_then_scores_them_like_a_model(tmp_path, capsys):
    from poolbench_data.human import PlayConfig, play

    boards = generate(2)
    typed = iter(["not json", format_action(oracle(boards[0]).shot, boards[0]), "skip"])
    shown = []
    config = PlayConfig(n=2, brief=True, name="ann", out=str(tmp_path / "ann"))
    result = play(config, read=lambda prompt: next(typed), write=shown.append)
    assert result.name == "ann" and [r.scenario_id for r in result.records] == [s.id for s in boards]
    assert result.records[0].metrics == score(simulate(boards[0], oracle(boards[0]).shot))
    assert result.records[1].parse_status != "ok"  # skipped: no shot
    assert sum("not an action" in line for line in shown) == 1  # the malformed line was asked again
    rows = [json.loads(line) for line in (tmp_path / "ann" / "responses.jsonl").read_text().splitlines()]
    assert [(r["scenario_id"], r["raw_response"]) for r in rows] == [(boards[0].id, format_action(
        oracle(boards[0]).shot, boards[0])), (boards[1].id, "")]

    def stop(prompt):
        raise EOFError

    capsys.readouterr()
    assert play(replace(config, out=str(tmp_path / "bob"), name="bob"), read=stop, write=shown.append) is None
    assert "no board played" in capsys.readouterr().err
    with pytest.raises(UserError, match="--port 8000 is for the browser page"):
        play(replace(config, port=8000))
