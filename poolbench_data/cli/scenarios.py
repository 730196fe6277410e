"""`poolbench scenarios`: generated boards as JSON lines, streamed (`boards.generate.scenarios`)."""

from __future__ import annotations

from poolbench_data.boards.generate import ScenariosConfig as CONFIG


def run(config: CONFIG) -> int:
    from poolbench_data.boards.generate import scenarios

    for s in scenarios(config):
        print(s.to_json(), flush=False)
    return 0
