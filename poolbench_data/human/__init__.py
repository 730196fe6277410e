"""The human baseline as a library: a person plays the boards (in a terminal or a browser page on loopback) and
the answers are scored exactly like a model's.

    from poolbench_data.human import PlayConfig, play
    result = play(PlayConfig(n=5, out="results/me"))   # the scoring's EvalResult; None when nothing was played
    result = play(PlayConfig(game="nineball", n=3, out="results/me-9"))   # a game: its table (human/games.py)

`poolbench play` is a thin wrapper over `play`.
"""

from poolbench_data.human.run import PlayConfig, play

__all__ = ["PlayConfig", "play"]
