"""LLM plumbing for PoolBench evaluation: the embedded default model and
generation backends (in-process vLLM, any OpenAI-compatible server).

Nothing heavy is imported here: vllm, torch, transformers and openai load
inside the functions that need them, so `import poolbench_data.llm` is cheap.
"""

from poolbench_data.llm.backends import (
    Backend,
    GenerationFailure,
    OpenAIBackend,
    ServerUnavailableError,
    VLLMBackend,
    check_server,
    request_seed,
)
from poolbench_data.llm.model import default_model_dir, model_info, resolve_model

__all__ = [
    "Backend",
    "GenerationFailure",
    "OpenAIBackend",
    "ServerUnavailableError",
    "VLLMBackend",
    "check_server",
    "default_model_dir",
    "model_info",
    "request_seed",
    "resolve_model",
]
