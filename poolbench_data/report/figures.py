"""Figures a paper would print, with matplotlib: a board with the shot drawn (the table from pooltool's
geometry, balls in pool colours, each moving ball's path, the aim line, the declared target's ghost ball,
potted balls marked at their pocket, a caption with the action and the outcome), a model-vs-Oracle pair,
the Table-1 bars with Wilson intervals, the before/after bars of a training pilot, and training curves.

Each drawing function returns what it drew (`Drawn`), so tests check content (where the cue ball's path
starts, where a potted ball is marked) rather than pixels. `figure_inputs.draw_figures(config)` draws them from
a run's files: what `poolbench figures` calls."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from poolbench_data.core.records import Scenario, Shot
from poolbench_data.core.table import geometry

# Pool colours by number (stripes 9-15 share the colour of number - 8).
BALL_COLOURS = {"1": "#f4c20d", "2": "#1e4bb8", "3": "#d62d20", "4": "#5b2a86", "5": "#f36f21", "6": "#14803c",
                "7": "#7a1f1f", "8": "#111111"}
CLOTH, RAIL, CUSHION = "#2e7d4f", "#5d3a1a", "#1f5c39"
PATH_COLOURS = ("#ffffff", "#ffd54f", "#4fc3f7", "#ff8a65", "#ce93d8", "#aed581", "#f48fb1", "#90a4ae")
METRIC_LABELS = {"legal_contact": "legal contact", "own_potted": "own potted", "clean_pot": "clean pot",
                 "foul": "foul", "opp_or_8_potted": "opp/8 potted"}


@dataclass
class Drawn:
    """What a board panel shows, in table coordinates (metres): for tests and captions."""

    paths: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # ball -> its path, first point first
    potted: list[tuple[str, str, tuple[float, float]]] = field(default_factory=list)  # (ball, pocket, mark)
    ghost: tuple[float, float] | None = None
    caption: str = ""
    path_lines: dict = field(default_factory=dict)  # ball -> its Line2D


def ball_paths(scenario: Scenario, shot: Shot) -> tuple[list[float], dict[str, list[tuple[float, float]]]]:
    """(times, {ball: trajectory}) of the balls the shot moved, on one time grid, re-simulated for drawing only
    (a pocketed ball's trajectory ends in its pocket)."""
    times, paths = _continuous(scenario, shot)
    return times, {b: xy for b, xy in paths.items() if any(p != xy[0] for p in xy)}


def _continuous(scenario: Scenario, shot: Shot) -> tuple[list[float], dict[str, list[tuple[float, float]]]]:
    import pooltool as pt

    from poolbench_data.core.physics import build_system, engine

    system = build_system(scenario, shot.validated())
    pt.simulate(system, engine=engine(), inplace=True, max_events=1000, continuous=True, dt=0.01)
    times, paths = [], {}
    for bid, ball in system.balls.items():
        rvw, _, t = ball.history_cts.vectorize()
        times = [float(x) for x in t]
        paths[bid] = [(float(p[0][0]), float(p[0][1])) for p in rvw]
    return times, paths


def _colour(ball: str) -> str:
    return "#ffffff" if ball == "cue" else BALL_COLOURS[str((int(ball) - 1) % 8 + 1)]


def draw_table(ax) -> None:
    """Rails, cloth, cushion noses and jaws (pooltool's segments), pockets."""
    from matplotlib.patches import Circle, Rectangle

    g = geometry()
    rail = 0.09
    ax.add_patch(Rectangle((-rail, -rail), g.width + 2 * rail, g.length + 2 * rail, color=RAIL, zorder=0))
    ax.add_patch(Rectangle((0, 0), g.width, g.length, color=CLOTH, zorder=0.5))
    for _, x1, y1, x2, y2 in g.linear_cushions:
        ax.plot([x1, x2], [y1, y2], color=CUSHION, lw=2.2, solid_capstyle="round", zorder=1)
    for _, x, y, r in g.circular_cushions:
        ax.add_patch(Circle((x, y), r, color=CUSHION, zorder=1))
    for p in g.pockets:
        ax.add_patch(Circle((p.x, p.y), p.radius, color="#050505", zorder=1.2))
        ax.text(p.x + (0.15 if p.x > g.width / 2 else -0.15), p.y, p.id, ha="center", va="center",
                fontsize=6.5, color="black", zorder=6)
    ax.set_xlim(-rail - 0.1, g.width + rail + 0.1)
    ax.set_ylim(-rail - 0.02, g.length + rail + 0.02)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])


def draw_ball(ax, ball: str, x: float, y: float, alpha: float = 1.0, zorder: float = 4) -> None:
    from matplotlib.patches import Circle, Rectangle

    r = geometry().ball_radius
    stripe = ball not in ("cue", "8") and int(ball) > 8
    disc = Circle((x, y), r, facecolor="#ffffff" if stripe else _colour(ball), edgecolor="black", lw=0.5,
                  alpha=alpha, zorder=zorder)
    ax.add_patch(disc)
    if stripe:
        band = Rectangle((x - r, y - 0.55 * r), 2 * r, 1.1 * r, color=_colour(ball), alpha=alpha, zorder=zorder)
        band.set_clip_path(disc)
        ax.add_patch(band)
    if ball != "cue":
        ax.text(x, y, ball, ha="center", va="center", fontsize=5.5, zorder=zorder + 0.1, fontweight="bold",
                color="black" if ball in ("1", "9") else "white" if not stripe else "black")


def _outline() -> list:
    """A dark edge for white lines: visible on the cloth and in the legend's white box."""
    import matplotlib.patheffects as pe

    return [pe.withStroke(linewidth=2.4, foreground="#222222")]


def _aim_end(x: float, y: float, phi: float, reach: float = 0.45) -> tuple[float, float]:
    return x + reach * math.cos(math.radians(phi)), y + reach * math.sin(math.radians(phi))


def outcome_text(metrics) -> str:
    """The outcome in words, as `poolbench play` says it."""
    if metrics.foul:
        return "foul: " + ", ".join(metrics.foul_reasons)
    words = ["legal contact" if metrics.legal_contact else "no legal contact"]
    if metrics.own_potted:
        words.append("own ball potted")
    return ", ".join(words)


def draw_board(ax, scenario: Scenario, shot: Shot | None, name: str = "", note: str = "no shot") -> Drawn:
    """One board and, with a shot, everything it did (module docstring)."""
    from poolbench_data.core.candidates import candidate
    from poolbench_data.core.physics import simulate
    from poolbench_data.core.scoring import score

    drawn = Drawn()
    draw_table(ax)
    for b in scenario.balls:
        draw_ball(ax, b.id, b.x, b.y)
    try:
        shot = shot.validated() if shot is not None else None
    except ValueError as e:  # InvalidShot: the panel says why nothing was played
        drawn.caption = f"{name + ': ' if name else ''}not fired ({e})"
        shot = None
    if shot is None:
        drawn.caption = drawn.caption or (f"{name}: {note}" if name else scenario.id)
        ax.set_title(drawn.caption, fontsize=7.5)
        return drawn
    c = scenario.cue
    ax.plot(*zip((c.x, c.y), _aim_end(c.x, c.y, shot.phi)), ls="--", lw=1.0, color="#fafafa", zorder=3,
            label=f"aim {shot.phi:.1f}°", path_effects=_outline())
    if shot.target_ball and shot.target_pocket:
        cand = candidate(scenario, shot.target_ball, shot.target_pocket, "centre", 180.0)
        if cand is not None:
            drawn.ghost = (float(cand.ghost[0]), float(cand.ghost[1]))
            from matplotlib.patches import Circle

            ax.add_patch(Circle(drawn.ghost, geometry().ball_radius, fill=False, ls=":", lw=1.2, ec="#ffffff",
                                zorder=3, label=f"ghost ball ({shot.target_ball} to {shot.target_pocket})",
                                path_effects=_outline()))
    _, paths = ball_paths(scenario, shot)
    for k, (ball, xy) in enumerate(sorted(paths.items(), key=lambda kv: (kv[0] != "cue", kv[0]))):
        colour = PATH_COLOURS[0] if ball == "cue" else _colour(ball) if ball != "8" else "#000000"
        stripe = ball not in ("cue", "8") and int(ball) > 8  # dashed: a stripe shares its solid's colour
        (line,) = ax.plot([p[0] for p in xy], [p[1] for p in xy], color=colour, lw=1.3, alpha=0.9, zorder=2,
                          ls="--" if stripe else "-", label=f"ball {ball}" if ball != "cue" else "cue ball",
                          path_effects=_outline() if ball == "cue" else None)
        drawn.paths[ball], drawn.path_lines[ball] = xy, line
    result = simulate(scenario, shot)
    g = geometry()
    for ball, pid in result.pocketed:
        p = g.pocket(pid)
        drawn.potted.append((ball, pid, (p.x, p.y)))
        ax.plot([p.x], [p.y], marker="X", ms=9, mec="black", mfc=_colour(ball), zorder=5)
    m = score(result)
    target = f"ball {shot.target_ball} to {shot.target_pocket}, " if shot.target_ball else ""
    potted = f"; potted {', '.join(b for b, _, _ in drawn.potted)}" if drawn.potted else ""
    drawn.caption = (f"{name + ': ' if name else ''}{target}phi {shot.phi:.1f}°, V0 {shot.V0:g} m/s\n"
                     f"{outcome_text(m)}{potted}")
    ax.set_title(drawn.caption, fontsize=7)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.01), ncol=2, fontsize=6, frameon=False,
              labelcolor="black", facecolor="none")
    return drawn


def _save(fig, path: Path, dpi: int = 130) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, bbox_inches="tight", facecolor="white")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def _figure(ncols: int, width: float, height: float):
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window
    import matplotlib.pyplot as plt

    return plt.subplots(1, ncols, figsize=(width * ncols, height), squeeze=False, layout="constrained")


def board_figure(scenario: Scenario, plays: Sequence[tuple], path: Path) -> list[Drawn]:
    """One panel per (player, shot[, what to say when there is no shot]), side by side: e.g. a model against
    the Oracle on the same board."""
    fig, axes = _figure(len(plays), 3.3, 5.6)
    drawn = [draw_board(ax, scenario, play[1], play[0], *play[2:]) for ax, play in zip(axes[0], plays)]
    fig.suptitle(f"{scenario.id} ({scenario.category})", fontsize=9)
    _save(fig, path)
    return drawn


def _bars(ax, groups: Sequence[str], series: Mapping[str, Sequence[tuple[int, int]]], ylabel: str) -> None:
    """Grouped bars of k/n in percent with Wilson intervals: one group per entry of `groups`."""
    from poolbench_data.report.stats import wilson

    width = 0.8 / max(1, len(series))
    for j, (label, cells) in enumerate(series.items()):
        xs = [i + (j - (len(series) - 1) / 2) * width for i in range(len(groups))]
        pct = [100 * k / n if n else 0 for k, n in cells]
        # max(0, ...): at k = 0 or k = n the interval's edge is the rate itself, up to rounding
        lo = [max(0.0, p - 100 * wilson(k, n)[0]) for p, (k, n) in zip(pct, cells)]
        hi = [max(0.0, 100 * wilson(k, n)[1] - p) for p, (k, n) in zip(pct, cells)]
        ax.bar(xs, pct, width, label=label, yerr=[lo, hi], capsize=2, error_kw={"lw": 0.8})
    ax.set_xticks(range(len(groups)), groups, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 100)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, ncol=min(len(series), 6), loc="upper center", bbox_to_anchor=(0.5, -0.09), frameon=False)


def table1_figure(summary: Mapping, path: Path,
                  metrics: Sequence[str] = ("legal_contact", "own_potted", "clean_pot", "foul")) -> Path:
    """Table 1 as bars: each player's rate per metric with its Wilson interval (`summarize`'s output)."""
    fig, axes = _figure(1, 7.0, 3.6)
    series = {p: [(s["overall"][m]["k"], s["overall"][m]["n"]) for m in metrics] for p, s in summary.items()}
    n = next(iter(summary.values()))["overall"][metrics[0]]["n"]
    _bars(axes[0][0], [METRIC_LABELS[m] for m in metrics], series, f"% of {n} boards (95% Wilson)")
    return _save(fig, path)


# The free-text SFT model (the paper's protocol, no tool) beside the tool track, where the pilot evaluated it.
PILOT_BLOCKS = (("random", "Random"), ("heuristic_centre", "Heuristic (centre)"),
                ("heuristic_potpoint", "Heuristic (potting point)"), ("free_text_sft", "free-text SFT"),
                ("sft", "tool SFT"), ("dpo", "+ DPO"), ("grpo", "+ GRPO"))


def before_after_figure(pilot: Mapping, path: Path,
                        metrics: Sequence[str] = ("legal_contact", "own_potted", "clean_pot")) -> Path:
    """A pilot's results JSON (docs/results/tool_track_*.json) as bars: baselines, SFT, then each
    preference stage, on the same boards."""
    fig, axes = _figure(1, 7.5, 3.6)
    _bars(axes[0][0], [METRIC_LABELS[m] for m in metrics], pilot_series(pilot, metrics),
          f"% of {pilot['n']} held-out boards (95% Wilson)")
    return _save(fig, path)


def pilot_series(pilot: Mapping, metrics: Sequence[str]) -> dict[str, list[tuple[int, int]]]:
    """Each player the pilot evaluated, in PILOT_BLOCKS' order: its (count, n) for each metric."""
    return {label: [(pilot[key][m], pilot["n"]) for m in metrics] for key, label in PILOT_BLOCKS if pilot.get(key)}


def training_curves_figure(curves: Mapping[str, Sequence[tuple[float, float]]], path: Path) -> Path:
    """The loss by optimizer step of each run: label -> its (step, loss) points, as TRL's log_history in its
    trainer_state.json holds them (report.figure_inputs.read_curve reads one)."""
    fig, axes = _figure(1, 6.0, 3.4)
    ax = axes[0][0]
    for label, pts in curves.items():
        ax.plot(*zip(*pts), marker=".", lw=1, label=label)
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("training loss")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return _save(fig, path)
