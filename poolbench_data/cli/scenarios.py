"""`poolbench scenarios`: generated boards as JSON lines (streamed)."""

from __future__ import annotations

from poolbench_data.boards.generate import DEFAULT_N, DEFAULT_SEED


def add_arguments(p) -> None:
    p.add_argument("--n", type=int, default=DEFAULT_N)
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)


def run(args) -> int:
    from poolbench_data.boards.generate import iter_scenarios

    for s in iter_scenarios(args.n, args.seed):
        print(s.to_json(), flush=False)
    return 0
