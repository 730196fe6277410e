"""`rescore(config)`: stored responses scored again offline; what `poolbench score` calls.

The responses of an llm_traces.jsonl go through the same parser, simulator and report as a live run, on the
boards their scenario ids name; nothing is generated (the replay backend)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from poolbench_data.core.errors import UserError
from poolbench_data.llm.replay import row_problem


@dataclass(frozen=True)
class ScoreConfig:
    """Re-score the responses of an llm_traces.jsonl offline (`poolbench score`)."""

    traces: str = field(metadata={"help": "llm_traces.jsonl written by `poolbench eval`", "positional": True})
    name: str | None = field(default=None, metadata={"help": "the player to re-score when the file holds several"})
    out: str = field(default="", metadata={"help": "report folder (default: TRACES' folder + '_rescored')"})
    max_failed_share: float = field(default=0.0, metadata={
        "help": "share of shots stored without a response (their request failed) that a re-score accepts; beyond "
                "it the run fails as `poolbench eval` does (exit 1, marked incomplete)"})


def boards_of(rows: list[dict]) -> tuple[int, int]:
    """(base seed, n) of the boards the rows cover: ids pb<seed>-<index>, indices 0..n-1."""
    seeds, indices = set(), set()
    for r in rows:
        head, _, index = r["scenario_id"].rpartition("-")
        if not head.startswith("pb") or not index.isdigit() or not head[2:].isdigit():
            raise UserError(f"scenario id {r['scenario_id']!r} is not a generated board (pb<seed>-<index>)")
        seeds.add(int(head[2:]))
        indices.add(int(index))
    if len(seeds) != 1:
        raise UserError(f"the traces mix boards of base seeds {sorted(seeds)}; re-score one run at a time")
    n = max(indices) + 1
    if indices != set(range(n)):
        raise UserError(f"the traces cover {len(indices)} of boards 0..{n - 1}; re-score a whole run")
    return seeds.pop(), n


def rescore(config: ScoreConfig):
    """Check the traces file (before any work), then evaluate its responses with the replay backend on the boards
    they answer: the EvalResult of `evaluate`, its report folder `out`."""
    from poolbench_data.evaluation.config import EvalConfig
    from poolbench_data.evaluation.run import evaluate
    from poolbench_data.players.traces import load_traces
    from poolbench_data.report.compare import by_shot, one_player

    path = Path(config.traces)
    if not path.is_file():
        raise UserError(f"traces file {path} does not exist; pass the llm_traces.jsonl of a `poolbench eval` run")
    rows = [r for r in load_traces(path) if r.get("player_kind") == "llm"]
    if not rows:
        raise UserError(f"{path} has no LLM responses to re-score")
    # One player (a --rounds file holds one per round), one row per shot, every row readable: never a silent pick.
    rows = one_player(rows, str(path), config.name, flag="--name", fields=("scenario_id", "sample", "player"))
    for i, r in enumerate(rows, 1):
        if problem := row_problem(r):
            raise UserError(f"{path}: row {i} of player {r.get('player')!r}: {problem}; re-score the file "
                            "`poolbench eval` wrote, unedited")
    by_shot(rows, str(path))
    seed, n = boards_of(rows)
    first = rows[0]
    name, out = config.name or first["player"], config.out or str(path.parent) + "_rescored"
    print(f"re-scoring {len(rows)} responses of {name} from {path}; the report goes to {out}/", flush=True)
    return evaluate(EvalConfig(backend="replay", responses=str(path), name=name, model=name, n=n, seed=seed,
                               samples=1 + max(r["sample"] for r in rows), temperature=first["temperature"] or 0.0,
                               out=out, boards=0, quiet=True, max_failed_share=config.max_failed_share))
