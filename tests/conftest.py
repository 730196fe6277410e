import os

import pytest

# Tests never reach the Hub; a push attempt fails at once instead of retrying.
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def benchmark_scenarios():
    from poolbench_data.boards.generate import generate

    return generate(50)


@pytest.fixture(scope="session")
def reference_runs(benchmark_scenarios):
    """The 50-board reference run (every default baseline, labelled), once per session."""
    from poolbench_data.players import DEFAULT_BASELINES
    from poolbench_data.players.play import run_baselines

    return list(run_baselines(benchmark_scenarios, DEFAULT_BASELINES, workers=2, progress=False))


@pytest.fixture
def board():
    """Build a validated scenario from {ball id: (x, y)}."""
    from poolbench_data.core.records import Scenario

    def make(positions, category="open", id="t"):
        return Scenario.create(id, category, 0, positions)

    return make
