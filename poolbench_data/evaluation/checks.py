"""An evaluation's config checked before any work (no simulation, no engine start): bad numbers, bad model,
server down, prompts too long, a dataset folder the results cannot be added to. Each mistake is one
UserError naming the flag and the fix."""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

from poolbench_data.core.fields import check_types  # noqa: F401 - evaluate's first check
from poolbench_data.core.errors import UserError, check_at_least, check_seed
from poolbench_data.evaluation import experiments
from poolbench_data.llm.registry import backend_spec


def check_config(config) -> str:
    """Everything that needs no boards; returns the model's id."""
    from poolbench_data.llm.vllm_backend import parse_model_args

    spec = backend_spec(config.backend)
    for flag, value, low in (("--n", config.n, 1), ("--samples", config.samples, 1),
                             ("--max_tokens", config.max_tokens, 1),
                             ("--boards", config.boards, 0), ("--max_model_len", config.max_model_len, 1),
                             ("--retries", config.retries, 0)):
        check_at_least(flag, value, low)
    check_few_shot(config.few_shot)
    check_seed("--seed", config.seed)
    check_seed("--gen_seed", config.gen_seed)
    check_sampling(config, spec)
    check_applies(config, spec)
    for flag, value in (("--request_timeout", config.request_timeout), ("--timeout", config.timeout)):
        if not (value > 0 and math.isfinite(value)):
            raise UserError(f"{flag} must be a number of seconds > 0 (got {value})")
    if not 0.0 <= config.max_failed_share <= 1.0:
        raise UserError(f"--max_failed_share must be a share in [0, 1] (got {config.max_failed_share})")
    parse_model_args(config.model_args)  # a malformed item fails here, not after the baselines
    experiments.check(config, spec)
    return spec.resolve(config)


def check_few_shot(k: int) -> None:
    from poolbench_data.protocol.prompts import MAX_FEW_SHOT

    if not 0 <= k <= MAX_FEW_SHOT:
        raise UserError(f"--few_shot {k}: give a whole number of worked examples from 0 to {MAX_FEW_SHOT} (the "
                        "paper's ablation grid is 0/1/3/5)")


def check_applies(config, spec) -> None:
    """Text flags: none empty, and none given where the run would ignore it (a --base_url without --backend
    openai would quietly evaluate the local model instead of the server's)."""
    import dataclasses

    from poolbench_data.core.errors import check_output_dir
    from poolbench_data.llm.registry import BACKENDS

    for flag, value in (("--model", config.model), ("--name", config.name), ("--split", config.split)):
        if value is not None and not value.strip():
            raise UserError(f"{flag} is empty; give a value, or leave the flag out for its default")
    default = {f.name: f.default for f in dataclasses.fields(config)}
    for field in {f for s in BACKENDS.values() for f in s.reads} - set(spec.reads):
        if getattr(config, field) != default[field]:
            readers = " or ".join(f"--backend {name}" for name, s in BACKENDS.items() if field in s.reads)
            raise UserError(f"--{field} is read only with {readers}; add it, or leave --{field} out")
    if config.split != default["split"] and not config.dataset_dir:
        raise UserError("--split is read only with --dataset_dir; add --dataset_dir, or leave --split out")
    if config.out is not None:
        check_output_dir(config.out, "--out", make=False)
    check_eval_results(config, default)


def check_eval_results(config, default: dict) -> None:
    """--eval_results names a folder where the run's YAML can be written (made at the end, only for a complete
    run: the check leaves no trace) and holds no such file unless --overwrite; its dataset id is a Hub id."""
    from poolbench_data.core.errors import check_output_dir, probe_file
    from poolbench_data.evaluation.outputs import condition
    from poolbench_data.report.eval_results import check_repo_id, file_name

    if not config.eval_results:
        for flag in ("eval_results_dataset", "overwrite"):
            if getattr(config, flag) != default[flag]:
                raise UserError(f"--{flag} is read only with --eval_results; add --eval_results DIR, or leave "
                                f"--{flag} out")
        return
    folder = check_output_dir(config.eval_results, "--eval_results", make=False)
    path = folder / file_name(condition(config))
    where = f"--eval_results {config.eval_results}"
    if path.is_dir():
        raise UserError(f"{where}: {path.name} there is a folder, so the results cannot be written; give another "
                        "--eval_results folder")
    if path.exists() and not config.overwrite:
        raise UserError(f"{where} already holds {path.name}; pass --overwrite to replace it, or give another "
                        "--eval_results folder")
    try:
        probe_file(path, keep_folders=False)
    except OSError as e:
        raise UserError(f"{where} cannot be written ({e.strerror or e}); give a folder you can write to") from None
    try:
        check_repo_id(config.eval_results_dataset, "--eval_results_dataset")
    except ValueError as exc:
        raise UserError(str(exc)) from None


def check_sampling(config, spec) -> None:
    """What the engines refuse, refused before the baselines and the engine
    start: vLLM's SamplingParams (0.32) and the OpenAI API take temperatures
    in [0, 2] only, and vLLM decodes greedily at 0, which has one answer."""
    t = config.temperature
    if t < 0:
        raise UserError(f"--temperature must be >= 0 (got {t})")
    if not t <= 2.0:  # also nan and inf
        raise UserError(f"--temperature must be a number in [0, 2] (got {t}); pass e.g. the paper's 0.2")
    if not spec.greedy_at_zero:
        return
    if config.samples > 1 and t < 1e-5:  # vLLM's _SAMPLING_EPS
        raise UserError(f"--samples {config.samples} needs --temperature > 0: at 0 vLLM decodes greedily, which "
                        "gives one answer; pass --samples 1 or a --temperature such as 0.2")
    limit = os.environ.get("VLLM_MAX_N_SEQUENCES", "16384")
    if limit.isdigit() and config.samples > int(limit):
        raise UserError(f"--samples must be at most {limit} (vLLM's VLLM_MAX_N_SEQUENCES; got {config.samples})")


def check_boards(config, scenarios) -> None:
    """What the backend needs of the selected boards (replay: an answer for each board and sample), before the
    baselines run and before the report folder is made."""
    check = backend_spec(config.backend).check_boards
    if check is not None:
        check(config, [s.id for s in scenarios])


def check_name(config, name: str, baselines: list[str], known=None, where: str = "") -> None:
    """A model named like a baseline (one of `known`, the single-shot baselines by default; `where` says whose)
    would share its rows in every table and trace file."""
    from poolbench_data.players import BASELINES

    if name in (BASELINES if known is None else known) or name in baselines:
        which = f"--name {name}" if config.name else f"the model's name {name!r} (its folder's name)"
        raise UserError(f"{which} is a baseline's name{where}, so the model's rows would merge with that "
                        "baseline's; pass --name something-else")


def _has_tokenizer(model: str) -> bool:
    folder = Path(model)
    try:
        return folder.is_dir() and any((folder / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json"))
    except OSError:  # a served model's name too long for a path names no folder
        return False


def context_tokenizer(config, model: str):
    """The tokenizer prompt lengths are counted with, or None (said why) where the backend allows none; a local
    model's own context is checked against --max_model_len first."""
    from poolbench_data.llm.player import load_tokenizer

    how = backend_spec(config.backend).tokenizer
    if how == "none":
        return None
    if how == "if-local" and not _has_tokenizer(model):
        print(f"note: prompt lengths not checked against --max_model_len: --model {model} is not a local folder "
              "with a tokenizer (the server refuses a prompt too long for it)", file=sys.stderr)
        return None
    if how == "model":
        check_model_context(config.max_model_len, model)
    try:
        return load_tokenizer(model)
    except Exception as exc:  # noqa: BLE001 - the engine will name what is wrong with the model
        print(f"note: prompt lengths not checked: no tokenizer loads from {model} ({type(exc).__name__})",
              file=sys.stderr)
        return None


def check_context(config, model: str, scenarios) -> None:
    """Every prompt plus --max_tokens must fit in --max_model_len: vLLM would
    otherwise cut answers short without a word, a server refuse them."""
    from poolbench_data.llm.player import conversations, few_shot_examples, prompt_tokens
    from poolbench_data.protocol.prompts import messages

    tokenizer = context_tokenizer(config, model)
    if tokenizer is None:
        return
    budget = config.max_model_len - config.max_tokens
    longest = max(prompt_tokens(tokenizer, conversations(scenarios, config.few_shot)))
    growth, flag = experiments.context_growth(config)
    if longest + growth <= budget:
        return
    if longest <= budget:
        raise UserError(f"{flag} keeps up to {growth} more tokens in the conversation than the first prompt (up to "
                        f"{longest} tokens), which with --max_tokens {config.max_tokens} exceeds --max_model_len "
                        f"{config.max_model_len}; lower {flag.split()[0]} or raise --max_model_len to "
                        f"{longest + growth + config.max_tokens}")
    top = max(5, config.few_shot)
    examples = few_shot_examples(top)
    by_k = {k: max(prompt_tokens(tokenizer, [messages(s, examples[:k]) for s in scenarios])) for k in range(top + 1)}
    by_k[config.few_shot] = longest
    shown = ", ".join(f"{k}: {by_k[k]}" for k in sorted({0, 1, 3, 5, config.few_shot}))
    fits = [k for k, tokens in by_k.items() if tokens <= budget]
    fix = f"the largest that fits is {max(fits)}: pass --few_shot {max(fits)}" if fits else "no --few_shot fits"
    if longest < config.max_model_len:
        fix += f", lower --max_tokens to {config.max_model_len - longest}"
    raise UserError(f"--few_shot {config.few_shot} makes prompts of up to {longest} tokens, which with --max_tokens "
                    f"{config.max_tokens} exceeds --max_model_len {config.max_model_len}; the longest prompt by "
                    f"--few_shot is {shown} tokens; {fix}, or raise --max_model_len to "
                    f"{longest + config.max_tokens}")


def model_context(model: str) -> int | None:
    """The context a local model folder's config.json declares (vLLM's engine refuses a longer
    max_model_len with a traceback), or None where it names none or scales its positions."""
    import json

    try:
        cfg = json.loads((Path(model) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    cfg = cfg.get("text_config", cfg)  # a multimodal model's language part
    if not isinstance(cfg, dict) or cfg.get("rope_scaling"):
        return None
    lengths = [cfg[k] for k in ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length")
               if isinstance(cfg.get(k), int) and cfg[k] > 0]
    return min(lengths) if lengths else None


def check_model_context(max_model_len: int, model: str) -> None:
    context = model_context(model)
    if context is not None and max_model_len > context:
        raise UserError(f"--max_model_len {max_model_len} exceeds the {context} tokens --model {model} holds "
                        f"(its config.json); pass --max_model_len {context} or less")


def with_boards(config):
    """`config` with `n` and `seed` set: given, else the paper's defaults, else (with --dataset_dir) those the
    folder's --split was built with, read off its scenario ids. A given --n/--seed must name boards in it."""
    import dataclasses

    from poolbench_data.boards.generate import DEFAULT_N, DEFAULT_SEED

    if not config.dataset_dir:
        return dataclasses.replace(config, n=DEFAULT_N if config.n is None else config.n,
                                   seed=DEFAULT_SEED if config.seed is None else config.seed)
    n, seed = dataset_boards(Path(config.dataset_dir), config.split)
    config = dataclasses.replace(config, n=n if config.n is None else config.n,
                                 seed=seed if config.seed is None else config.seed)
    check_dataset(Path(config.dataset_dir), config.split, config.n, config.seed)
    return config


def dataset_boards(folder: Path, split: str) -> tuple[int, int]:
    """(how many boards, their base seed) of a dataset folder's split: ids pb<seed>-000000, -000001, ..."""
    from poolbench_data.boards.splits import scenario_id
    from poolbench_data.hub.folder import read_rows, require_dataset

    require_dataset(folder, "--dataset_dir")  # also finishes a swap a killed run left, and opens every shard
    ids = sorted(r["id"] for r in read_rows(folder, "scenarios", split))
    if not ids:
        raise UserError(f"--split {split!r}: {folder} has no scenarios in that split; give a split it holds")
    seed_text = ids[0].split("-")[0].removeprefix("pb")
    if not seed_text.isdigit() or ids != [scenario_id(int(seed_text), k) for k in range(len(ids))]:
        raise UserError(f"--dataset_dir {folder}: split {split!r} is not one seed's boards 0..N-1 (e.g. "
                        f"{ids[0]!r}); give the --seed and --n of the boards to evaluate")
    return len(ids), int(seed_text)


def check_dataset(folder: Path, split: str, n: int, seed: int) -> None:
    """Everything the final `replace_rows` needs, checked before generation:
    a writable parent, no other writer, every shard readable, the boards."""
    from poolbench_data.boards.splits import scenario_id
    from poolbench_data.hub.folder import read_rows, require_dataset

    require_dataset(folder, "--dataset_dir")
    ids = {r["id"] for r in read_rows(folder, "scenarios", split)}
    missing = [scenario_id(seed, k) for k in range(n) if scenario_id(seed, k) not in ids]
    if missing:
        raise UserError(f"{len(missing)} scenarios (e.g. {missing[0]}) are not in {folder} split "
                        f"{split!r}; pass the --seed/--n/--split the dataset was built with, or leave --seed "
                        "and --n out to evaluate every board of the split")