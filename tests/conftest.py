import os

import pytest

# Tests never reach the Hub; a push attempt fails at once instead of retrying.
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def benchmark_scenarios():
    from poolbench_data.scenarios import generate

    return generate(50)


@pytest.fixture
def board():
    """Build a validated scenario from {ball id: (x, y)}."""
    from poolbench_data.records import Scenario

    def make(positions, category="open", id="t"):
        return Scenario.create(id, category, 0, positions)

    return make
