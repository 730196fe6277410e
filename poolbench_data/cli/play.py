"""`poolbench play`: the human baseline, in a terminal or (--web) a browser page on loopback, scored like a
model; with --game, a game played shot by shot, reported as the game's table (`human.play`)."""

from __future__ import annotations

from poolbench_data.human.run import PlayConfig as CONFIG


def run(config: CONFIG) -> int:
    from poolbench_data.cli.eval import exit_code
    from poolbench_data.human import play

    result = play(config)
    return 1 if result is None else exit_code(result)
