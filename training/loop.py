"""The closed loop, one command: evaluate -> SFT -> sample -> pairs -> DPO -> evaluate -> compare.

    .venv/bin/python training/loop.py                       # the CPU pilot: embedded SmolLM2-135M
    .venv/bin/python training/loop.py --stages after,compare --work_dir runs/loop
    .venv/bin/python training/loop.py --model /models/llama --sft_recipe training/recipes/sft-llama-3.1-8b-gpu.yaml \
        --dpo_recipe training/recipes/llama-3.1-8b-gpu.yaml --train_n 5000 --sft_examples 0

Stages (each a command you can also run by hand; outputs under --work_dir; a
stage whose output exists is skipped, so an interrupted loop resumes, and
--stages runs a subset):
  before    `poolbench eval` of the starting model on the held-out test boards (seed 0)
  dataset   builders/build_dataset.py: test split + a train split from --train_seed (Oracle traces)
  sft_data  builders/build_sft.py: Oracle demonstrations from the train split
  sft       training/sft.py (warm start), checkpoints every --sft_eval_every examples
  scaling   `poolbench eval` of SFT checkpoints on the test boards: the supervised-budget table
  samples   the SFT model on --sample_n train boards, --samples responses each (free text)
  pairs     builders/build_pairs.py: on-policy (fine physics score) and Oracle-vs-model pairs
  dpo       training/dpo.py from the SFT model (so the reference is the SFT model)
  after     `poolbench eval` of the DPO model on the same test boards
  compare   before/after with exact McNemar; Random and the Heuristic on the same boards;
            writes WORK_DIR/pilot.json (and --results_json, if given)

The tool track (--track tools; issue 20): the model chooses ball, pocket and
speed and calls the ghost_ball tool for the angle.
    .venv/bin/python training/loop.py --track tools --eval_n 200 \
        --results_json docs/results/pilot_tools_smollm2_cpu.json
  dataset    as above (the held-out set: --eval_n boards of seed 0)
  sft_data   builders/build_sft.py --tools: tool-use demonstrations (config sft_tools)
  sft        training/sft.py with --tools_sft_recipe, --sft_examples of them
  eval_sft   `poolbench eval --tools` of the tool-SFT model (with Random and both Heuristics)
  samples    the tool-SFT model on --sample_n train boards, --samples tool-using conversations each
  pairs      builders/build_pairs.py --tool_eval_dir: best against worst sample, at the turn where their
             choices part (config pairs_tools)
  dpo        training/dpo.py with --tools_dpo_recipe from the tool-SFT model
  eval_dpo   `poolbench eval --tools` of the DPO model
  grpo       training/grpo.py --tool_env from the tool-SFT model, --grpo_steps steps (PoolBenchEnv)
  eval_grpo  `poolbench eval --tools` of the GRPO model
  free_text  `poolbench eval` of --free_text_model (a free-text SFT model), if given
  results    the counts, exact McNemar against tool SFT; WORK_DIR/pilot_tools.json (and --results_json)
"""

from __future__ import annotations

import json
import platform
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("before", "dataset", "sft_data", "sft", "scaling", "samples", "pairs", "dpo", "after", "compare")
TOOL_STAGES = ("dataset", "sft_data", "sft", "eval_sft", "samples", "pairs", "dpo", "eval_dpo", "grpo", "eval_grpo",
               "free_text", "results")
TRACKS = {"free_text": STAGES, "tools": TOOL_STAGES}
TOOL_BASELINES = "oracle,heuristic-centre,heuristic,random"


@dataclass
class LoopArguments:
    """Run the PoolBench training loop end to end (resumable, stage by stage)."""

    model: str = field(default="", metadata={"help": "Starting model folder or Hub id ('' = the embedded SmolLM2)."})
    sft_recipe: str = field(default="training/recipes/sft-smollm2-135m-cpu.yaml", metadata={"help": "SFT recipe."})
    dpo_recipe: str = field(default="training/recipes/smollm2-135m-cpu.yaml", metadata={"help": "DPO recipe."})
    track: str = field(default="free_text", metadata={"help": "free_text (the paper's protocol) or tools (the "
                                                               "model calls ghost_ball for the angle)."})
    work_dir: str = field(default="", metadata={"help": "Where every stage writes ('' = runs/loop, runs/loop-tools)."})
    stages: str = field(default="", metadata={"help": f"Comma-separated subset of the track's stages ('' = all): "
                                                      f"{STAGES} or {TOOL_STAGES}."})
    tools_sft_recipe: str = field(default="training/recipes/sft-tools-smollm2-135m-cpu.yaml",
                                  metadata={"help": "Tool-use SFT recipe (--track tools)."})
    tools_dpo_recipe: str = field(default="training/recipes/dpo-tools-smollm2-135m-cpu.yaml",
                                  metadata={"help": "DPO recipe on tool-use pairs (--track tools)."})
    grpo_recipe: str = field(default="training/recipes/grpo-tools-smollm2-135m-cpu.yaml",
                             metadata={"help": "GRPO recipe with the tool environment (--track tools)."})
    grpo_steps: int = field(default=4, metadata={"help": "GRPO optimizer steps (--track tools; overrides the recipe)."})
    free_text_model: str = field(default="", metadata={"help": "A free-text SFT model to evaluate on the same boards "
                                                                "(--track tools; '' = not evaluated)."})
    eval_n: int = field(default=50, metadata={"help": "Held-out evaluation boards (seed 0)."})
    train_n: int = field(default=400, metadata={"help": "Training boards (seed train_seed)."})
    train_seed: int = field(default=1, metadata={"help": "Base seed of the training boards (never 0)."})
    sft_examples: int = field(default=0, metadata={"help": "Demonstrations to train on (0 = all)."})
    sft_epochs: float = field(default=1.0, metadata={"help": "Passes over the demonstrations."})
    sft_eval_every: int = field(default=0, metadata={"help": "Evaluate an SFT checkpoint every N examples (0: none)."})
    sample_n: int = field(default=60, metadata={"help": "Training boards the SFT model samples on."})
    samples: int = field(default=4, metadata={"help": "Responses per sampled board (on-policy pairs need >= 2)."})
    temperature: float = field(default=0.8, metadata={"help": "Sampling temperature on the training boards."})
    dpo_steps: int = field(default=10, metadata={"help": "DPO optimizer steps (overrides the recipe; 0 = the "
                                                           "recipe's epochs over every pair)."})
    # fp32: the CPU recipes merge the LoRA update into fp32 weights, and vLLM's
    # dtype "auto" casts fp32 checkpoints to bf16, which rounds most of it away.
    eval_model_args: str = field(default="dtype=float32,enforce_eager=True",
                                 metadata={"help": "--model_args of every evaluation (the same for all models)."})
    extra_sft_args: str = field(default="", metadata={"help": "More training/sft.py arguments."})
    extra_dpo_args: str = field(default="", metadata={"help": "More training/dpo.py arguments."})
    results_json: str = field(default="", metadata={"help": "Also write the before/after JSON here."})
    after_model: str = field(default="dpo", metadata={"help": "What `after` evaluates: dpo (SFT + DPO) or sft."})


class StageFailed(RuntimeError):
    """A stage's command exited non-zero: one line naming the stage, its log and its exit code."""


def _run(cmd: list[str], log: Path) -> None:
    """Run one stage's command from the repository root, its output shown and kept in `log`."""
    print("+ " + shlex.join(cmd), flush=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as f, subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE,
                                                 stderr=subprocess.STDOUT) as proc:
        for chunk in iter(lambda: proc.stdout.read1(65536), b""):
            sys.stdout.buffer.write(chunk)
            sys.stdout.flush()
            f.write(chunk)
        code = proc.wait()
    if code != 0:
        raise StageFailed(f"{Path(cmd[1]).name if len(cmd) > 1 else cmd[0]} exited with code {code}; "
                          f"its output is in {log}")


class Loop:
    def __init__(self, a: LoopArguments):
        self.a = a
        self.py = sys.executable
        self.cli = [self.py, "-m", "poolbench_data.cli"]
        self.tools = a.track == "tools"
        # Absolute once: the stages run from the repository root, the user may not.
        self.work = Path(a.work_dir or ("runs/loop-tools" if self.tools else "runs/loop")).resolve()
        self.data = self.work / "dataset" / "poolbench"
        self.sft_recipe = a.tools_sft_recipe if self.tools else a.sft_recipe
        self.dpo_recipe = a.tools_dpo_recipe if self.tools else a.dpo_recipe
        self.grpo_dir = self.work / "grpo"
        self.stage = ""
        self.sft_dir = self.work / "sft"
        self.dpo_dir = self.work / "dpo"

    def run(self, cmd: list[str]) -> None:
        """A stage's command, its output kept in WORK_DIR/logs/<stage>.log."""
        try:
            _run(cmd, self.work / "logs" / f"{self.stage}.log")
        except StageFailed as e:
            raise StageFailed(f"stage {self.stage} failed: {e}") from None

    def evaluate(self, out: Path, **settings) -> None:
        """`poolbench eval` in its own process (the engine's memory goes with it), handed a config file
        (WORK_DIR/configs/<folder>.yaml), not a string of flags."""
        from poolbench_data.evaluation.config import EvalConfig, write_yaml

        config = EvalConfig(out=str(out), model_args=self.a.eval_model_args, quiet=True, **settings)
        path = self.work / "configs" / f"{out.name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_yaml(config, path)
        self.run(self.cli + ["eval", "--config", str(path)])

    def eval(self, name: str, model: str | None, tools: bool | None = None) -> None:
        out = self.work / name
        if (out / "llm_traces.jsonl").exists():
            return
        tools = self.tools if tools is None else tools
        # The tool track is measured against both Heuristics (issue 20's goal: the pot-point one).
        self.evaluate(out, model=model, n=self.a.eval_n, name=name, tools=tools,
                      **({"baselines": TOOL_BASELINES} if self.tools else {}))

    def before(self):
        self.eval("before", self.a.model or None)

    def dataset(self):
        if not (self.data / "README.md").exists():
            self.run([self.py, "builders/build_dataset.py", "--output_dir", str(self.data),
                      "--eval_n", str(self.a.eval_n), "--train_n", str(self.a.train_n),
                      "--train_seed", str(self.a.train_seed), "--players", "oracle"])

    def sft_data(self):
        config = "sft_tools" if self.tools else "sft"
        if not (self.data / "data" / config).exists():
            self.run([self.py, "builders/build_sft.py", "--dataset_dir", str(self.data),
                      *(["--tools"] if self.tools else [])])

    def sft(self):
        if (self.sft_dir / "merged").exists():
            return
        # One example per micro-batch: examples and optimizer steps convert by the accumulation.
        accumulation = int(_override(self.a.extra_sft_args, "gradient_accumulation_steps")
                           or _recipe_value(self.sft_recipe, "gradient_accumulation_steps", 1))
        extra = ["--max_steps", str(max(1, self.a.sft_examples // accumulation))] if self.a.sft_examples else []
        if self.a.sft_eval_every:
            extra += ["--save_strategy", "steps", "--save_steps", str(max(1, self.a.sft_eval_every // accumulation)),
                      "--save_total_limit", "100"]
        self.run([self.py, "training/sft.py", "--config", self.sft_recipe, "--dataset_name", str(self.data),
                  "--output_dir", str(self.sft_dir), "--num_train_epochs", str(self.a.sft_epochs), *extra,
                  *(["--model_name_or_path", self.a.model] if self.a.model else []), *self.a.extra_sft_args.split()])

    def scaling(self):
        """Each SFT checkpoint on the test boards, named by the examples it has seen."""
        final = examples_seen(self.sft_dir) if (self.sft_dir / "trainer_state.json").exists() else None
        for ckpt in sorted(self.sft_dir.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1])):
            if examples_seen(ckpt) != final:  # the last checkpoint is the final model, evaluated as `sft`
                self.eval(f"sft-{examples_seen(ckpt)}", str(servable(ckpt)))
        self.eval("sft", str(self.sft_dir / "merged"))

    def samples(self):
        out = self.work / "samples"
        if (out / "llm_traces.jsonl").exists():
            return
        # The tool track's pairs are built from the conversations in OUT (tool_calls.jsonl), not the dataset's traces.
        where = {"tools": True} if self.tools else {"split": "train", "dataset_dir": str(self.data)}
        self.evaluate(out, model=str(self.sft_dir / "merged"), n=self.a.sample_n, seed=self.a.train_seed,
                      samples=self.a.samples, temperature=self.a.temperature, name="policy", boards=0, **where)

    def pairs(self):
        config = "pairs_tools" if self.tools else "pairs"
        if not (self.data / "data" / config).exists():
            self.run([self.py, "builders/build_pairs.py", "--dataset_dir", str(self.data),
                      *(["--tool_eval_dir", str(self.work / "samples")] if self.tools else [])])

    def dpo(self):
        if not (self.dpo_dir / "merged").exists():
            steps = ["--max_steps", str(self.a.dpo_steps)] if self.a.dpo_steps else []
            self.run([self.py, "training/dpo.py", "--config", self.dpo_recipe, "--dataset_name", str(self.data),
                      "--output_dir", str(self.dpo_dir), *steps, "--model_name_or_path",
                      str(self.sft_dir / "merged"), *self.a.extra_dpo_args.split()])

    def after(self):
        if self.a.after_model == "sft" and (self.sft_dir / "llm_traces.jsonl").exists():
            # `scaling` evaluated this very model on the same boards: reuse it, not ~4 min of generation again.
            import shutil

            (self.work / "after").mkdir(parents=True, exist_ok=True)
            for name in ("summary.json", "results.json", "report.txt", "llm_traces.jsonl"):  # traces last: "done"
                shutil.copy2(self.sft_dir / name, self.work / "after" / name)
            return
        self.eval("after", str((self.dpo_dir if self.a.after_model == "dpo" else self.sft_dir) / "merged"))

    # --- the tool track ---

    def eval_sft(self):
        self.eval("sft", str(self.sft_dir / "merged"))

    def eval_dpo(self):
        self.eval("dpo", str(self.dpo_dir / "merged"))

    def grpo(self):
        if not (self.grpo_dir / "merged").exists():
            self.run([self.py, "training/grpo.py", "--config", self.a.grpo_recipe, "--dataset_name", str(self.data),
                      "--output_dir", str(self.grpo_dir), "--max_steps", str(self.a.grpo_steps), "--model_name_or_path",
                      str(self.sft_dir / "merged")])

    def eval_grpo(self):
        self.eval("grpo", str(self.grpo_dir / "merged"))

    def free_text(self):
        if self.a.free_text_model:
            self.eval("free_text", self.a.free_text_model, tools=False)  # the paper's protocol, as it was trained

    def results(self):
        print(self.write_result("pilot_tools.json", pilot_tools_result(self.work, self.data)))

    def write_result(self, name: str, result: dict) -> str:
        """The pilot's JSON, with the command that ran it, in WORK_DIR/name and --results_json."""
        result["command"] = "python training/loop.py " + shlex.join(sys.argv[1:])
        text = json.dumps(result, indent=2, sort_keys=True) + "\n"
        (self.work / name).write_text(text)
        if self.a.results_json:
            Path(self.a.results_json).parent.mkdir(parents=True, exist_ok=True)
            Path(self.a.results_json).write_text(text)
        return text

    def compare(self):
        self.run(self.cli + ["compare", str(self.work / "before" / "llm_traces.jsonl"),
                             str(self.work / "after" / "llm_traces.jsonl"), "--out", str(self.work / "comparison.txt")])
        after = "SFT + DPO" if self.a.after_model == "dpo" else "SFT only"
        self.write_result("pilot.json", pilot_result(self.work, self.data, after))
        print(scaling_table(self.work))


def _override(args: str, key: str) -> str | None:
    words = args.split()
    return words[words.index(f"--{key}") + 1] if f"--{key}" in words[:-1] else None


def _recipe_value(recipe: str, key: str, default):
    import yaml

    return yaml.safe_load((ROOT / recipe).read_text()).get(key, default)


def examples_seen(checkpoint: Path) -> int:
    state = json.loads((checkpoint / "trainer_state.json").read_text())
    return int(state["global_step"] * state.get("train_batch_size", 1) * _accumulation(checkpoint))


def servable(checkpoint: Path) -> Path:
    """A folder vLLM can load: the checkpoint itself, or its LoRA adapter merged."""
    if not (checkpoint / "adapter_config.json").exists():
        return checkpoint
    merged = checkpoint / "merged"
    if not merged.exists():
        from peft import AutoPeftModelForCausalLM
        from transformers import AutoTokenizer

        import torch

        # fp32, as the recipes' merged/: merged into bf16 weights most of a LoRA update rounds away.
        model = AutoPeftModelForCausalLM.from_pretrained(checkpoint, dtype=torch.float32).merge_and_unload()
        model.config.use_cache = True
        model.save_pretrained(merged)
        AutoTokenizer.from_pretrained(checkpoint).save_pretrained(merged)
    return merged


def _rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def player_stats(rows: list[dict]) -> dict:
    """The pilot's per-player numbers from llm_traces.jsonl rows."""
    from poolbench_data.report.stats import quantile

    fired = [r for r in rows if r["sim_status"] not in ("not-fired", "error")]
    errors = [abs(r["angle_error_deg"]) for r in fired if r["angle_error_deg"] is not None]
    return {
        "parseable": sum(r["parse_status"] == "ok" for r in rows),
        **{m: sum(bool(r[m]) for r in rows) for m in ("legal_contact", "own_potted", "clean_pot", "foul")},
        "median_abs_angle_error_deg": round(quantile(errors, 0.5), 2) if errors else None,
        "distinct_aims": len({round(r["action"]["phi"]) % 360 for r in fired}),
    }


def pilot_result(work: Path, data: Path, after_label: str) -> dict:
    """Before/after of the loop in the shape docs/results/pilot_*.json keeps."""
    before, after = _rows(work / "before" / "llm_traces.jsonl"), _rows(work / "after" / "llm_traces.jsonl")
    p = mcnemar_ps(before, after, {"legal_contact": lambda r: bool(r["legal_contact"]),
                                   "own_potted": lambda r: bool(r["own_potted"]),
                                   "parseable": lambda r: r["parse_status"] == "ok"})
    baseline = baseline_counts(work / "after", ("random", "heuristic-centre"))
    return {
        "after_model": after_label,
        "n": len(before),
        "before": player_stats(before),
        "after": player_stats(after),
        "random": baseline.get("random", {}),
        "heuristic_centre": baseline.get("heuristic-centre", {}),
        "mcnemar_p": p,
        "sft_examples": examples_seen(work / "sft") if (work / "sft" / "trainer_state.json").exists() else 0,
        "sft_rows_available": _config_rows(data, "sft"),
        "dpo_pairs": _trained_pairs(work / "dpo"),
        "scaling": scaling_rows(work),
        "wall_minutes": _wall_minutes(work),
        "machine": _machine(),
    }


def mcnemar_ps(base: list[dict], other: list[dict], tests: dict) -> dict[str, float]:
    """Exact McNemar of `other` against `base` on the same shots (scenario, sample), for each named test."""
    from poolbench_data.report.stats import mcnemar_exact

    key = lambda r: (r["scenario_id"], r["sample"])  # noqa: E731
    b, o = {key(r): r for r in base}, {key(r): r for r in other}
    if set(b) != set(o):
        raise ValueError("the two evaluations cover different shots; evaluate both with the same --n and --seed")
    return {name: mcnemar_exact(sum(t(b[k]) and not t(o[k]) for k in b), sum(t(o[k]) and not t(b[k]) for k in b))
            for name, t in tests.items()}


def baseline_counts(folder: Path, names: tuple[str, ...]) -> dict[str, dict[str, int]]:
    """The baselines' counts from an evaluation's summary.json, for those of `names` it holds."""
    summary = json.loads((folder / "summary.json").read_text())["summary"]
    return {name: {m: summary[name]["overall"][m]["k"] for m in ("legal_contact", "own_potted", "clean_pot", "foul")}
            for name in names if name in summary}


def tool_stats(folder: Path) -> dict | None:
    """A --tools evaluation's counts: player_stats plus the shots that called the tool."""
    traces = folder / "llm_traces.jsonl"
    if not traces.exists():
        return None
    stats = player_stats(_rows(traces))
    calls = folder / "tool_calls.jsonl"
    if calls.exists():
        stats["tool_called"] = sum(1 for t in _rows(calls) if t["calls"])
    return stats


def pilot_tools_result(work: Path, data: Path) -> dict:
    """The tool track's numbers in the shape of docs/results/pilot_tools_smollm2_cpu.json (issue 20); a stage
    that did not run is null, never a zero."""
    sft = _rows(work / "sft" / "llm_traces.jsonl")
    baseline = baseline_counts(work / "sft", ("random", "heuristic-centre", "heuristic"))
    tests = {"clean_pot": lambda r: bool(r["clean_pot"]), "own_potted": lambda r: bool(r["own_potted"])}
    p = {f"{name}_vs_sft": mcnemar_ps(sft, _rows(work / name / "llm_traces.jsonl"), tests)
         for name in ("dpo", "grpo") if (work / name / "llm_traces.jsonl").exists()}
    grpo_state = work / "grpo" / "trainer_state.json"
    return {
        "n": len(sft),
        "random": baseline.get("random"),
        "heuristic_centre": baseline.get("heuristic-centre"),
        "heuristic_potpoint": baseline.get("heuristic"),
        "sft": tool_stats(work / "sft"),
        "dpo": tool_stats(work / "dpo"),
        "grpo": tool_stats(work / "grpo"),
        "free_text_sft": tool_stats(work / "free_text"),
        "mcnemar_p": p,
        "demonstrations": examples_seen(work / "sft") if (work / "sft" / "trainer_state.json").exists() else 0,
        "demonstrations_available": _config_rows(data, "sft_tools") if data.exists() else None,
        "dpo_pairs": _trained_pairs(work / "dpo"),
        "dpo_pairs_available": (_config_rows(data, "pairs_tools") if (data / "data" / "pairs_tools").exists()
                                else None),
        "grpo_steps": json.loads(grpo_state.read_text())["global_step"] if grpo_state.exists() else 0,
        "wall_minutes": _wall_minutes(work),
        "machine": _machine(),
    }


def _config_rows(data: Path, config: str) -> int:
    from poolbench_data.hub.folder import read_rows

    return len(read_rows(data, config, "train"))


def _trained_pairs(dpo_dir: Path) -> int:
    """Pairs the DPO run actually saw (steps x batch x accumulation)."""
    return examples_seen(dpo_dir) if (dpo_dir / "trainer_state.json").exists() else 0


def _accumulation(run_dir: Path) -> int:
    """From the TrainingArguments the Trainer saves beside its outputs."""
    path = next(iter(sorted(run_dir.rglob("training_args.bin"))), None)
    if path is None:
        return 1
    import torch

    return int(getattr(torch.load(path, weights_only=False), "gradient_accumulation_steps", 1))


def scaling_rows(work: Path) -> list[dict]:
    """before, SFT checkpoints by examples seen, the final SFT model, then DPO."""
    rows = []
    names = ["before"] + sorted((p.name for p in work.glob("sft-*") if p.name[4:].isdigit()),
                                key=lambda n: int(n[4:])) + ["sft", "after"]
    for name in names:
        traces = work / name / "llm_traces.jsonl"
        if traces.exists():
            label = {"before": "base (0 examples)", "sft": "SFT (all)", "after": "after"}.get(
                name, f"SFT ({name[4:]} examples)")
            rows.append({"model": label, **player_stats(_rows(traces))})
    return rows


def scaling_table(work: Path) -> str:
    rows = scaling_rows(work)
    cols = ("parseable", "legal_contact", "own_potted", "clean_pot", "foul", "median_abs_angle_error_deg",
            "distinct_aims")
    head = f"{'model':22}" + "".join(f"{c[:13]:>14}" for c in cols)
    lines = ["Supervised budget and DPO on the held-out boards (counts of 50)", head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['model']:22}" + "".join(f"{'-' if r[c] is None else r[c]!s:>14}" for c in cols))
    return "\n".join(lines)


def _wall_minutes(work: Path) -> float | None:
    """Minutes since this work_dir's first stage ran, when the loop ran it (null for stages run by hand)."""
    start = work / ".started"
    return round((time.time() - start.stat().st_mtime) / 60, 1) if start.exists() else None


def _machine() -> str:
    return _gpu() or f"{platform.machine()}, {_cores()} cores, {_mem_gib()} GiB, no GPU"


def _cores() -> int:
    import os

    return len(os.sched_getaffinity(0))


def _mem_gib() -> int:
    import os

    return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30)


def _gpu() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip().replace("\n", ", ") if out.returncode == 0 else ""


def check_inputs(loop: Loop, stages: list[str]) -> None:
    """Every file a chosen stage will read, before the first stage runs: its recipe, the models named by path
    (made absolute: the stages run from the repository root)."""
    from poolbench_data.cli.args import UserError

    a = loop.a
    recipes = {"sft": "tools_sft_recipe" if loop.tools else "sft_recipe",
               "dpo": "tools_dpo_recipe" if loop.tools else "dpo_recipe", "grpo": "grpo_recipe"}
    for name in (recipes[stage] for stage in stages if stage in recipes):
        if not (ROOT / getattr(a, name)).is_file():
            raise UserError(f"--{name} {getattr(a, name)}: no such recipe (paths are from the repository root, "
                            f"{ROOT}); pick one in training/recipes/")
    for name in ("model", "free_text_model"):
        path = getattr(a, name)
        if path and Path(path).expanduser().exists():
            setattr(a, name, str(Path(path).expanduser().resolve()))  # the stages run from the repository root
        elif path and (path.startswith((".", "/", "~")) or path.count("/") != 1):
            raise UserError(f"--{name} {path}: no such model folder; give a local model folder or a Hub id "
                            "(owner/name)")


def main(argv=None) -> int:
    sys.path.insert(0, str(ROOT))
    from poolbench_data.boards.splits import EVAL_SEED
    from poolbench_data.cli.args import UserError, check_at_least, parse, run_main

    a = parse(LoopArguments, argv)

    def go() -> None:
        if a.track not in TRACKS:
            raise UserError(f"--track must be one of {', '.join(TRACKS)} (got {a.track!r})")
        track = TRACKS[a.track]
        stages = [s for s in a.stages.split(",") if s] or list(track)
        unknown = [s for s in stages if s not in track]
        if unknown:
            raise UserError(f"--stages: unknown stage(s) {unknown} for --track {a.track}; "
                            f"choose from {', '.join(track)}")
        if a.train_seed == EVAL_SEED:
            raise UserError(f"--train_seed {EVAL_SEED} is the evaluation set's seed; training on it would leak the "
                            "test boards")
        for name, v, low in (("--eval_n", a.eval_n, 1), ("--train_n", a.train_n, 1), ("--sample_n", a.sample_n, 1),
                             ("--samples", a.samples, 1), ("--grpo_steps", a.grpo_steps, 1),
                             ("--dpo_steps", a.dpo_steps, 0)):
            check_at_least(name, v, low)
        if a.track == "tools" and "pairs" in stages and a.samples < 2:
            raise UserError(f"--samples {a.samples}: tool-track pairs are best against worst of a board's samples; "
                            "give --samples 2 or more")
        if a.after_model not in ("dpo", "sft"):
            raise UserError(f"--after_model must be dpo or sft (got {a.after_model!r})")
        if a.sample_n > a.train_n:
            raise UserError(f"--sample_n {a.sample_n} exceeds --train_n {a.train_n}; sample on the train boards")
        loop = Loop(a)
        check_inputs(loop, stages)
        loop.work.mkdir(parents=True, exist_ok=True)
        if stages[0] == track[0] and not (loop.work / ".started").exists():
            (loop.work / ".started").touch()  # a run from the track's first stage starts the pilot's clock
        for stage in track:
            if stage in stages:
                loop.stage = stage
                try:
                    getattr(loop, stage)()
                except StageFailed as e:
                    print(f"error: {e}", file=sys.stderr)
                    return 1

    return run_main(go)


if __name__ == "__main__":
    sys.exit(main())
