"""Figures a paper would print, with matplotlib: a board with the shot drawn (the table from pooltool's
geometry, balls in pool colours, each moving ball's path, the aim line, the declared target's ghost ball,
potted balls marked at their pocket, a caption in words), two players' shots on one board, the Table-1 bars
with Wilson intervals (baselines by display name in a fixed order, then the models; lower-is-better metrics in
a panel of their own; every bar labelled with its rate), the before/after bars of a training pilot with the
Oracle's ceiling, and each run's training loss on an axis of its own, in matplotlib's default style and font.

Each drawing function returns what it drew (`Drawn`), so tests check content (where the cue ball's path
starts, where a potted ball is marked) rather than pixels. `figure_inputs.draw_figures(config)` draws them from
a run's files: what `poolbench figures` calls."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from poolbench_data.core.records import Scenario, Shot
from poolbench_data.core.table import geometry
from poolbench_data.players import DISPLAY_NAMES, display_name, display_order

# Pool colours by number (stripes 9-15 share the colour of number - 8).
BALL_COLOURS = {"1": "#f4c20d", "2": "#1e4bb8", "3": "#d62d20", "4": "#5b2a86", "5": "#f36f21", "6": "#14803c",
                "7": "#7a1f1f", "8": "#111111"}
CLOTH, RAIL, CUSHION = "#2e7d4f", "#5d3a1a", "#1f5c39"
PATH_COLOURS = ("#ffffff", "#ffd54f", "#4fc3f7", "#ff8a65", "#ce93d8", "#aed581", "#f48fb1", "#90a4ae")
METRIC_LABELS = {"legal_contact": "legal contact", "own_potted": "own potted", "clean_pot": "clean pot",
                 "foul": "foul", "opp_or_8_potted": "opp/8 potted"}
LOWER_IS_BETTER = ("foul", "opp_or_8_potted")  # drawn in a panel of their own
# Bars: each baseline a grey (by DISPLAY_NAMES' order, lightest for Random, darkest for the kick Oracle), each
# model a colour, in the order the models come.
BASELINE_GREYS = dict(zip(DISPLAY_NAMES, ("#e6e6e6", "#c6c6c6", "#a6a6a6", "#8a8a8a", "#6e6e6e", "#525252")))
MODEL_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")


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


def called(shot: Shot) -> str:
    """The ball and pocket the shot called, in words."""
    if not shot.target_ball:
        return "no ball called"
    return f"ball {shot.target_ball} " + (f"to {shot.target_pocket}" if shot.target_pocket else "(no pocket called)")


def potted_text(potted: Sequence[tuple[str, str, tuple[float, float]]]) -> str:
    return "; potted " + ", ".join(f"{b} in {p}" for b, p, _ in potted) if potted else ""


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
        drawn.caption = f"{display_name(name) + ': ' if name else ''}not fired ({e})"
        shot = None
    who = display_name(name)
    if shot is None:
        drawn.caption = drawn.caption or (f"{who}: {note}" if name else scenario.id)
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
    drawn.caption = (f"{who + ': ' if name else ''}{called(shot)}\n"
                     f"aim {shot.phi:.1f}°, cue ball at {shot.V0:.1f} m/s\n"
                     f"{outcome_text(m)}{potted_text(drawn.potted)}")
    ax.set_title(drawn.caption, fontsize=7)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.01), ncol=2, fontsize=6, frameon=False,
              labelcolor="black", facecolor="none")
    return drawn


@contextmanager
def _style() -> Iterator[None]:
    """matplotlib's default style and its own DejaVu Sans, whatever the user's matplotlibrc says: the same
    inputs draw the same pixels (tests/test_figures_committed.py redraws docs/figures and compares)."""
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window
    import matplotlib.pyplot as plt

    with plt.style.context("default"), matplotlib.rc_context({"font.family": "DejaVu Sans"}):
        yield


def _save(fig, path: Path, dpi: int = 130) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # No "Software" entry: the PNG's bytes do not name matplotlib's version.
    fig.savefig(path, dpi=dpi, bbox_inches="tight", facecolor="white", metadata={"Software": None})
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
    with _style():
        fig, axes = _figure(len(plays), 3.3, 5.6)
        drawn = [draw_board(ax, scenario, play[1], play[0], *play[2:]) for ax, play in zip(axes[0], plays)]
        fig.suptitle(f"board {scenario.id} ({scenario.category})", fontsize=9)
        _save(fig, path)
    return drawn


def _bars(ax, groups: Sequence[str], series: Mapping[str, Sequence[tuple[int, int]]], ylabel: str,
          colours: Mapping[str, str] | None = None,
          ceiling: tuple[str, Sequence[tuple[int, int]]] | None = None) -> None:
    """Grouped bars of k/n in percent with Wilson intervals, one group per entry of `groups`, each bar labelled
    with its rate (a zero reads "0"); `ceiling`: (label, one k/n per group), drawn as a dashed line across
    each group."""
    from poolbench_data.report.stats import wilson

    width = 0.8 / max(1, len(series))
    for j, (label, cells) in enumerate(series.items()):
        xs = [i + (j - (len(series) - 1) / 2) * width for i in range(len(groups))]
        pct = [100 * k / n if n else 0 for k, n in cells]
        # max(0, ...): at k = 0 or k = n the interval's edge is the rate itself, up to rounding
        lo = [max(0.0, p - 100 * wilson(k, n)[0]) for p, (k, n) in zip(pct, cells)]
        hi = [max(0.0, 100 * wilson(k, n)[1] - p) for p, (k, n) in zip(pct, cells)]
        ax.bar(xs, pct, width, label=label, yerr=[lo, hi], capsize=1.5, error_kw={"lw": 0.7},
               color=(colours or {}).get(label), edgecolor="black", linewidth=0.4)
        for x, p, h in zip(xs, pct, hi):
            ax.text(x, p + h + 1, f"{p:.1f}", ha="center", va="bottom", fontsize=5.5)
    if ceiling is not None:
        label, cells = ceiling
        ax.hlines([100 * k / n for k, n in cells], [i - 0.45 for i in range(len(cells))],
                  [i + 0.45 for i in range(len(cells))], colors="black", linestyles="--", lw=1.1, zorder=3,
                  label=label)
    ax.set_xticks(range(len(groups)), groups, fontsize=8)
    ax.set_xlim(-0.5, len(groups) - 0.5)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_ylim(0, 108)  # room for a label over a bar at 100
    ax.set_yticks(range(0, 101, 20))
    ax.tick_params(axis="y", labelsize=7)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)


def _legend(fig, ax, ncol: int) -> None:
    """One legend for the figure, under its panels."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=ncol, fontsize=7, frameon=False)


def colours_of(players: Sequence[str]) -> dict[str, str]:
    """Each player's bar colour: a baseline's grey (BASELINE_GREYS), each model the next of MODEL_COLOURS."""
    models = iter(MODEL_COLOURS * (1 + len(players) // len(MODEL_COLOURS)))
    return {p: BASELINE_GREYS[p] if p in BASELINE_GREYS else next(models) for p in players}


def _y_label(ns: set[int], what: str) -> str:
    return f"% of {ns.pop()} {what} (95% Wilson)" if len(ns) == 1 else "% of shots (95% Wilson)"


def table1_figure(summary: Mapping, path: Path,
                  metrics: Sequence[str] = ("legal_contact", "own_potted", "clean_pot", "foul")) -> Path:
    """Table 1 as bars: each player's rate per metric with its Wilson interval (`summarize`'s output), the
    baselines first in DISPLAY_NAMES' order, then the models; a lower-is-better metric in a panel of its own."""
    players = display_order(summary)
    colours = {display_name(p): c for p, c in colours_of(players).items()}
    higher = [m for m in metrics if m not in LOWER_IS_BETTER]
    lower = [m for m in metrics if m in LOWER_IS_BETTER]
    panels = [(ms, title) for ms, title in ((higher, "higher is better"), (lower, "lower is better")) if ms]
    ns = {summary[p]["overall"][m]["n"] for p in players for m in metrics}
    with _style():
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, len(panels), figsize=(2.2 + 1.9 * len(metrics), 3.6), squeeze=False,
                                 width_ratios=[len(ms) + 0.3 for ms, _ in panels], layout="constrained")
        for ax, (ms, title) in zip(axes[0], panels):
            series = {display_name(p): [(summary[p]["overall"][m]["k"], summary[p]["overall"][m]["n"]) for m in ms]
                      for p in players}
            _bars(ax, [METRIC_LABELS[m] for m in ms], series, _y_label(set(ns), "boards"), colours)
            ax.set_title(title, fontsize=8)
        for ax in axes[0][1:]:
            ax.set_ylabel("")
        _legend(fig, axes[0][0], ncol=min(len(players), 3))
        return _save(fig, path)


# A pilot JSON's blocks (report/pilot.py writes them) in the order the figures show them: the baselines (by
# the player each block counts), then the models in the order they were trained.
PILOT_BASELINES = {"random": "random", "heuristic_centre": "heuristic-centre", "heuristic_potpoint": "heuristic"}
PILOT_MODELS = ("before", "after", "free_text_sft", "sft", "dpo", "grpo")
PILOT_BLOCKS = (*PILOT_BASELINES, *PILOT_MODELS)
# Where the pilot also played the Oracle on its boards, the block holding its counts: the ceiling line.
PILOT_CEILING = "oracle"
# The counts a model's label names, where the pilot holds them (null or missing: no count in the label).
PILOT_LABEL_COUNTS = ("sft_examples", "demonstrations", "dpo_pairs", "grpo_steps")


def pilot_label(pilot: Mapping, key: str) -> str:
    """What before_after.png calls a block of the pilot: a baseline's display name, a model's training with
    the count it was trained on (the free-text loop's `after` is its --after_model)."""
    if key in PILOT_BASELINES:
        return display_name(PILOT_BASELINES[key])

    def count(field: str, unit: str) -> str:
        return f" ({pilot[field]} {unit})" if pilot.get(field) is not None else ""

    if key == "after":
        dpo = pilot.get("after_model") == "SFT + DPO"
        return "Free-text SFT" + (" + DPO" + count("dpo_pairs", "pairs") if dpo else
                                  count("sft_examples", "demonstrations"))
    return {"before": "Base model", "free_text_sft": "Free-text SFT",
            "sft": "Tool SFT" + count("demonstrations", "demonstrations"),
            "dpo": "Tool SFT + DPO" + count("dpo_pairs", "pairs"),
            "grpo": "Tool SFT + GRPO" + count("grpo_steps", "steps")}[key]


def pilot_series(pilot: Mapping, metrics: Sequence[str]) -> dict[str, list[tuple[int, int]]]:
    """Each player the pilot evaluated, in PILOT_BLOCKS' order: label -> its (count, n) for each metric."""
    return {pilot_label(pilot, key): [(pilot[key][m], pilot["n"]) for m in metrics]
            for key in PILOT_BLOCKS if pilot.get(key)}


def before_after_figure(pilot: Mapping, path: Path,
                        metrics: Sequence[str] = ("legal_contact", "own_potted", "clean_pot"),
                        ceiling: Mapping[str, tuple[int, int]] | None = None) -> Path:
    """A pilot's results JSON (docs/results/tool_track_*.json) as bars: baselines, then each model in training
    order, on the same boards; `ceiling`: the Oracle's (count, n) for each metric on those boards, a dashed line
    (default: the pilot's own `oracle` block, where it has one)."""
    if ceiling is None and pilot.get(PILOT_CEILING):
        ceiling = {m: (pilot[PILOT_CEILING][m], pilot["n"]) for m in metrics}
    keys = [key for key in PILOT_BLOCKS if pilot.get(key)]
    colours = dict(zip((pilot_label(pilot, k) for k in keys),
                       colours_of([PILOT_BASELINES.get(k, k) for k in keys]).values()))
    with _style():
        fig, axes = _figure(1, 7.5, 3.8)
        ax = axes[0][0]
        _bars(ax, [METRIC_LABELS[m] for m in metrics], pilot_series(pilot, metrics),
              f"% of {pilot['n']} held-out boards (95% Wilson)", colours,
              ("Oracle (ceiling)", [ceiling[m] for m in metrics]) if ceiling else None)
        _legend(fig, ax, ncol=4)
        return _save(fig, path)


# What a run's loss measures, by the trainer that logged it (report.figure_inputs.loss_kind tells them apart).
LOSS_LABELS = {"sft": "cross-entropy (nats per token)", "dpo": "DPO sigmoid loss (nats)", "grpo": "GRPO loss",
               "": "training loss"}


def training_curves_figure(curves: Mapping[str, Sequence[tuple[float, float]]], path: Path,
                           kinds: Mapping[str, str] | None = None) -> Path:
    """The loss by optimizer step of each run, each in a panel of its own (an SFT's cross-entropy and DPO's
    sigmoid loss are not on one scale): label -> its (step, loss) points, as TRL's log_history in its
    trainer_state.json holds them (report.figure_inputs.read_curve reads one); `kinds`: label -> a key of
    LOSS_LABELS, the y axis' name."""
    with _style():
        fig, axes = _figure(len(curves), 3.6, 3.0)
        for ax, (label, pts), colour in zip(axes[0], curves.items(), MODEL_COLOURS * len(curves)):
            ax.plot(*zip(*pts), marker=".", ms=3, lw=1, color=colour)
            ax.set_title(label, fontsize=9)
            ax.set_xlabel("optimizer step", fontsize=8)
            ax.set_ylabel(LOSS_LABELS[(kinds or {}).get(label, "")], fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
        return _save(fig, path)
