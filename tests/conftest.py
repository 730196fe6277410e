import atexit
import os
import shutil
import tempfile

import pytest

# Tests never reach the Hub; a push attempt fails at once instead of retrying.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# A cache of their own, gone after the run: `load_dataset(folder, config)` keys its cache by the folder's name and
# files, not their bytes, so a folder rebuilt with other rows would read back another run's rows (tool
# demonstrations with another version of the tool's prompt paragraph, say). Set before anything imports `datasets`.
_CACHE = tempfile.mkdtemp(prefix="poolbench-tests-hf-datasets-")
os.environ["HF_DATASETS_CACHE"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)


@pytest.fixture(scope="session")
def benchmark_scenarios():
    from poolbench_data.boards.generate import generate

    return generate(50)


@pytest.fixture(scope="session")
def reference_runs(benchmark_scenarios):
    """The 50-board reference run (every default baseline, labelled), once per test run."""
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
