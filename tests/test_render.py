from PIL import Image

from poolbench_data.players import BASELINES
from poolbench_data.core.records import Shot
from poolbench_data.report.render import cue_path, render_board, render_heatmap
from poolbench_data.report.tables import summarize
from poolbench_data.players.play import play_baselines


def test_board_png_has_one_panel_per_player_and_a_real_path(benchmark_scenarios, tmp_path):
    s = benchmark_scenarios[0]
    shot = BASELINES["oracle"][1](s).shot
    path = cue_path(s, shot)
    assert len(path) > 10 and path[0] == (s.cue.x, s.cue.y)
    plays = [("oracle", shot, "pot"), ("llm", None, "no shot"), ("bad", Shot(float("nan"), 5.0), "foul")]
    png = render_board(s, plays, tmp_path / "b.png")
    w, h = Image.open(png).size
    assert w == 3 * Image.open(render_board(s, plays[:1], tmp_path / "one.png")).size[0] and h > w / 3


def test_heatmap_png(benchmark_scenarios, tmp_path):
    recs = [r for s in benchmark_scenarios[:7] for r in play_baselines(s, ("heuristic", "random"))]
    png = render_heatmap(summarize(recs, ["heuristic", "random"]), tmp_path / "h.png")
    img = Image.open(png)
    assert img.size[0] > 600 and len(set(img.getdata())) > 5
