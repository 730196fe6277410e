"""`baselines(config)`: the Oracle, Heuristic and Random baselines on the same boards, the paper's table; what
`poolbench baseline` and other programs call."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from poolbench_data.boards.generate import DEFAULT_N, DEFAULT_SEED
from poolbench_data.games.records import GAMES
from poolbench_data.players import BASELINES, DEFAULT_BASELINES


@dataclass(frozen=True)
class BaselineConfig:
    """Run the baselines and print the paper's table (`poolbench baseline`)."""

    n: int = field(default=DEFAULT_N, metadata={"help": "number of scenarios (default: the paper's 50)"})
    seed: int = field(default=DEFAULT_SEED, metadata={"help": "base seed (default: the evaluation set)"})
    players: str = field(default=",".join(DEFAULT_BASELINES),
                         metadata={"help": f"comma-separated baselines: {', '.join(BASELINES)}"})
    workers: int = field(default=0, metadata={"help": "worker processes (0: one per core; more than the cores is "
                                                       "capped there)"})
    executor: str = field(default="local", metadata={"help": "where boards run: local (process pool) or ray"})
    ray_address: str = field(default="", metadata={"help": "with --executor ray: the cluster ('' = a local Ray "
                                                            "instance)"})
    out: str = field(default="results/baselines.json", metadata={"help": "JSON results path ('' to skip)"})
    no_label: bool = field(default=False, metadata={"help": "skip straight-pottability labels"})
    quiet: bool = field(default=False, metadata={"help": "no progress bar"})
    game: str = field(default="shot", metadata={
        "choices": ("shot",) + GAMES,
        "help": "shot (the default): one shot a board (the paper's table); nineball: DeepPHY's nine-ball task on "
                "its one rack; nineball-seeded: a rack per episode; runout: an eight-ball visit from each board "
                "(docs/games.md). "
                "With a game, --n counts episodes, --players defaults to the game's baselines and --out to "
                "results/baselines_GAME.json"})
    attempts: int = field(default=15, metadata={"help": "with --game: the most attempts an episode takes "
                                                        "(DeepPHY's 15)"})


@dataclass(frozen=True)
class BaselineResult:
    """What the baselines scored and where it went (`path`: the JSON results, None with out='')."""

    config: BaselineConfig
    players: tuple[str, ...]
    report: str  # the printed table and notes
    summary: dict  # per player: each metric's count, rate and Wilson interval, overall and by category
    results: dict  # the JSON written to `path`: summary, elapsed_s, provenance, and the pottability labels
    runs: tuple  # the BoardRuns: each board's records and pottability label
    path: Path | None


def baselines(config: BaselineConfig) -> BaselineResult:
    """Check the config (before any work), play the baselines on the boards, print the table and the
    pottability notes, write the JSON results. A --game is played by evaluation.game_baselines."""
    from poolbench_data.boards.generate import iter_specs
    from poolbench_data.core.errors import UserError, check_at_least, check_output_file, check_seed
    from poolbench_data.players import check_players
    from poolbench_data.players.play import run_baselines
    from poolbench_data.players.pool import check_executor, resolve_workers
    from poolbench_data.report.provenance import provenance
    from poolbench_data.report.tables import format_categories, format_table, pottable_summary, summarize

    check_at_least("--n", config.n, 1)
    check_at_least("--attempts", config.attempts, 1)
    if config.game != "shot":
        raise UserError(f"--game {config.game}: baselines() plays single shots; play a game with "
                        "evaluation.game_baselines.game_baselines(config), as `poolbench baseline --game` does")
    check_seed("--seed", config.seed)
    workers = resolve_workers(config.workers)
    names = check_players(config.players.split(","), "--players")
    check_executor(config.executor, config.ray_address or None)
    path = check_output_file(config.out) if config.out else None
    t0 = time.perf_counter()
    runs = list(run_baselines(iter_specs(config.n, config.seed), names, workers=workers,
                              label=not config.no_label, total=config.n, progress=not config.quiet,
                              executor=config.executor, ray_address=config.ray_address or None))
    elapsed = time.perf_counter() - t0
    records = [r for run in runs for r in run.records]
    summary = summarize(records, names)
    lines = [format_table(summary, f"PoolBench baselines: {config.n} scenarios, seed {config.seed} "
                                   f"(Wilson 95% CIs; Clean pot = own ball potted without a foul)"),
             "", format_categories(summary)]
    out = {"summary": summary, "elapsed_s": elapsed,
           "provenance": provenance(n=config.n, seed=config.seed, players=names, workers=workers)}
    if not config.no_label:
        pot = pottable_summary(runs)
        out["pottability"] = pot
        out["labels"] = {r.scenario.id: {"pottable": r.pottability.pottable, "how": r.pottability.how,
                                         "kind": r.pottability.kind, "sims": r.pottability.sims} for r in runs}
        lines.append(f"Straight-pottable boards: {pot['straight_pottable']}/{pot['scenarios']} "
                     f"(not pottable: {pot['not_pottable'] or 'none'})")
        if "oracle" in names:
            lines.append(f"Oracle legal pots: {pot['legal_pots_on_pottable']}/{pot['straight_pottable']} "
                         f"straight-pottable = {pot['pct_on_pottable']:.1f}% [{pot['ci_on_pottable'][0]:.1f}, "
                         f"{pot['ci_on_pottable'][1]:.1f}]; overall {pot['legal_pots_overall']}/{pot['scenarios']}")
        kinds = [r.pottability.kind for r in runs]
        lines.append(f"Pottable: straight {kinds.count('straight')}, kick {kinds.count('kick')} (a one-cushion kick "
                     f"pots legally), none {kinds.count('none')}")
    if "sims" in summary.get("oracle", {}):
        s = summary["oracle"]["sims"]
        lines.append(f"Oracle simulations per decision: median {s['median']:.0f}, p90 {s['p90']:.0f}, max "
                     f"{s['max']} (grid allows 120)")
    sims_run, saved = sum(r.sims_run for r in runs), sum(r.sims_saved for r in runs)
    lines.append(f"{config.n} scenarios in {elapsed:.1f} s with {workers} worker(s) ({config.executor}); "
                 f"simulations run {sims_run}, saved by the floor {saved}")
    report = "\n".join(lines)
    print(report)
    if path is not None:
        path.write_text(json.dumps(out, indent=2, sort_keys=True))
        print(f"results saved to {path}")
    return BaselineResult(config, tuple(names), report, summary, out, tuple(runs), path)
