"""The closed loop, one command: evaluate -> pairs -> DPO -> re-evaluate -> compare.

    .venv/bin/python training/loop.py                       # embedded SmolLM2 on CPU (the pilot)
    .venv/bin/python training/loop.py --recipe training/recipes/llama-3.1-8b-gpu.yaml --model /models/llama

Steps (each a command you can also run by hand; outputs under --work_dir):
 1. before: `poolbench eval` on the held-out test boards (seed 0)
 2. dataset: builders/build_dataset.py with a train split from another seed
 3. samples: `poolbench eval --split train --dataset_dir ...` (n samples per board)
 4. pairs:   builders/build_pairs.py
 5. train:   training/dpo.py --config RECIPE (LoRA; adapter + merged model)
 6. after:   `poolbench eval --model <merged>` on the same test boards
 7. compare: Table 1 side by side, exact McNemar on contact and potting
A step whose output exists is skipped, so an interrupted loop resumes.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class LoopArguments:
    """Run the PoolBench DPO loop end to end."""

    model: str = field(default="", metadata={"help": "Model folder or Hub id ('' = the embedded SmolLM2)."})
    recipe: str = field(default="training/recipes/smollm2-135m-cpu.yaml", metadata={"help": "DPO recipe YAML."})
    work_dir: str = field(default="runs/loop", metadata={"help": "Where every step writes."})
    eval_n: int = field(default=50, metadata={"help": "Held-out evaluation boards (seed 0)."})
    train_n: int = field(default=40, metadata={"help": "Training boards (seed train_seed) sampled for pairs."})
    train_seed: int = field(default=1, metadata={"help": "Base seed of the training boards."})
    samples: int = field(default=2, metadata={"help": "Responses per training board (on-policy pairs need >= 2)."})
    temperature: float = field(default=0.8, metadata={"help": "Sampling temperature on training boards."})
    max_steps: int = field(default=10, metadata={"help": "DPO optimizer steps (overrides the recipe)."})
    extra_dpo_args: str = field(default="", metadata={"help": "More training/dpo.py arguments, space-separated."})


def _run(cmd: list[str]) -> None:
    print("+ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=ROOT, check=True)


def main(argv=None):
    sys.path.insert(0, str(ROOT))
    from poolbench_data.cli.args import parse

    a = parse(LoopArguments, argv)
    py = sys.executable
    cli = [py, "-m", "poolbench_data.cli"]
    work = Path(a.work_dir)
    data = work / "dataset" / "poolbench"
    model_args = ["--model", a.model] if a.model else []
    if not (work / "before" / "llm_traces.jsonl").exists():
        _run(cli + ["eval", *model_args, "--n", str(a.eval_n), "--name", "before", "--out", str(work / "before"),
                    "--quiet"])
    if not (data / "README.md").exists():
        _run([py, "builders/build_dataset.py", "--output_dir", str(data), "--eval_n", str(a.eval_n),
              "--train_n", str(a.train_n), "--train_seed", str(a.train_seed), "--players", "oracle"])
    if not (work / "samples" / "llm_traces.jsonl").exists():
        _run(cli + ["eval", *model_args, "--n", str(a.train_n), "--seed", str(a.train_seed), "--samples",
                    str(a.samples), "--temperature", str(a.temperature), "--name", "policy", "--split", "train",
                    "--dataset_dir", str(data), "--out", str(work / "samples"), "--boards", "0", "--quiet"])
    if not (data / "data" / "pairs").exists():
        _run([py, "builders/build_pairs.py", "--dataset_dir", str(data)])
    out = work / "dpo"
    if not (out / "merged").exists():
        _run([py, "training/dpo.py", "--config", a.recipe, "--dataset_name", str(data), "--output_dir", str(out),
              "--max_steps", str(a.max_steps), *(["--model_name_or_path", a.model] if a.model else []),
              *a.extra_dpo_args.split()])
    if not (work / "after" / "llm_traces.jsonl").exists():
        _run(cli + ["eval", "--model", str(out / "merged"), "--n", str(a.eval_n), "--name", "after",
                    "--out", str(work / "after"), "--quiet"])
    _run(cli + ["compare", str(work / "before" / "llm_traces.jsonl"), str(work / "after" / "llm_traces.jsonl"),
                "--out", str(work / "comparison.txt")])


if __name__ == "__main__":
    main()
