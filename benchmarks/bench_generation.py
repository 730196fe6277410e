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

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from poolbench_data.core.config import Parser


def builtin_prompts(n: int = 8) -> list[list[dict[str, str]]]:
    """The benchmark's own conversations (Appendix A prompts) for its first n boards."""
    from poolbench_data.llm.player import conversations
    from poolbench_data.boards.generate import generate

    return conversations(generate(n))


def load_prompts(path: Path) -> list[list[dict[str, str]]]:
    prompts = []
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        item = json.loads(line)
        messages = item.get("messages") if isinstance(item, dict) else item
        if not isinstance(messages, list) or not all(isinstance(m, dict) and "role" in m for m in messages):
            raise SystemExit(
                f"{path}:{lineno}: expected a JSON list of {{role, content}} messages "
                'or an object with a "messages" list'
            )
        prompts.append(messages)
    if not prompts:
        raise SystemExit(f"{path} holds no prompts")
    return prompts


def bench_transformers(model_dir: str, prompts: list, args: argparse.Namespace) -> dict[str, Any]:
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


def bench_vllm(model_dir: str, prompts: list, args: argparse.Namespace, reserved: str = "",
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


def play_tools(backend, args: argparse.Namespace) -> tuple[list, int, int]:
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


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="HF folder or cached Hub id (default: embedded SmolLM2-135M)")
    parser.add_argument("--prompts_file", type=Path, help="JSONL, one conversation a line")
    parser.add_argument("--max_tokens", type=int, default=128)
    parser.add_argument("--temperature", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backends", default="transformers,vllm", help="comma list of: transformers, vllm")
    parser.add_argument("--max_model_len", type=int, default=2048)
    parser.add_argument("--kv_cache_gib", default="",
                        help="comma list: one vLLM row per KV cache size in GiB ('' = the backend's default)")
    parser.add_argument("--dtype", default="", help="vLLM dtype (e.g. float32 for an fp32 fine-tune; '' = auto)")
    parser.add_argument("--tool_boards", type=int, default=0,
                        help="play the first N evaluation boards with the ghost_ball tool instead of one batch")
    parser.add_argument("--enforce_eager", action="store_true", help="skip vLLM's torch.compile (faster start)")
    parser.add_argument("--reserved_cpus", default="",
                        help="comma list: one vLLM row per value of VLLM_CPU_NUM_OF_RESERVED_CPU, the cores the CPU "
                             "engine keeps from its worker ('' = the project's default)")
    parser.add_argument("--hf_dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--hf_threads", type=int, default=0, help="torch threads for transformers (0: default)")
    parser.add_argument("--output", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)

    from poolbench_data.llm import resolve_model

    try:
        sizes = [float(kv) if kv.strip() else None for kv in args.kv_cache_gib.split(",")]
    except ValueError:
        parser.error(f"--kv_cache_gib: {args.kv_cache_gib!r} is not a comma list of GiB; write e.g. 1,8")
    model_dir = resolve_model(args.model)
    prompts = load_prompts(args.prompts_file) if args.prompts_file else builtin_prompts()
    runners = {"transformers": bench_transformers, "vllm": bench_vllm}
    rows = []
    for name in (b.strip() for b in args.backends.split(",") if b.strip()):
        if name not in runners:
            parser.error(f"--backends: unknown backend {name!r}; choose from {sorted(runners)}")
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
        args.output.write_text(json.dumps({"model": model_dir, "prompts": len(prompts), "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":  # vLLM spawns worker processes: keep the guard
    sys.exit(main())
