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


SERVED_NAME = "smollm2"


@pytest.fixture(scope="session")
def served_model():
    """(base URL, served name) of the embedded model behind the project's loopback vLLM server
    (llm.serve.local_server) for the session: the verifiers environment, lm-eval and inspect play it as any
    OpenAI-compatible endpoint. vLLM's hermes parser turns a `<tool_call>` the model writes into a structured
    call, as a hosted API returns one. Tests that use it hold /tmp/pb-heavy.lock (run them under flock)."""
    from poolbench_data.llm.model import default_model_dir
    from poolbench_data.llm.serve import local_server

    with local_server(default_model_dir(), max_model_len=4096, kv_cache_gib=0.5,
                      extra_args=["--enforce-eager", "--no-enable-prefix-caching", "--served-model-name",
                                  SERVED_NAME, "--enable-auto-tool-choice", "--tool-call-parser", "hermes"]) as url:
        yield url, SERVED_NAME
