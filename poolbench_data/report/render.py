"""Top-down pictures without pooltool's 3D renderer (seconds a frame): each moving ball's path, re-simulated;
the bare board a vision model is shown and the per-category heatmap (Figure 2) in Pillow; the boards people
look at (paper Figures 3-5) through report/figures.py."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from poolbench_data.core.records import Scenario, Shot
from poolbench_data.core.table import geometry

PX = 260  # pixels per metre
PAD = 22
COLORS = {"cue": (250, 250, 250), "solids": (210, 40, 40), "stripes": (50, 90, 220), "eight": (15, 15, 15)}
HEAT_LABEL_W, HEAT_TITLE_H = 200, 40  # the heatmap's player-name column and title band, in pixels


def table_png(balls, title: str, g) -> bytes:
    """Balls (BallPos) on any table's geometry `g` (a game's table), drawn as a board is, as PNG bytes."""
    import io

    buf = io.BytesIO()
    _top_down(balls, title, g).save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def _top_down(balls, title: str, g):
    from PIL import Image, ImageDraw

    w, h = int(g.width * PX) + 2 * PAD, int(g.length * PX) + 2 * PAD + 16
    img = Image.new("RGB", (w, h), (255, 255, 255))
    d = ImageDraw.Draw(img)

    def xy(x, y):  # y up, as in pooltool
        return PAD + x * PX, PAD + 16 + (g.length - y) * PX

    d.rectangle([xy(0, g.length), xy(g.width, 0)], fill=(40, 120, 60), outline=(110, 70, 30), width=4)
    for p in g.pockets:
        cx, cy = xy(p.x, p.y)
        d.ellipse([cx - p.radius * PX, cy - p.radius * PX, cx + p.radius * PX, cy + p.radius * PX], fill=(0, 0, 0))
    r = g.ball_radius * PX
    for b in balls:
        cx, cy = xy(b.x, b.y)
        d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=COLORS[b.group], outline=(0, 0, 0))
        if b.id != "cue":
            d.text((cx - 3 * len(b.id), cy - 5), b.id, fill=(255, 255, 255))
    d.text((4, 2), title[:48], fill=(0, 0, 0))
    return img


def board_png(scenario: Scenario) -> bytes:
    """The bare board as PNG bytes, in Pillow: what a vision model is shown (its pixels are part of that
    experiment's input, so they stay as they were recorded; the figures for people are report/figures.py)."""
    return table_png(scenario.balls, scenario.id, geometry())


def render_board(scenario: Scenario, plays: Sequence[tuple[str, Shot | None, str]], path: Path) -> Path:
    """One panel per (player, shot, verdict), side by side, drawn by report.figures.board_figure (the verdict
    labels a panel without a shot; a shot's caption is its simulated outcome)."""
    from poolbench_data.report.figures import board_figure

    board_figure(scenario, plays, Path(path))
    return Path(path)


def heat_colour(share: float) -> tuple[int, int, int]:
    """A heatmap cell's colour for a share from 0 (white) to 1 (green)."""
    return int(255 - 200 * share), int(255 - 80 * share), int(255 - 200 * share)


def render_heatmap(summary: dict, path: Path, metric: str = "legal_contact") -> Path:
    """Players x categories, cell = metric % (Figure 2 of the paper), with a colour bar from 0 to 100%; the
    baselines by their display names first, then the models."""
    from PIL import Image, ImageDraw

    from poolbench_data.core.records import CATEGORIES
    from poolbench_data.players import display_name, display_order

    players = display_order(summary)
    cats = [c for c in CATEGORIES if any(c in s["by_category"] for s in summary.values())]
    cw, ch, lw, th = 92, 26, HEAT_LABEL_W, HEAT_TITLE_H
    bar_x = lw + cw * len(cats) + 12  # the colour bar, right of the cells
    bar_h = max(ch * len(players), 100)
    img = Image.new("RGB", (bar_x + 56, th + bar_h + 14), (255, 255, 255))
    d = ImageDraw.Draw(img)
    d.text((4, 4), f"{metric.replace('_', ' ')} % by category (count/shots)", fill=(0, 0, 0))
    for j, c in enumerate(cats):
        d.text((lw + j * cw + 4, th - 14), c, fill=(0, 0, 0))
    for i, p in enumerate(players):
        d.text((4, th + i * ch + 8), display_name(p)[:32], fill=(0, 0, 0))
        for j, c in enumerate(cats):
            cell = summary[p]["by_category"].get(c, {}).get(metric)
            box = [lw + j * cw, th + i * ch, lw + (j + 1) * cw - 2, th + (i + 1) * ch - 2]
            if cell is None:
                d.rectangle(box, fill=(230, 230, 230))
                continue
            d.rectangle(box, fill=heat_colour(cell["pct"] / 100.0), outline=(200, 200, 200))  # 0% is white
            d.text((box[0] + 6, box[1] + 7), f"{cell['pct']:.0f} ({cell['k']}/{cell['n']})", fill=(0, 0, 0))
    for y in range(bar_h):  # 100% at the top
        d.line([(bar_x, th + y), (bar_x + 14, th + y)], fill=heat_colour(1 - y / (bar_h - 1)))
    d.rectangle([bar_x, th, bar_x + 14, th + bar_h - 1], outline=(0, 0, 0))
    for share in (1.0, 0.5, 0.0):
        y = th + round((1 - share) * (bar_h - 1))
        d.line([(bar_x + 14, y), (bar_x + 18, y)], fill=(0, 0, 0))
        d.text((bar_x + 21, y - 5), f"{share * 100:.0f}%", fill=(0, 0, 0))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path, optimize=True)
    return path
