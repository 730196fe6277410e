"""Backends by name: the one place a backend is chosen (as lm-evaluation-harness's
model table). Each constructor imports its module only when called."""

from __future__ import annotations

from typing import Any

from poolbench_data.llm.backend import Backend


def _vllm(**kw):
    from poolbench_data.llm.vllm_backend import VLLMBackend

    return VLLMBackend(kw.pop("model"), **kw)


def _openai(**kw):
    from poolbench_data.llm.openai_backend import OpenAIBackend

    return OpenAIBackend(kw.pop("base_url"), kw.pop("model"), **kw)


def _replay(**kw):
    from poolbench_data.llm.replay import ReplayBackend

    return ReplayBackend(kw.pop("responses"), model=kw.pop("model", "replay"))


# name -> constructor taking keyword options; the one place a backend is chosen.
BACKENDS = {"vllm": _vllm, "openai": _openai, "replay": _replay}


def make_backend(name: str, **options: Any) -> Backend:
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose from {', '.join(BACKENDS)}")
    return BACKENDS[name](**options)
