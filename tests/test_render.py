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
    assert drawn.caption.startswith("Oracle: ")  # the display name, not the player's id


def test_a_caption_says_what_happened_in_words(potted):
    """A ball called without a pocket reads as such, not "to None"; the speed has one decimal and its unit."""
    s, shot = potted
    fig, axes = figures._figure(2, 3.3, 5.6)
    no_pocket = Shot(shot.phi, 5.123456, target_ball=shot.target_ball)
    drawn = figures.draw_board(axes[0][0], s, no_pocket, "heuristic-centre")
    first, second = drawn.caption.splitlines()[:2]
    assert first == f"Heuristic, pocket-centre aim: ball {shot.target_ball} (no pocket called)", drawn.caption
    assert second == f"aim {shot.phi:.1f}°, cue ball at 5.1 m/s" and "None" not in drawn.caption
    nothing = figures.draw_board(axes[0][1], s, Shot(shot.phi, 8.0), "my-model")
    assert nothing.caption.startswith("my-model: no ball called\naim")


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
    figures._bars(ax, ["legal contact", "clean pot"], {"a": [(30, 50), (5, 50)], "b": [(50, 50), (0, 50)]}, "%",
                  ceiling=("Oracle (ceiling)", [(45, 50), (40, 50)]))
    bars = [p for p in ax.patches]
    assert [round(b.get_height(), 6) for b in bars] == [60.0, 10.0, 100.0, 0.0]
    # Every bar carries its rate over its interval, so a zero is a visible "0.0" and not an empty slot.
    labels = {(round(t.get_position()[0], 6), t.get_text()) for t in ax.texts}
    assert labels == {(round(b.get_x() + b.get_width() / 2, 6), f"{b.get_height():.1f}") for b in bars}
    # The ceiling: a dashed line across each group at the Oracle's rate, one legend entry.
    (lines,) = [c for c in ax.collections if c.get_label() == "Oracle (ceiling)"]
    assert [(round(a[1], 6), round(b[1], 6), a[0] < i - 0.4 and b[0] > i + 0.4)
            for i, (a, b) in enumerate(lines.get_segments())] == [(90.0, 90.0, True), (80.0, 80.0, True)]
    from matplotlib.container import ErrorbarContainer

    # each error bar is a segment from the interval's low end to its high end
    segments = [seg for c in ax.containers if isinstance(c, ErrorbarContainer) for seg in c.lines[2][0].get_segments()]
    ends = [(round(a[1], 6), round(b[1], 6)) for a, b in segments]
    want = [(round(100 * lo, 6), round(100 * hi, 6)) for lo, hi in (wilson(30, 50), wilson(5, 50), wilson(50, 50),
                                                                      wilson(0, 50))]
    assert ends == want


# The first models' bar colours (figures.MODEL_COLOURS; a baseline's bars are grey).
C0, C1, C2 = ([int(c[i:i + 2], 16) for i in (1, 3, 5)] for c in figures.MODEL_COLOURS[:3])


YMAX = 108  # the bar charts' y axis runs from 0 to 108 %: room for the label over a bar at 100


def spines(png) -> tuple[int, int, float]:
    """(top, bottom, pixels per percentage point) of a bar chart's axes, from its two horizontal spines."""
    img = np.asarray(Image.open(png).convert("RGB")).astype(int)
    dark = (img < 100).all(axis=2).sum(axis=1)
    edges = np.flatnonzero(dark > 0.8 * dark.max())  # the rows of the two horizontal spines
    return edges.min(), edges.max(), (edges.max() - edges.min()) / YMAX


def bar_heights(png, colours) -> list[list[float]]:
    """For each colour (a series), its bars' heights left to right in percentage points, read off the pixels
    between the axes' bottom and top edges (a zero bar is not filled)."""
    img = np.asarray(Image.open(png).convert("RGB")).astype(int)
    top, bottom, per_point = spines(png)
    heights = []
    for colour in colours:
        mask = (img[top:bottom] == colour).all(axis=2)  # rows inside the axes: not the legend's patch below them
        cols = np.flatnonzero(mask.any(axis=0))
        runs = np.split(cols, np.flatnonzero(np.diff(cols) > 1) + 1) if len(cols) else []
        tops = [np.median([np.flatnonzero(mask[:, c])[0] for c in run]) for run in runs]
        heights.append([round((bottom - top - t) / per_point, 1) for t in tops])
    return heights


def assert_heights(got: list[float], rates: list[float]) -> None:
    """Bars of these rates (%, zeros left out: they are not drawn), within about a pixel."""
    want = [r for r in rates if r]
    assert len(got) == len(want) and all(abs(g - w) <= 1.5 for g, w in zip(got, want)), (got, want)


def panels(png) -> list:
    """For each board panel of a PNG, table (x, y) in metres -> (column, row) in pixels, from the cloth's edges."""
    img = np.asarray(Image.open(png).convert("RGB")).astype(int)
    cloth = (img == [int(figures.CLOTH[i:i + 2], 16) for i in (1, 3, 5)]).all(axis=2)
    cols = np.flatnonzero(cloth.any(axis=0))
    g, out = geometry(), []
    for r in np.split(cols, np.flatnonzero(np.diff(cols) > 1) + 1):
        rows = np.flatnonzero(cloth[:, r[0]:r[-1] + 1].any(axis=1))
        out.append(lambda x, y, x0=r[0], x1=r[-1], y0=rows[0], y1=rows[-1]: (
            x0 + x / g.width * (x1 - x0), y1 - y / g.length * (y1 - y0)))
    return out


def seen_near(img, at, colour, r: int = 2, tol: int = 30) -> bool:
    """A pixel of `colour` (RGB, or "white") within r pixels of `at`."""
    col, row = int(round(at[0])), int(round(at[1]))
    patch = img[row - r:row + r + 1, col - r:col + r + 1].reshape(-1, 3)
    if colour == "white":
        return bool((patch > 215).all(axis=1).any())
    return bool((abs(patch - np.array(colour)) < tol).all(axis=1).any())


def assert_shot_drawn(png, s, shot, count: int) -> None:
    """`count` panels, each showing `shot` on board `s`: the cue ball where it stands, its path where the simulator
    sends it, each potted ball marked in its colour at its pocket."""
    img = np.asarray(Image.open(png).convert("RGB")).astype(int)
    g = geometry()
    cue = figures.ball_paths(s, shot)[1]["cue"]
    pocketed = simulate(s, shot).pocketed
    assert pocketed and len(panels(png)) == count
    for to in panels(png):
        assert seen_near(img, to(s.cue.x, s.cue.y), "white", r=1)
        on_path = [seen_near(img, to(x, y), "white") for x, y in cue[::max(1, len(cue) // 40)]]
        assert np.mean(on_path) > 0.9, np.mean(on_path)  # another shot's path: under 0.1
        for ball, pid in pocketed:
            p, colour = g.pocket(pid), [int(figures._colour(ball)[i:i + 2], 16) for i in (1, 3, 5)]
            width = abs(to(g.width, 0)[0] - to(0, 0)[0])
            assert seen_near(img, to(p.x, p.y), colour, r=int(p.radius / g.width * width)), (ball, pid)


def test_figures_command_draws_a_run(potted, benchmark_scenarios, tmp_path, capsys):
    """`poolbench figures` on an evaluation's folder, a pilot's results and a trainer state: the model's shot and
    the Oracle's drawn where the simulator puts them, the bars as tall as the rates, the loss going down."""
    from poolbench_data.protocol.prompts import format_action

    s, shot = potted
    boards = benchmark_scenarios[:benchmark_scenarios.index(s) + 1]
    answers = tmp_path / "answers.jsonl"  # the model answers the Oracle's shot on every board
    answers.write_text("".join(json.dumps({"player": "m", "player_kind": "llm", "scenario_id": b.id, "sample": 0,
                                           "raw_response": format_action(oracle(b).shot, b), "temperature": 0.2})
                               + "\n" for b in boards))
    run = tmp_path / "eval"
    assert main(["eval", "--backend", "replay", "--responses", str(answers), "--name", "m", "--baselines", "random",
                 "--n", str(len(boards)), "--boards", "0", "--quiet", "--out", str(run)]) == 0
    pilot = {"n": 10, "random": {"legal_contact": 3, "own_potted": 1, "clean_pot": 0},
             "sft": {"legal_contact": 6, "own_potted": 4, "clean_pot": 2}, "dpo": None}
    (tmp_path / "p.json").write_text(json.dumps(pilot))
    state = tmp_path / "trainer_state.json"
    state.write_text(json.dumps({"log_history": [{"step": 1, "loss": 0.8}, {"step": 2, "loss": 0.5}]}))
    out = tmp_path / "figs"
    assert main(["figures", "--eval_dir", str(run), "--board", s.id, "--pilot_json", str(tmp_path / "p.json"),
                 "--trainer_state", f"sft={state}", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["before_after.png", "board_pair.png", "table1.png",
                                                      "training_curves.png"]
    # The model's panel and the Oracle's: the same shot, drawn where it went.
    assert_shot_drawn(out / "board_pair.png", s, shot, count=2)
    # Before/after: SFT (60, 40, 20 %), the first model's colour; Random's bars are grey.
    (sft_bars,) = bar_heights(out / "before_after.png", (C0,))
    assert_heights(sft_bars, [60, 40, 20])
    # Table 1: the model's rates from the run's summary (the baselines' bars are grey).
    summary = json.loads((run / "summary.json").read_text())["summary"]
    assert sorted(summary) == ["m", "oracle", "random"]
    metrics = ("legal_contact", "own_potted", "clean_pot", "foul")
    (heights,) = bar_heights(out / "table1.png", (C0,))
    assert_heights(heights, [100 * summary["m"]["overall"][m]["k"] / summary["m"]["overall"][m]["n"] for m in metrics])
    # The training curve: the loss line falls from step 1 to step 2.
    img = np.asarray(Image.open(out / "training_curves.png").convert("RGB")).astype(int)
    rows, cols = np.nonzero((abs(img - np.array(C0)) < 10).all(axis=2))
    assert rows[cols == cols.min()].mean() < rows[cols == cols.max()].mean()  # left end higher up
    assert main(["figures", "--out", str(out)]) == 2
    assert "--pilot_json" in capsys.readouterr().err


def test_before_after_draws_the_free_text_model_where_the_pilot_evaluated_it(tmp_path):
    counts = {"legal_contact": 6, "own_potted": 4, "clean_pot": 2}
    pilot = {"n": 10, "random": counts, "free_text_sft": {**counts, "clean_pot": 1}, "sft": counts, "dpo": None,
             "demonstrations": 16}
    series = figures.pilot_series(pilot, ("legal_contact", "clean_pot"))
    assert series == {"Random": [(6, 10), (2, 10)], "Free-text SFT": [(6, 10), (1, 10)],
                      "Tool SFT (16 demonstrations)": [(6, 10), (2, 10)]}
    assert list(figures.pilot_series({**pilot, "free_text_sft": None}, ("clean_pot",))) == [
        "Random", "Tool SFT (16 demonstrations)"]
    assert figures.before_after_figure(pilot, tmp_path / "a.png").exists()


def test_a_free_text_pilot_draws_its_models_and_the_oracle_s_ceiling(tmp_path):
    """The free-text loop's pilot.json (before, after) draws both models, labelled by what they were trained on,
    and the Oracle it played on the same boards as a dashed line at its rate."""
    pilot = {"n": 10, "after_model": "SFT only", "sft_examples": 16, "dpo_pairs": 0,
             "random": {"legal_contact": 3, "own_potted": 1, "clean_pot": 1},
             "before": {"legal_contact": 0, "own_potted": 0, "clean_pot": 0},
             "after": {"legal_contact": 5, "own_potted": 3, "clean_pot": 2},
             "oracle": {"legal_contact": 9, "own_potted": 8, "clean_pot": 8}}
    assert list(figures.pilot_series(pilot, ("clean_pot",))) == ["Random", "Base model",
                                                                 "Free-text SFT (16 demonstrations)"]
    assert figures.pilot_label({**pilot, "after_model": "SFT + DPO", "dpo_pairs": 12}, "after") == \
        "Free-text SFT + DPO (12 pairs)"
    (tmp_path / "pilot.json").write_text(json.dumps(pilot))
    assert main(["figures", "--pilot_json", str(tmp_path / "pilot.json"), "--out", str(tmp_path / "f")]) == 0
    png = tmp_path / "f" / "before_after.png"
    base, after = bar_heights(png, (C0, C1))
    assert base == [] and len(after) == 3  # the base model's bars are all 0, the SFT model's 50, 30 and 20 %
    assert_heights(after, [50, 30, 20])
    img = np.asarray(Image.open(png).convert("RGB")).astype(int)
    top, bottom, per_point = spines(png)
    dark = (img < 60).all(axis=2)
    cols = np.flatnonzero(dark[bottom])  # the bottom spine: the axes' width
    for rate in (90, 80):  # legal contact's ceiling, and own potted's and clean pot's
        row = int(round(bottom - rate * per_point))
        assert max(dark[r, cols[0]:cols[-1]].mean() for r in range(row - 1, row + 2)) > 0.15, rate


def test_heatmap_cells_follow_the_rates(tmp_path):
    from poolbench_data.report.render import HEAT_LABEL_W, HEAT_TITLE_H, heat_colour

    def cell(k):
        return {"legal_contact": {"k": k, "n": 10, "pct": 10.0 * k, "lo": 0.0, "hi": 100.0}}

    # The model first in the summary, a baseline after it: the baseline's row comes first.
    summary = {"good": {"by_category": {"open": cell(10)}}, "random": {"by_category": {"open": cell(0)}}}
    img = Image.open(render_heatmap(summary, tmp_path / "h.png")).convert("RGB")
    bad, good = (img.getpixel((HEAT_LABEL_W + 3, HEAT_TITLE_H + 26 * i + 3)) for i in (0, 1))
    assert good == heat_colour(1.0) and good[1] > good[0] and bad == (255, 255, 255)  # 100% green, 0% white
    # The colour bar right of the cells: 100% at its top, 0% at its bottom, in the cells' colours.
    pixels = np.asarray(img).astype(int)
    column = pixels[:, HEAT_LABEL_W + 92 + 12 + 7]
    inside = [tuple(p) for p in column[HEAT_TITLE_H + 1:HEAT_TITLE_H + 99]]
    for got, want in ((inside[0], heat_colour(1.0)), (inside[-1], heat_colour(0.0))):
        assert max(abs(g - w) for g, w in zip(got, want)) <= 3, (got, want)
    assert len(set(inside)) > 50  # a gradient, not two blocks


def test_each_run_s_loss_has_an_axis_of_its_own(tmp_path):
    """An SFT's cross-entropy and a DPO's sigmoid loss are not on one scale: each run is a panel of its own, the
    loss named on its axis from what the trainer logged."""
    from poolbench_data.report.figure_inputs import read_curve

    sft, dpo = tmp_path / "sft.json", tmp_path / "dpo.json"
    sft.write_text(json.dumps({"log_history": [{"step": i, "loss": 1.0 / i, "mean_token_accuracy": 0.5}
                                               for i in (1, 2, 3)]}))
    dpo.write_text(json.dumps({"log_history": [{"step": i, "loss": 0.69, "rewards/margins": 0.1} for i in (1, 2)]}))
    assert [read_curve(label, path)[1] for label, path in (("s", sft), ("d", dpo))] == ["sft", "dpo"]
    assert main(["figures", "--trainer_state", f"SFT={sft},DPO={dpo}", "--out", str(tmp_path / "f")]) == 0
    img = np.asarray(Image.open(tmp_path / "f" / "training_curves.png").convert("RGB")).astype(int)
    sft_cols, dpo_cols = (np.nonzero((abs(img - np.array(c)) < 10).all(axis=2))[1] for c in (C0, C1))
    assert len(sft_cols) and len(dpo_cols) and sft_cols.max() < dpo_cols.min()  # side by side, not one axis
    assert figures.LOSS_LABELS["sft"] != figures.LOSS_LABELS["dpo"]


def test_a_board_alone_draws_the_paper_s_heuristic_beside_the_oracle(tmp_path):
    from poolbench_data.boards.generate import generate
    from poolbench_data.players import BASELINES

    s = generate(1, 0, start=4)[0]
    assert main(["figures", "--board", s.id, "--out", str(tmp_path / "f")]) == 0
    png = tmp_path / "f" / "board_pair.png"
    left, right = panels(png)
    img = np.asarray(Image.open(png).convert("RGB")).astype(int)
    for to, player in ((left, "heuristic-centre"), (right, "oracle")):
        shot = BASELINES[player][1](s).shot
        cue = figures.ball_paths(s, shot)[1]["cue"]
        assert np.mean([seen_near(img, to(x, y), "white") for x, y in cue[::max(1, len(cue) // 40)]]) > 0.9, player
