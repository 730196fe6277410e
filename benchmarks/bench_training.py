"""Training cost on this machine: seconds per SFT demonstration and per DPO pair, and peak RSS.

    python benchmarks/bench_training.py                       # the recipes as shipped: sft, dpo
    python benchmarks/bench_training.py --settings sft:fullhead,sft,dpo:fullhead:ref,dpo --json rows.json
    python benchmarks/bench_training.py --steps 2 --settings sft:fullhead:emulated   # full head, emulated bf16

A setting is `sft` or `dpo` (its CPU recipe, training/recipes/) followed by
flags, each one change to the recipe, so a row per flag measures that change
alone and the ratios come from one run:
    lora / full        LoRA r16 / all weights          fp32 / bf16w   float32 / bfloat16 weights
    amp / noamp        bf16 autocast on / off          ckpt / nockpt  gradient checkpointing on / off
    fullhead           TRL's CPU LM head over every position (compact_lm_head false)
    ref / precompute   DPO reference forward every step / reference log-probs computed once, before training
    emulated           keep bf16 on a CPU without native bf16 (cpu_fp32_fallback false)
    compile            torch.compile (TrainingArguments.torch_compile)
    eager              the eager attention kernel instead of SDPA
    share / noshare    each DPO pair's prompt / the prefix an SFT batch shares through the model once (share_prompt)
    b1 ... b4, b8      1 ... 4 or 8 rows a batch (default: the recipe's per_device_train_batch_size): --steps / N
                       steps of N rows, so every setting trains on the same rows
    a2, a4             2 or 4 batches accumulated an optimizer step (default 1): b1:a4 is a pair a batch, 4 pairs
                       a step, against the tool DPO recipe's 4 pairs in one batch

Each setting runs the real script (training/sft.py, training/dpo.py) in its
own process on real PoolBench rows (prompts of ~1,450 tokens), one batch (the
recipe's, or bN's) per optimizer step, so its peak RSS is its own. Seconds per example come
from the trainer's own train_runtime (model loading excluded); for DPO the
trainer's set-up time over its pairs is added, since precomputed reference
log-probs are computed there (model loading included: a slight overcharge).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECIPES = {"sft": "training/recipes/sft-smollm2-135m-cpu.yaml", "dpo": "training/recipes/dpo-smollm2-135m-cpu.yaml"}
DEFAULT_SETTINGS = "sft,dpo"
# flag -> the script arguments it sets (poolbench_data/finetune/common.py TrainScriptArguments, TRL's configs)
FLAGS = {
    "lora": ["--use_peft", "true"], "full": ["--use_peft", "false"],
    "fp32": ["--dtype", "float32"], "bf16w": ["--dtype", "bfloat16"],
    "amp": ["--bf16", "true"], "noamp": ["--bf16", "false"],
    "ckpt": ["--gradient_checkpointing", "true"], "nockpt": ["--gradient_checkpointing", "false"],
    "fullhead": ["--compact_lm_head", "false"],
    "ref": ["--precompute_ref_log_probs", "false"], "precompute": ["--precompute_ref_log_probs", "true"],
    "emulated": ["--cpu_fp32_fallback", "false"],
    "compile": ["--torch_compile", "true"],
    "eager": ["--attn_implementation", "eager"],
    "share": ["--share_prompt", "true"], "noshare": ["--share_prompt", "false"],
    **{f"b{n}": ["--per_device_train_batch_size", str(n)] for n in (1, 2, 3, 4, 8)},
    **{f"a{n}": ["--gradient_accumulation_steps", str(n)] for n in (2, 4)},
}


def make_dataset(root: Path, boards: int) -> Path:
    """A folder with `sft` and `pairs` configs from real boards: the Oracle's
    action against a same-format answer aimed the opposite way."""
    import json as _json

    from poolbench_data.core.records import Scenario, Shot
    from poolbench_data.hub.build import build_benchmark
    from poolbench_data.hub.folder import read_rows
    from poolbench_data.hub.update import replace_rows, write_config
    from poolbench_data.llm.player import EvalSettings, evaluate_model, llm_trace_rows
    from poolbench_data.llm.replay import ReplayBackend
    from poolbench_data.pairs.text import build_pairs
    from poolbench_data.demos.text import sft_rows

    folder = root / "poolbench"
    build_benchmark(folder, eval_n=1, train_n=boards, train_seed=7, players=("oracle",), progress=False)
    scen = read_rows(folder, "scenarios", "train")
    away = []
    for r in scen:
        action = _json.loads(r["oracle_action"])
        action["aim_angle_deg"] = round((action["aim_angle_deg"] + 180.0) % 360.0, 2)
        away.append([_json.dumps(action)])
    settings = EvalSettings(model="away", backend="replay")
    recs, _ = evaluate_model([Scenario.from_row(r) for r in scen], ReplayBackend(away), settings, progress=False)
    oracle = {r["id"]: Shot.from_row(r["oracle_shot"]) for r in scen}
    replace_rows(folder, "traces", "train", llm_trace_rows(recs, oracle, settings), drop=lambda r: False)
    traces = read_rows(folder, "traces", "train")
    write_config(folder, "sft", {"train": sft_rows(scen, traces, "train")}, "sft", {})
    write_config(folder, "pairs", {"train": build_pairs(scen, traces, ("oracle-vs-llm",))}, "pairs", {})
    return folder


def usage_error(message: str) -> None:
    from poolbench_data.core.errors import UserError

    raise UserError(message)


def setting_args(setting: str) -> tuple[str, list[str]]:
    """`kind:flag:...` -> (kind, the script arguments its flags set); a mistake names the setting."""
    kind, *flags = setting.split(":")
    if kind not in RECIPES:
        usage_error(f"--settings: {setting!r} starts with {kind!r}. Fix: start each setting with sft or dpo.")
    unknown = [f for f in flags if f not in FLAGS]
    if unknown:
        usage_error(f"--settings: unknown flag(s) {unknown} in {setting!r}. Fix: use {', '.join(FLAGS)}.")
    return kind, [a for f in flags for a in FLAGS[f]]


def _last(flag_args: list[str], name: str) -> int | None:
    """The value the last `name` among a setting's script arguments gives, or None."""
    values = [int(flag_args[i + 1]) for i, a in enumerate(flag_args) if a == name]
    return values[-1] if values else None


def batch_size(kind: str, flag_args: list[str]) -> int:
    """Rows a step: the last --per_device_train_batch_size a setting's flags give, else the recipe's."""
    size = _last(flag_args, "--per_device_train_batch_size")
    if size is not None:
        return size
    import yaml

    return int(yaml.safe_load((ROOT / RECIPES[kind]).read_text()).get("per_device_train_batch_size", 1))


def accumulation(flag_args: list[str]) -> int:
    """Batches an optimizer step: the last --gradient_accumulation_steps a setting's flags give, else 1."""
    return _last(flag_args, "--gradient_accumulation_steps") or 1


def run_setting(setting: str, data: Path, rows: int, work: Path) -> dict:
    kind, flag_args = setting_args(setting)
    batch, accumulated = batch_size(kind, flag_args), accumulation(flag_args)
    steps = rows // (batch * accumulated)
    out = work / setting.replace(":", "-")
    cmd = [sys.executable, f"training/{kind}.py", "--config", RECIPES[kind], "--dataset_name", str(data),
           "--output_dir", str(out), "--max_steps", str(steps), "--per_device_train_batch_size", str(batch),
           "--gradient_accumulation_steps", "1", "--save_strategy", "no", "--logging_steps", "1",
           "--save_merged", "false", *flag_args]
    started = time.perf_counter()
    with open(work / f"{out.name}.log", "w") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise RuntimeError(f"{setting} failed (status {status}); see {work / out.name}.log")
    metrics = json.loads((out / "train_results.json").read_text())
    seconds = metrics["train_runtime"] / rows
    if kind == "dpo":
        seconds += metrics["trainer_setup_seconds"] / metrics["train_pairs"]
    return {"setting": setting, "s_per_example": seconds, "peak_rss_gb": usage.ru_maxrss / 2**20,
            "wall_s": time.perf_counter() - started, "rows": rows, "steps": steps, "batch": batch,
            "accumulation": accumulated,
            **{k: metrics.get(k) for k in ("train_dtype", "train_bf16_autocast", "compact_lm_head",
                                            "cpu_native_bf16", "precompute_ref_log_probs")}}


def floor_seconds(tokens: int = 1514, completion: int = 64, repeats: int = 5) -> dict:
    """The arithmetic floor of one SFT demonstration (all weights, forward + backward) on this CPU: its FLOPs
    over the GEMM throughput measured here on the model's own shapes, per dtype.

    FLOPs: 2 per weight and token forward, 4 backward (input and weight gradients) over the linear layers;
    attention scores and values 4 * T^2 * d per layer forward (causal: half counted), twice that backward;
    the LM head over the completion positions only. Elementwise work (norms, activations, softmax) and the
    optimizer are left out: the floor is a lower bound.
    """
    import torch
    from transformers import AutoConfig

    from poolbench_data.llm.model import default_model_dir

    c = AutoConfig.from_pretrained(default_model_dir())
    d, f, L, V = c.hidden_size, c.intermediate_size, c.num_hidden_layers, c.vocab_size
    kv = c.num_key_value_heads * (d // c.num_attention_heads)
    shapes = [(d, d), (d, kv), (d, kv), (d, d), (d, f), (d, f), (f, d)]  # q k v o gate up down: (in, out)
    linear = 6 * tokens * L * sum(i * o for i, o in shapes)
    attention = 3 * L * 4 * tokens * tokens * d / 2
    head = 6 * completion * d * V
    flops = linear + attention + head
    out = {"tokens": tokens, "tflop": flops / 1e12}
    for dtype in (torch.float32, torch.bfloat16):
        seconds = 0.0
        for i, o in shapes:  # forward, input gradient, weight gradient of each layer, once
            a, w, g = (torch.randn(tokens, i, dtype=dtype), torch.randn(i, o, dtype=dtype),
                       torch.randn(tokens, o, dtype=dtype))
            for fn in (lambda: a @ w, lambda: g @ w.T, lambda: a.T @ g):
                fn()
                times = []
                for _ in range(repeats):
                    t = time.perf_counter()
                    fn()
                    times.append(time.perf_counter() - t)
                seconds += sorted(times)[repeats // 2]
        gflops = 6 * tokens * sum(i * o for i, o in shapes) / seconds / 1e9
        name = str(dtype).removeprefix("torch.")
        out[f"{name}_gemm_gflops"] = gflops
        out[f"{name}_floor_s"] = flops / (gflops * 1e9)
    return out


def print_rows(rows: list[dict], steps: int, capability: str, native_bf16: bool) -> None:
    print(f"\nTraining cost, {steps} rows per setting, SmolLM2-135M-Instruct, "
          f"{os.cpu_count()} cores, {capability}, native bf16: {native_bf16}")
    print("speed-up: the first row of the same kind in this run over this row")
    print(f"{'setting':28} {'s/example':>10} {'speed-up':>8} {'peak RSS GB':>12} {'wall s':>8}  computed as")
    first: dict[str, float] = {}
    for r in rows:
        kind = r["setting"].split(":")[0]
        base = first.setdefault(kind, r["s_per_example"])
        how = f"{r['train_dtype']}{' +autocast' if r['train_bf16_autocast'] else ''}" + (
            ", compact head" if r["compact_lm_head"] else ", full head") + (
            (", ref precomputed" if r["precompute_ref_log_probs"] else ", ref each step") if kind == "dpo" else "")
        print(f"{r['setting']:28} {r['s_per_example']:>10.2f} {base / r['s_per_example']:>7.2f}x "
              f"{r['peak_rss_gb']:>12.2f} {r['wall_s']:>8.0f}  {how}")


@dataclass(frozen=True)
class ScriptArguments:
    """Training cost: seconds per SFT demonstration and per DPO pair, peak RSS."""

    steps: int = field(default=4, metadata={"help": "rows each setting trains on: steps of its batch's rows (a batch "
                                                     "of N runs steps/N steps)"})
    settings: str = field(default=DEFAULT_SETTINGS, metadata={"help": "comma list of sft|dpo[:flag...] (flags in the "
                                                                       "module doc); default: the recipes as shipped"})
    boards: int = field(default=8, metadata={"help": "training boards in the benchmark's dataset"})
    json: str = field(default="", metadata={"help": "also write the rows to this file (a list of objects; '': no "
                                                     "file)"})
    floor: bool = field(default=False, metadata={"help": "also print the arithmetic floor of a demonstration (FLOPs "
                                                          "over measured GEMM throughput)"})


def bench(args: ScriptArguments) -> list[dict]:
    """Every setting checked before any training, then each trained in its own process; the rows."""
    json_path = Path(args.json) if args.json else None
    settings = [s for s in args.settings.split(",") if s]
    for s in settings:  # every mistake before minutes of work
        kind, flag_args = setting_args(s)
        per_step = batch_size(kind, flag_args) * accumulation(flag_args)
        if args.steps % per_step:
            usage_error(f"--steps {args.steps}: {s!r} trains {per_step} rows a step. Fix: pass a --steps that every "
                        "setting's rows a step divide.")
    if json_path is not None and not json_path.parent.is_dir():
        usage_error(f"--json: folder {json_path.parent} does not exist. Fix: create it or pick another path.")
    from poolbench_data.llm.model import cpu_has_native_bf16

    rows = []
    if settings:  # `--settings "" --floor`: the floor alone
        with tempfile.TemporaryDirectory(prefix="bench-training-") as tmp:
            work = Path(tmp)
            data = make_dataset(work, args.boards)
            rows = [run_setting(s, data, args.steps, work) for s in settings]
    import torch

    if rows:
        print_rows(rows, args.steps, torch.backends.cpu.get_cpu_capability(), cpu_has_native_bf16())
    if args.floor:
        fl = floor_seconds()
        print(f"\nFloor of one demonstration ({fl['tokens']} tokens, all weights, forward + backward): "
              f"{fl['tflop']:.2f} TFLOP; GEMMs on the model's shapes: float32 {fl['float32_gemm_gflops']:.0f} GFLOP/s "
              f"-> {fl['float32_floor_s']:.1f} s, bfloat16 {fl['bfloat16_gemm_gflops']:.0f} GFLOP/s -> "
              f"{fl['bfloat16_floor_s']:.1f} s")
    if json_path is not None:
        json_path.write_text(json.dumps(rows, indent=1) + "\n")
    return rows


def main(argv=None) -> int:
    from poolbench_data.config import parse, run_main

    def go() -> int:
        bench(parse(ScriptArguments, argv, __doc__))  # the rows: for a caller of bench(); printed here
        return 0

    return run_main(go)


if __name__ == "__main__":
    sys.exit(main())
