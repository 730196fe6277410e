"""PoolBench data: seeded pool scenarios, pooltool physics, scoring, datasets.

The curated API (each name is loaded on first use, so `import poolbench_data`
stays cheap):

    from poolbench_data import generate, oracle, simulate, score, parse_action
    board = generate(1)[0]                      # a seeded Scenario
    shot = oracle(board).shot                   # the ghost-ball Oracle's Shot
    metrics = score(simulate(board, shot))      # the paper's four metrics
    parse_action('{"target_ball": "3", ...}', board).shot
    evaluate(EvalConfig(n=10)).report           # a language model on 10 boards (vLLM)

Subpackages, in the order the data flows (each imports only those before it):
core (records, table, geometry, physics, scoring) -> boards (generation,
categories, pottability) -> players (baselines, the play loop, diagnostics)
and protocol (prompts, parsing) -> games (nine-ball and run-outs played shot
by shot) -> llm (backends, the LLM player) and report (tables, stats,
rendering) -> demos (SFT demonstrations) -> checks (what
every training set passes) -> pairs (preference pairs) -> hub (datasets) and
rl (the TRL environment, rewards) -> evaluation (`evaluate(config)`, the
baselines, re-scoring) -> human (the human baseline) and config (the one
configuration system of the entry points) -> cli and finetune (what the
training/ scripts share).

Heavy dependencies (vllm, torch, trl) are imported lazily inside the modules
that need them, so the core runs without them.
"""

__version__ = "0.1.0"

_API = {
    "Scenario": "core.records", "Shot": "core.records", "ShotResult": "core.records", "Metrics": "core.records",
    "InvalidScenario": "core.records", "InvalidShot": "core.records",
    "simulate": "core.physics", "score": "core.scoring", "physics_score": "core.scoring",
    "generate": "boards.generate", "iter_scenarios": "boards.generate", "straight_pottable": "boards.pottable",
    "oracle": "players", "heuristic": "players", "random_player": "players", "BASELINES": "players",
    "play_shot": "players.play", "run_baselines": "players.play", "ShotRecord": "players.play",
    "messages": "protocol.prompts", "format_action": "protocol.prompts", "parse_action": "protocol.parsing",
    "make_backend": "llm.registry", "evaluate_model": "llm.player",
    "evaluate": "evaluation", "EvalConfig": "evaluation", "EvalResult": "evaluation",
    "GameState": "games.records", "start_game": "games.step", "step": "games.step", "play_episode": "games.play",
}
__all__ = sorted(_API)


def __getattr__(name: str):
    if name not in _API:
        raise AttributeError(f"module 'poolbench_data' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"poolbench_data.{_API[name]}"), name)


def _keep_numba_cache() -> None:
    """pooltool's numba code compiles for ~40 s and caches next to its
    sources. Where site-packages is read-only the cache would be lost with
    every process, so point numba at a user cache instead."""
    import importlib.util
    import os

    if "NUMBA_CACHE_DIR" in os.environ:
        return
    spec = importlib.util.find_spec("pooltool")
    if spec and spec.origin and not os.access(os.path.dirname(spec.origin), os.W_OK):
        os.environ["NUMBA_CACHE_DIR"] = os.path.join(os.path.expanduser("~"), ".cache", "poolbench", "numba")


_keep_numba_cache()
