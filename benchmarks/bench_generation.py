"""Generation throughput: in-process vLLM vs a plain transformers loop.

Same model, same prompts, same sampling settings; prints scenarios/s and
generated tokens/s for each backend. Engine/model start-up is timed
separately, and each backend gets one untimed warm-up request.

    python benchmarks/bench_generation.py                      # the first 8 benchmark boards
    python benchmarks/bench_generation.py --prompts_file p.jsonl --max_tokens 300
    python benchmarks/bench_generation.py --backends vllm --enforce_eager --reserved_cpus 1,0   # a row each
    python benchmarks/bench_generation.py --backends vllm --enforce_eager --model W/sft/merged \
        --tool_boards 100 --kv_cache_gib 1,8 --max_model_len 4096 --max_tokens 300 --dtype float32   # a row each

With --tool_boards N the work is `poolbench eval --tools` on the first N
evaluation boards (each shot calls ghost_ball until it answers, <= 3 calls;
llm.tools.play_with_tools), so later turns re-send the earlier ones: the KV
cache decides how many conversations run at once and how much prefix caching
keeps. The rows run one after another in one run; "texts" says whether a
vLLM row wrote the same words as the first one.

A prompts file holds one conversation a line: a JSON list of
{"role", "content"} messages, or an object with a "messages" list.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ScriptArguments:
    """Generation throughput: in-process vLLM against a plain transformers loop."""

    model: str | None = field(default=None, metadata={"help": "HF folder or cached Hub id (default: embedded "
                                                               "SmolLM2-135M)"})
    prompts_file: str = field(default="", metadata={"help": "JSONL, one conversation a line ('': the first 8 "
                                                             "benchmark boards' prompts)"})
    max_tokens: int = field(default=128, metadata={"help": "token budget of each response"})
    temperature: float = field(default=0.2, metadata={"help": "sampling temperature"})
    seed: int = field(default=0, metadata={"help": "generation seed (per-request seeds derive from it)"})
    backends: str = field(default="transformers,vllm", metadata={"help": "comma list of: transformers, vllm"})
    max_model_len: int = field(default=2048, metadata={"help": "the vLLM engine's context length"})
    kv_cache_gib: str = field(default="", metadata={"help": "comma list: one vLLM row per KV cache size in GiB ('' "
                                                             "= the backend's default)"})
    dtype: str = field(default="", metadata={"help": "vLLM dtype (e.g. float32 for an fp32 fine-tune; '' = auto)"})
    tool_boards: int = field(default=0, metadata={"help": "play the first N evaluation boards with the ghost_ball "
                                                           "tool instead of one batch"})
    enforce_eager: bool = field(default=False, metadata={"help": "skip vLLM's torch.compile (faster start)"})
    reserved_cpus: str = field(default="", metadata={"help": "comma list: one vLLM row per value of "
                                                              "VLLM_CPU_NUM_OF_RESERVED_CPU, the cores the CPU engine "
                                                              "keeps from its worker ('' = the project's default)"})
    hf_dtype: str = field(default="float32", metadata={"help": "transformers' weights dtype",
                                                       "choices": ("float32", "bfloat16")})
    hf_threads: int = field(default=0, metadata={"help": "torch threads for transformers (0: default)"})
    output: str = field(default="", metadata={"help": "also write the rows as JSON here ('': no file)"})


def builtin_prompts(n: int = 8) -> list[list[dict[str, str]]]:
    """The benchmark's own conversations (Appendix A prompts) for its first n boards."""
    from poolbench_data.llm.player import conversations
    from poolbench_data.boards.generate import generate

    return conversations(generate(n))


def load_prompts(path: Path) -> list[list[dict[str, str]]]:
    from poolbench_data.core.errors import UserError

    if not path.is_file():
        raise UserError(f"--prompts_file {path}: no such file; give a JSONL file, one conversation a line")
    prompts = []
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        item = json.loads(line)
        messages = item.get("messages") if isinstance(item, dict) else item
        if not isinstance(messages, list) or not all(isinstance(m, dict) and "role" in m for m in messages):
            raise UserError(f"--prompts_file {path}:{lineno}: expected a JSON list of {{role, content}} messages "
                            'or an object with a "messages" list')
        prompts.append(messages)
    if not prompts:
        raise UserError(f"--prompts_file {path} holds no prompts")
    return prompts


def bench_transformers(model_dir: str, prompts: list, args: ScriptArguments) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from poolbench_data.llm.backend import request_seed

    if args.hf_threads:
        # On a busy 2-core box, 2 OpenMP threads spin against other processes
        # and run ~7x slower than 1; let the caller pick.
        torch.set_num_threads(args.hf_threads)
    started = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=getattr(torch, args.hf_dtype)).eval()
    startup = time.perf_counter() - started

    def run(conversation: list[dict[str, str]], seed: int, max_new_tokens: int) -> int:
        inputs = tokenizer.apply_chat_template(
            conversation, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        torch.manual_seed(seed)
        with torch.inference_mode():
            out = model.generate(
                **inputs,
                do_sample=True,
                temperature=args.temperature,
                top_p=1.0,
                top_k=0,
                max_new_tokens=max_new_tokens,
                pad_token_id=tokenizer.eos_token_id,
            )
        generated = out[0, inputs["input_ids"].shape[1] :]
        # Count up to and including the first EOS, as vLLM does.
        eos = (generated == tokenizer.eos_token_id).nonzero()
        return int(eos[0, 0]) + 1 if len(eos) else len(generated)

    run(prompts[0], 0, 4)  # warm-up
    started = time.perf_counter()
    tokens = sum(run(conv, request_seed(args.seed, i), args.max_tokens) for i, conv in enumerate(prompts))
    elapsed = time.perf_counter() - started
    del model
    label = f"transformers ({args.hf_dtype}, {torch.get_num_threads()} thr)"
    return {"backend": label, "startup_s": startup, "gen_s": elapsed, "tokens": tokens}


def bench_vllm(model_dir: str, prompts: list, args: ScriptArguments, reserved: str = "",
               kv_cache_gib: float | None = None) -> dict[str, Any]:
    from poolbench_data.llm.vllm_backend import RESERVED_CPUS_ENV, VLLMBackend, environment

    extra = {"enforce_eager": True} if args.enforce_eager else {}
    if args.dtype:
        extra["dtype"] = args.dtype
    with environment({RESERVED_CPUS_ENV: reserved} if reserved else {}):  # read as the engine starts
        backend = VLLMBackend(model_dir, max_model_len=args.max_model_len, kv_cache_gib=kv_cache_gib, **extra)
    try:
        backend.generate(prompts[:1], max_tokens=4)  # warm-up
        started = time.perf_counter()
        if args.tool_boards:
            texts, tokens, failures = play_tools(backend, args)
        else:
            result = backend.generate(prompts, temperature=args.temperature, max_tokens=args.max_tokens,
                                      seed=args.seed)
            texts, tokens, failures = result.texts, result.usage["completion_tokens"], len(result.failures)
        elapsed = time.perf_counter() - started
    finally:
        backend.close()
    mode = "eager" if args.enforce_eager else "compiled"
    setting = ([f"reserved {reserved}"] if reserved else []) + ([f"kv {kv_cache_gib:g} GiB"] if kv_cache_gib else [])
    return {
        "backend": f"vllm ({mode}, {'tool turns' if args.tool_boards else 'one batch'}"
                   f"{''.join(', ' + s for s in setting)})",
        "startup_s": backend.startup_s,
        "gen_s": elapsed,
        "tokens": tokens,
        "failures": failures,
        "texts": texts,
    }


def play_tools(backend, args: ScriptArguments) -> tuple[list, int, int]:
    """The tool condition's generation, as `poolbench eval --tools` runs it."""
    from poolbench_data.boards.generate import generate
    from poolbench_data.llm.player import EvalSettings, conversations
    from poolbench_data.llm.tools import MAX_CALLS, play_with_tools

    boards = generate(args.tool_boards)
    settings = EvalSettings(model=backend.model, backend="vllm", temperature=args.temperature,
                            max_tokens=args.max_tokens, seed=args.seed)
    _, gens, threads = play_with_tools(boards, conversations(boards), backend, settings, player="bench",
                                       max_calls=MAX_CALLS)
    return ([t.turns + [t.text] for t in threads], sum(g.usage["completion_tokens"] for g in gens),
            sum(len(g.failures) for g in gens))


def bench(args: ScriptArguments) -> int:
    from poolbench_data.core.errors import UserError
    from poolbench_data.llm import resolve_model

    try:
        sizes = [float(kv) if kv.strip() else None for kv in args.kv_cache_gib.split(",")]
    except ValueError:
        raise UserError(f"--kv_cache_gib: {args.kv_cache_gib!r} is not a comma list of GiB; write e.g. 1,8") from None
    runners = {"transformers": bench_transformers, "vllm": bench_vllm}
    names = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = [name for name in names if name not in runners]
    if unknown:  # before the model loads
        raise UserError(f"--backends: unknown backend {unknown[0]!r}; choose from {sorted(runners)}")
    model_dir = resolve_model(args.model)
    prompts = load_prompts(Path(args.prompts_file)) if args.prompts_file else builtin_prompts()
    rows = []
    for name in names:
        print(f"running {name} on {len(prompts)} prompts ...", file=sys.stderr, flush=True)
        if name == "vllm":  # a row per (reserved cores, KV size); ("", None) is the defaults' one row
            rows += [bench_vllm(model_dir, prompts, args, r.strip(), kv)
                     for r in args.reserved_cpus.split(",") for kv in sizes]
        else:
            rows.append(runners[name](model_dir, prompts, args))

    what = f"{args.tool_boards} boards with the tool" if args.tool_boards else f"{len(prompts)} prompts"
    print(f"\nmodel {model_dir}; {what}, max_tokens {args.max_tokens}, T={args.temperature}")
    header = f"{'backend':<44} {'start s':>8} {'gen s':>8} {'scen/s':>8} {'tokens':>7} {'tok/s':>8} {'texts':>6}"
    print(header)
    print("-" * len(header))
    first = next((row["texts"] for row in rows if "texts" in row), None)
    for row in rows:
        row["scenarios_per_s"] = (args.tool_boards or len(prompts)) / row["gen_s"]
        row["tokens_per_s"] = row["tokens"] / row["gen_s"]
        if "texts" in row:  # vLLM rows: the same words as the first vLLM row?
            row["same_texts"] = row.pop("texts") == first
        same = {True: "same", False: "differ"}.get(row.get("same_texts"), "-")
        print(
            f"{row['backend']:<44} {row['startup_s']:>8.1f} {row['gen_s']:>8.2f} "
            f"{row['scenarios_per_s']:>8.2f} {row['tokens']:>7d} {row['tokens_per_s']:>8.1f} {same:>6}"
        )
    if args.output:
        Path(args.output).write_text(json.dumps({"model": model_dir, "prompts": len(prompts), "rows": rows}, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    from poolbench_data.config import parse, run_main

    return run_main(lambda: bench(parse(ScriptArguments, argv, __doc__)))


if __name__ == "__main__":  # vLLM spawns worker processes: keep the guard
    sys.exit(main())
