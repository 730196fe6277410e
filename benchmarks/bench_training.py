"""Training cost on this machine: seconds per SFT example and per DPO pair,
fp32 against bf16 weights (ratio from the same run), and peak RSS.

    python benchmarks/bench_training.py                  # 4 optimizer steps of each, batch 1
    python benchmarks/bench_training.py --steps 8 --settings dpo:bfloat16:ckpt
    python benchmarks/bench_training.py --settings sft:bfloat16,sft:bfloat16:full,sft:float32:full:amp

Each setting runs the real script (training/sft.py, training/dpo.py with the
CPU recipes) in its own process on real PoolBench rows (prompts of ~1,450
tokens), so its peak RSS is its own; time per example comes from the
trainer's own train_runtime (model loading excluded).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECIPES = {"sft": "training/recipes/sft-smollm2-135m-cpu.yaml", "dpo": "training/recipes/smollm2-135m-cpu.yaml"}
DEFAULT_SETTINGS = "sft:float32,sft:bfloat16,dpo:float32,dpo:bfloat16,dpo:bfloat16:ckpt"


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
    from poolbench_data.prefs.pairs import build_pairs
    from poolbench_data.prefs.sft import sft_rows

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


def run_setting(setting: str, data: Path, steps: int, work: Path) -> dict:
    kind, dtype, *flags = setting.split(":")
    out = work / setting.replace(":", "-")
    cmd = [sys.executable, f"training/{kind}.py", "--config", RECIPES[kind], "--dataset_name", str(data),
           "--output_dir", str(out), "--max_steps", str(steps), "--dtype", dtype, "--per_device_train_batch_size",
           "1", "--gradient_accumulation_steps", "1", "--save_strategy", "no", "--logging_steps", "1",
           "--gradient_checkpointing", "true" if "ckpt" in flags else "false", "--save_merged", "false"]
    # LoRA r16 unless `full` (all weights), whatever the recipe says; `amp`: bf16
    # matmuls under CPU autocast over the dtype's weights.
    cmd += ["--use_peft", "false" if "full" in flags else "true", "--bf16", "true" if "amp" in flags else "false"]
    started = time.perf_counter()
    with open(work / f"{out.name}.log", "w") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise RuntimeError(f"{setting} failed (status {status}); see {work / out.name}.log")
    state = json.loads((out / "trainer_state.json").read_text())
    runtime = next(h["train_runtime"] for h in reversed(state["log_history"]) if "train_runtime" in h)
    return {"setting": setting, "seconds_per_example": runtime / steps, "peak_rss_gb": usage.ru_maxrss / 2**20,
            "wall_s": time.perf_counter() - started}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=4, help="optimizer steps per setting (batch 1: one row each)")
    p.add_argument("--settings", default=DEFAULT_SETTINGS,
                   help="comma list of kind:dtype[:flag...]; flags: ckpt (gradient checkpointing), "
                   "full (all weights, no LoRA), amp (bf16 autocast over the dtype's weights)")
    p.add_argument("--boards", type=int, default=8, help="training boards in the benchmark's dataset")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory(prefix="bench-training-") as tmp:
        work = Path(tmp)
        data = make_dataset(work, args.boards)
        rows = [run_setting(s, data, args.steps, work) for s in args.settings.split(",") if s]
    print(f"\nTraining cost, {args.steps} steps of batch 1 per setting, SmolLM2-135M-Instruct (LoRA r16 unless full) "
          f"({os.cpu_count()} cores)")
    print(f"{'setting':24} {'s/example':>10} {'peak RSS GB':>12} {'wall s':>8}")
    for r in rows:
        print(f"{r['setting']:24} {r['seconds_per_example']:>10.2f} {r['peak_rss_gb']:>12.2f} {r['wall_s']:>8.0f}")
    by = {r["setting"]: r for r in rows}
    for kind in ("sft", "dpo"):
        a, b = by.get(f"{kind}:float32"), by.get(f"{kind}:bfloat16")
        if a and b:
            print(f"{kind}: fp32 / bf16 time ratio {a['seconds_per_example'] / b['seconds_per_example']:.2f}, "
                  f"RSS ratio {a['peak_rss_gb'] / b['peak_rss_gb']:.2f}")


if __name__ == "__main__":
    main()
