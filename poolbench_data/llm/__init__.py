"""Language models on the benchmark: the embedded default model, generation
backends (one module each, chosen by name in `registry.BACKENDS`), the
loopback server, and the LLM player (`player.evaluate_model`).

Nothing heavy is imported here: vllm, torch, transformers and openai load
inside the modules that need them, so `import poolbench_data.llm` is cheap.
"""

from poolbench_data.llm.backend import Backend, GenerationFailure, GenerationResult, request_seed
from poolbench_data.llm.registry import BACKENDS, make_backend
from poolbench_data.llm.model import default_model_dir, model_info, resolve_model

__all__ = [
    "BACKENDS",
    "Backend",
    "GenerationFailure",
    "GenerationResult",
    "default_model_dir",
    "make_backend",
    "model_info",
    "request_seed",
    "resolve_model",
]
