"""The pictures show what happened: checked by content (where a path starts, where a pot is marked, what a
caption says, how tall a bar is), not by counting colours."""

import json
import math

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("matplotlib")

from poolbench_data.cli import main  # noqa: E402
from poolbench_data.core.physics import simulate  # noqa: E402
from poolbench_data.core.records import Shot  # noqa: E402
from poolbench_data.core.scoring import score  # noqa: E402
from poolbench_data.core.table import geometry  # noqa: E402
from poolbench_data.players import oracle  # noqa: E402
from poolbench_data.report import figures  # noqa: E402
from poolbench_data.report.render import board_png, render_board, render_heatmap  # noqa: E402


@pytest.fixture(scope="module")
def potted(benchmark_scenarios):
    """The first board where the Oracle pots cleanly, and its shot."""
    for s in benchmark_scenarios:
        shot = oracle(s).shot
        if score(simulate(s, shot)).clean_pot:
            return s, shot
    raise AssertionError("the Oracle pots on none of the benchmark boards")


def test_the_board_shows_the_shot_where_it_happened(potted):
    s, shot = potted
    fig, axes = figures._figure(1, 3.3, 5.6)
    ax = axes[0][0]
    drawn = figures.draw_board(ax, s, shot, "oracle")
    fig.canvas.draw()
    pixels = np.asarray(fig.canvas.buffer_rgba())
    # The cue ball's path starts at the cue ball, in table coordinates and on the rendered image, where the
    # pixel is the cue ball's white.
    cue = (s.cue.x, s.cue.y)
    assert drawn.paths["cue"][0] == pytest.approx(cue)
    start = ax.transData.transform(drawn.path_lines["cue"].get_xydata()[0])
    centre = ax.transData.transform(cue)
    assert start == pytest.approx(centre, abs=0.5)
    col, row = int(round(centre[0])), pixels.shape[0] - int(round(centre[1]))
    assert (pixels[row, col, :3] > 230).all(), pixels[row, col]
    # Each potted ball is marked at the pocket the simulator put it in, and its path ends there.
    result = simulate(s, shot)
    assert [(b, p) for b, p, _ in drawn.potted] == list(result.pocketed) and drawn.potted
    for ball, pid, mark in drawn.potted:
        pocket = geometry().pocket(pid)
        assert mark == (pocket.x, pocket.y)
        end = drawn.paths[ball][-1]
        assert math.dist(end, mark) < pocket.radius + geometry().ball_radius
    # The declared target's ghost ball sits one ball diameter from the target, on the far side from the pocket.
    target = next(b for b in s.balls if b.id == shot.target_ball)
    assert math.dist(drawn.ghost, (target.x, target.y)) == pytest.approx(2 * geometry().ball_radius, rel=1e-3)
    assert f"ball {shot.target_ball} to {shot.target_pocket}" in drawn.caption
    assert "own ball potted" in drawn.caption and "foul" not in drawn.caption


def test_a_shot_that_cannot_be_fired_gets_a_panel_saying_why(potted, tmp_path):
    s, shot = potted
    plays = [("model", Shot(float("nan"), 5.0), "foul"), ("llm", None, "request failed"), ("oracle", shot, "pot")]
    drawn = figures.board_figure(s, plays, tmp_path / "b.png")
    assert "not fired" in drawn[0].caption and not drawn[0].paths
    assert drawn[1].caption == "llm: request failed"
    assert drawn[2].potted
    assert render_board(s, plays, tmp_path / "r.png").is_file()  # what the evaluator and `play` call


def test_the_vision_input_is_the_bare_board(benchmark_scenarios):
    import io

    s = benchmark_scenarios[0]
    img = Image.open(io.BytesIO(board_png(s)))
    assert img.size[0] < img.size[1]  # the table stands up, as in the prompt's coordinates


def test_bars_are_the_rates_with_wilson_intervals():
    from poolbench_data.report.stats import wilson

    fig, axes = figures._figure(1, 6, 3)
    ax = axes[0][0]
    figures._bars(ax, ["legal contact", "clean pot"], {"a": [(30, 50), (5, 50)], "b": [(50, 50), (0, 50)]}, "%")
    bars = [p for p in ax.patches]
    assert [round(b.get_height(), 6) for b in bars] == [60.0, 10.0, 100.0, 0.0]
    from matplotlib.container import ErrorbarContainer

    # each error bar is a segment from the interval's low end to its high end
    segments = [seg for c in ax.containers if isinstance(c, ErrorbarContainer) for seg in c.lines[2][0].get_segments()]
    ends = [(round(a[1], 6), round(b[1], 6)) for a, b in segments]
    want = [(round(100 * lo, 6), round(100 * hi, 6)) for lo, hi in (wilson(30, 50), wilson(5, 50), wilson(50, 50),
                                                                      wilson(0, 50))]
    assert ends == want


def test_figures_command_draws_a_run(potted, tmp_path, capsys):
    pilot = {"n": 10, "random": {"legal_contact": 3, "own_potted": 1, "clean_pot": 0},
             "sft": {"legal_contact": 6, "own_potted": 4, "clean_pot": 2}, "dpo": None}
    (tmp_path / "p.json").write_text(json.dumps(pilot))
    state = tmp_path / "trainer_state.json"
    state.write_text(json.dumps({"log_history": [{"step": 1, "loss": 0.8}, {"step": 2, "loss": 0.5}]}))
    out = tmp_path / "figs"
    assert main(["figures", "--pilot_json", str(tmp_path / "p.json"), "--trainer_state", f"sft={state}",
                 "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["before_after.png", "training_curves.png"]
    assert main(["figures", "--out", str(out)]) == 2
    assert "--pilot_json" in capsys.readouterr().err


def test_before_after_draws_the_free_text_model_where_the_pilot_evaluated_it(tmp_path):
    counts = {"legal_contact": 6, "own_potted": 4, "clean_pot": 2}
    pilot = {"n": 10, "random": counts, "free_text_sft": {**counts, "clean_pot": 1}, "sft": counts, "dpo": None}
    series = figures.pilot_series(pilot, ("legal_contact", "clean_pot"))
    assert series == {"Random": [(6, 10), (2, 10)], "free-text SFT": [(6, 10), (1, 10)], "tool SFT": [(6, 10), (2, 10)]}
    assert list(figures.pilot_series({**pilot, "free_text_sft": None}, ("clean_pot",))) == ["Random", "tool SFT"]
    assert figures.before_after_figure(pilot, tmp_path / "a.png").exists()


def test_heatmap_cells_follow_the_rates(tmp_path):
    def cell(k):
        return {"legal_contact": {"k": k, "n": 10, "pct": 10.0 * k, "lo": 0.0, "hi": 100.0}}

    summary = {"good": {"by_category": {"open": cell(10)}}, "bad": {"by_category": {"open": cell(0)}}}
    img = Image.open(render_heatmap(summary, tmp_path / "h.png")).convert("RGB")
    good, bad = img.getpixel((170 + 3, 40 + 3)), img.getpixel((170 + 3, 40 + 26 + 3))
    assert good[1] > good[0] and bad == (255, 255, 255)  # 100% is green, 0% is white
