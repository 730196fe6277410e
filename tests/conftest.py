"""What many tests share, built once a run: the 50 benchmark boards and their reference run, one vLLM engine on
the embedded model, one tiny model, one small dataset folder and one set of two shards. Shared things are read
only: a test that changes one works on its own copy (`copy_of`). The engine and the loopback server are each shut
down after the last test that uses them, so neither outlives its tests."""

import atexit
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

# Tests never reach the Hub; a push attempt fails at once instead of retrying.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# A cache of their own, gone after the run: `load_dataset(folder, config)` keys its cache by the folder's name and
# files, not their bytes, so a folder rebuilt with other rows would read back another run's rows (tool
# demonstrations with another version of the tool's prompt paragraph, say). Set before anything imports `datasets`.
_CACHE = tempfile.mkdtemp(prefix="poolbench-tests-hf-datasets-")
os.environ["HF_DATASETS_CACHE"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)

# The shared engine: the context of the evaluator's default (--max_model_len), eager (torch.compile costs minutes
# on 2 cores), no prefix cache (each test's requests are its own), and the <think> markers configured so a test can
# give its requests a thinking budget.
ENGINE_MAX_MODEL_LEN = 4096
ENGINE_KV_CACHE_GIB = 0.5
ENGINE_THINKING_BUDGET = 8
# The small dataset folder: three held-out boards, three train boards, the Oracle's and Random's traces (odd
# counts, so its two shards differ in size).
SMALL_DATASET = {"eval_n": 3, "train_n": 3, "train_seed": 5, "players": ("oracle", "random"), "progress": False}


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


_SERVER: dict = {}  # while the run's server runs: {"stack": what stops it, "url": ..., "temp": its temp folder}


def _start_server() -> None:
    from contextlib import ExitStack

    from poolbench_data.llm.model import default_model_dir
    from poolbench_data.llm.serve import local_server

    temp = Path(tempfile.mkdtemp(prefix="pb-"))  # short: a socket's path must fit in 107 characters
    stack = ExitStack()
    with pytest.MonkeyPatch.context() as mp:  # the server's temp folder, only while it starts
        mp.delenv("VLLM_RPC_BASE_PATH", raising=False)
        mp.setenv("TMPDIR", str(temp))
        mp.setattr(tempfile, "tempdir", str(temp))
        url = stack.enter_context(local_server(
            default_model_dir(), max_model_len=ENGINE_MAX_MODEL_LEN, kv_cache_gib=ENGINE_KV_CACHE_GIB,
            extra_args=["--enforce-eager", "--no-enable-prefix-caching", "--served-model-name", SERVED_NAME,
                        "--enable-auto-tool-choice", "--tool-call-parser", "hermes"]))
    _SERVER.update(stack=stack, url=url, temp=temp)
    assert socket_files(temp), "the server's engine binds its sockets under its temp folder"


def _stop_server() -> None:
    """Stop the run's server: after it, it no longer answers and none of its socket files is left."""
    from poolbench_data.llm.openai_backend import ServerUnavailableError, check_server

    if "stack" not in _SERVER:
        return
    stack, url, temp = _SERVER.pop("stack"), _SERVER.pop("url"), _SERVER.pop("temp")
    stack.close()
    with pytest.raises(ServerUnavailableError):  # the process (group) is gone
        check_server(url, timeout=2.0)
    _remove_temp(temp, "the server")


@pytest.fixture(scope="session")
def served_model():
    """(base URL, served name) of the embedded model behind the project's loopback vLLM server
    (llm.serve.local_server), started on first use and stopped after the last test that uses it: the OpenAI
    backend, the verifiers environment, lm-eval and inspect play it as any OpenAI-compatible endpoint. vLLM's
    hermes parser turns a `<tool_call>` the model writes into a structured call, as a hosted API returns one."""
    if "stack" not in _SERVER:
        _start_server()
    yield _SERVER["url"], SERVED_NAME
    _stop_server()


def copy_of(folder: Path, where: Path) -> Path:
    """A private copy of a shared folder, for a test that changes it."""
    return Path(shutil.copytree(folder, where / folder.name))


# ------------------------------------------------------------------ data and models


@pytest.fixture(scope="session")
def small_dataset(tmp_path_factory) -> Path:
    """A dataset folder (SMALL_DATASET) as `build_benchmark` writes it. Read only: copy it to change it."""
    from poolbench_data.hub.build import build_benchmark

    root = tmp_path_factory.mktemp("small-dataset") / "poolbench"
    build_benchmark(root, **SMALL_DATASET)
    return root


@pytest.fixture(scope="session")
def two_shards(tmp_path_factory) -> Path:
    """The small dataset built as two shards, `s0/` and `s1/` (what merge_shards reads). Read only."""
    from poolbench_data.hub.build import build_benchmark

    parts = tmp_path_factory.mktemp("two-shards")
    for i in range(2):
        build_benchmark(parts / f"s{i}", shard=(i, 2), **SMALL_DATASET)
    return parts


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """tests/tiny_model.py's model at seed 0: a random 2-layer Llama with a ChatML tokenizer. Read only."""
    from tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", seed=0)


# ------------------------------------------------------------------ the vLLM engine

_ENGINE: dict = {}  # while the session's engine runs: {"engine": VLLMBackend, "temp": its temp folder}


def socket_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_socket()]


def _remove_temp(temp: Path, what: str) -> None:
    """Remove an engine's temp folder after it stopped; a socket file left there fails the test that stopped it."""
    left = socket_files(temp)
    shutil.rmtree(temp, ignore_errors=True)
    assert left == [], f"{what} left socket files: {left}"


def _start_engine():
    from poolbench_data.llm.model import default_model_dir
    from poolbench_data.llm.vllm_backend import VLLMBackend

    # The temp folder the engine starts with, where its socket files would be left; short, as a socket's path
    # must fit in 107 characters.
    temp = Path(tempfile.mkdtemp(prefix="pb-"))
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("VLLM_RPC_BASE_PATH", raising=False)
        mp.setattr(tempfile, "tempdir", str(temp))
        # A thinking budget at start configures the <think> markers; each lease sets its own budget.
        engine = VLLMBackend(str(default_model_dir()), max_model_len=ENGINE_MAX_MODEL_LEN,
                             kv_cache_gib=ENGINE_KV_CACHE_GIB, enforce_eager=True, enable_prefix_caching=False,
                             thinking_token_budget=ENGINE_THINKING_BUDGET)
    print(f"\nvLLM engine start: {engine.startup_s:.1f} s")
    _ENGINE.update(engine=engine, temp=temp)


def _stop_engine() -> None:
    """Shut the session's engine down; its worker processes and socket files go with it."""
    if "engine" not in _ENGINE:
        return
    engine, temp = _ENGINE.pop("engine"), _ENGINE.pop("temp")
    engine.close()
    # vLLM binds its processes' ZMQ sockets as files in the temp folder and leaves them there after a clean
    # shutdown (7 an engine, vllm 0.32); the engine's own folder for them goes with close().
    _remove_temp(temp, "the engine")


def _lease(thinking_token_budget=None):
    """The session's engine under one caller's settings: its own thinking budget (None: none), and a close()
    that ends the lease, not the engine."""
    from poolbench_data.llm.vllm_backend import VLLMBackend

    class EngineLease(VLLMBackend):
        def __init__(self, engine, budget):  # the running engine's state, not a new engine
            vars(self).update(vars(engine))
            self.thinking_token_budget = budget

        def close(self) -> None:
            self.llm = None

    assert "engine" in _ENGINE, "the session's engine is shut down: its last user ran"
    return EngineLease(_ENGINE["engine"], thinking_token_budget)


@pytest.fixture(scope="session")
def shared_vllm_engine():
    """The session's one vLLM engine on the embedded model (ENGINE_*): started on first use, shut down after the
    last test that uses it. Tests take it through `vllm_engine`, `engine_lease` or `eval_on_shared_engine`."""
    if "engine" not in _ENGINE:
        _start_engine()
    yield _ENGINE
    _stop_engine()


@pytest.fixture
def engine_lease(shared_vllm_engine):
    """lease(thinking_token_budget=None): the session's engine with that budget on every request."""
    yield _lease
    assert shared_vllm_engine["engine"].llm is not None, "a test shut the session's engine down"


@pytest.fixture
def vllm_engine(engine_lease, shared_vllm_engine):
    """The session's engine, no thinking budget; `.temp` is the temp folder it started with."""
    lease = engine_lease()
    lease.temp = shared_vllm_engine["temp"]
    return lease


@pytest.fixture
def eval_on_shared_engine(shared_vllm_engine, monkeypatch) -> list:
    """`poolbench eval --backend vllm` (and `evaluate`) run on the session's engine instead of starting one: the
    engine options the run asks for are checked against the engine's and recorded in the returned list, its
    thinking budget applies to its requests, and its close() ends its lease."""
    from poolbench_data.llm import registry

    engine = shared_vllm_engine["engine"]
    asked = []

    def build(model, **options):
        asked.append({"model": model, **options})
        assert model == engine.model, (model, engine.model)
        assert options.get("max_model_len", ENGINE_MAX_MODEL_LEN) <= ENGINE_MAX_MODEL_LEN, options
        unknown = set(options) - {"max_model_len", "thinking_token_budget"}
        assert not unknown, f"engine options the shared engine does not take: {unknown}"
        return _lease(options.get("thinking_token_budget"))

    monkeypatch.setattr(registry, "_build_vllm", build)
    return asked


# The run's engine and server, each stopped after the last test that uses it: its memory and processes are not
# held for the rest of the run.
STOPS = {"shared_vllm_engine": _stop_engine, "served_model": _stop_server}
_LAST_USER: dict[str, str] = {}  # fixture name -> the node id of its last user this run


# The units of work when the suite runs on several workers (scripts/test.sh: pytest-xdist with the scheduler
# below). One unit runs on one worker: the tests on the run's vLLM engine or loopback server, so each starts once
# and two never generate at once; the tests that start or look for a local Ray instance (one a machine); every other
# test file, so its module fixtures are built once.
WORKER_GROUPS = {
    "vllm": ("tests/test_bad_input.py::test_a_terminated_eval_shuts_the_vllm_engine_down",
             "tests/test_eval_cli.py::", "tests/test_eval_failures.py::", "tests/test_llm_backends.py::",
             "tests/test_game_eval.py::TestOnTheEngine::", "tests/test_game_eval.py::TestOnTheServer::",
             "tests/test_readme_commands.py::TestAsTyped::", "tests/test_verifiers_env.py::",
             "tests/test_verifiers_games.py::TestOnTheServer::"),
    "ray": ("tests/test_ray.py::", "tests/test_bad_input.py::test_a_local_ray_instance_dies"),
}
# The files that take longest (each run prints its slowest tests), started right after the groups and longest first,
# so that neither worker ends the run on one of them while the other has nothing left.
LONG_FILES = ("tests/test_tool_pairs.py", "tests/test_tool_sft.py", "tests/test_packaging.py",
              "tests/test_install.py", "tests/test_sim_floor.py", "tests/test_lm_eval_task.py",
              "tests/test_malformed_outputs.py", "tests/test_tools.py", "tests/test_training_cli.py",
              "tests/test_readme_commands.py")


def work_unit(nodeid: str) -> str:
    """The unit a test runs in: its group's name, else its file."""
    return next((group for group, prefixes in WORKER_GROUPS.items() if nodeid.startswith(prefixes)),
                nodeid.split("::", 1)[0])


def pytest_collection_modifyitems(config, items):
    stray = [i.nodeid for i in items if STOPS.keys() & set(getattr(i, "fixturenames", ()))
             and work_unit(i.nodeid) != "vllm"]
    if stray:
        raise pytest.UsageError(f"{stray[0]} uses the run's vLLM engine or server but is not in the vllm group of "
                                "tests/conftest.py WORKER_GROUPS; add its file or node id there")
    gone = [f for f in LONG_FILES if not (Path(config.rootpath) / f).is_file()]
    if gone:
        raise pytest.UsageError(f"tests/conftest.py LONG_FILES names {gone[0]}, which does not exist; remove it")
    # The groups first, then the long files, then the files with the most slow tests, so a long file does not start
    # last.
    slow = {}
    for i in items:
        unit = work_unit(i.nodeid)
        slow[unit] = slow.get(unit, 0) + (i.get_closest_marker("slow") is not None)
    rank = {unit: i for i, unit in enumerate((*WORKER_GROUPS, *LONG_FILES))}
    items.sort(key=lambda i: (rank.get(work_unit(i.nodeid), len(rank)), -slow[work_unit(i.nodeid)]))  # stable


def pytest_configure(config):
    # On several workers each has a core: torch's own threads in a worker (transformers' generate, an in-process
    # trainer) would spin against the other worker's. The vLLM engine's processes set their threads themselves.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        import torch

        torch.set_num_threads(1)
        # and the package's own pools: a command left at --workers 0 plays its boards in the worker, not in
        # spawned processes that would compete with the other worker (a test that gives a count still gets it)
        from poolbench_data.players.pool import WORKERS_ENV

        os.environ[WORKERS_ENV] = "1"
        # and the vLLM engine's worker gets the cores the other workers leave: its threads are bound a core each,
        # and one that shared a core with a worker's test would hold the others at every step
        from poolbench_data.llm.vllm_backend import RESERVED_CPUS_ENV, SMALL_CPU_CORES

        cores, workers = len(os.sched_getaffinity(0)), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        if RESERVED_CPUS_ENV not in os.environ and cores <= SMALL_CPU_CORES:
            os.environ[RESERVED_CPUS_ENV] = str(min(workers - 1, cores - 1))


def _wait_for_warm_up() -> None:
    """scripts/test.sh compiles pooltool's numba functions in the background while pytest starts (the folder in
    POOLBENCH_TEST_WARM_UP gets its exit code when done): the first test waits for it rather than compiling them
    too, and a failed compile stops the run with its log."""
    folder = os.environ.get("POOLBENCH_TEST_WARM_UP")
    if not folder:
        return
    done, deadline = Path(folder) / "exit_code", time.monotonic() + 600
    while not done.exists():
        if time.monotonic() > deadline:
            pytest.exit(f"scripts/test.sh's numba warm-up has not finished in 600 s; its log: {folder}/log", 3)
        time.sleep(0.2)
    code = done.read_text().strip()
    if code != "0":
        log = (Path(folder) / "log").read_text()[-3000:]
        pytest.exit(f"scripts/test.sh's numba warm-up failed (exit {code}):\n{log}", 3)


def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class WorkUnits(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

        def schedule(self) -> None:  # the workers have collected; no test is sent before the warm-up is done
            _wait_for_warm_up()
            super().schedule()

    config.option.loadscopereorder = False  # the collection's order: the groups first
    return WorkUnits(config, log)


def pytest_collection_finish(session):
    if session.items and not os.environ.get("PYTEST_XDIST_WORKER"):  # on workers, the scheduler waits
        _wait_for_warm_up()
    for item in session.items:
        for name in STOPS.keys() & set(getattr(item, "fixturenames", ())):
            _LAST_USER[name] = item.nodeid


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    result = yield
    for name, stop in STOPS.items():
        if _LAST_USER.get(name) == item.nodeid:
            stop()
    return result
