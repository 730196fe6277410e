"""The closed loop, one command (training/loop.py): evaluate -> SFT -> sample -> pairs -> DPO -> evaluate ->
compare, or the tool track. Each stage runs one of the project's own commands in a process of its own (the
evaluation engine's memory goes with it); the stages and their outputs are listed in training/loop.py."""

from __future__ import annotations

import json
import math
import shlex
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from poolbench_data.boards.splits import EVAL_SEED
from poolbench_data.config import parse, run_main
from poolbench_data.core.errors import UserError, check_at_least, check_seed
from poolbench_data.core.shutdown import stop_group, terminate_as_exit
from poolbench_data.llm.model import EMBEDDED
from poolbench_data.finetune.extra_args import builder_flags, setting, words
from poolbench_data.finetune.stamps import Stamps
# servable, RECIPE_FIELDS and RUNOUT_BASELINES are the loop's names too (its users and tests import them from here)
from poolbench_data.finetune.loop_inputs import RECIPE_FIELDS, check_inputs, servable
from poolbench_data.finetune.loop_runout import GAMES, RUNOUT_BASELINES, RUNOUT_STAGES, RunoutStages
from poolbench_data.report.pilot import examples_seen, pilot_result, pilot_tools_result, scaling_table

# The repository whose builders/ and training/ scripts the stages run: this checkout's, by default.
ROOT = Path(__file__).resolve().parents[2]
STAGES = ("before", "dataset", "sft_data", "sft", "scaling", "samples", "pairs", "dpo", "after", "compare")
TOOL_STAGES = ("dataset", "sft_data", "sft", "eval_sft", "samples", "pairs", "dpo", "eval_dpo", "grpo", "eval_grpo",
               "free_text", "results")
TRACKS = {"free_text": STAGES, "tools": TOOL_STAGES, "runout": RUNOUT_STAGES}
TOOL_BASELINES = "oracle,heuristic-centre,heuristic,random"


@dataclass(frozen=True)
class LoopArguments:
    """Run the PoolBench training loop end to end (resumable, stage by stage)."""

    model: str = field(default=EMBEDDED, metadata={"help": "Starting model: a folder, a Hub id, or `embedded` (the "
                                                   "packaged SmolLM2-135M-Instruct); evaluated before, and trained by "
                                                   "the SFT stage (over the recipe's model_name_or_path)."})
    sft_recipe: str = field(default="training/recipes/sft-smollm2-135m-cpu.yaml", metadata={"help": "SFT recipe."})
    dpo_recipe: str = field(default="training/recipes/dpo-smollm2-135m-cpu.yaml", metadata={"help": "DPO recipe."})
    track: str = field(default="free_text", metadata={"help": "free_text (the paper's protocol) or tools (the "
                                                               "model calls ghost_ball for the angle; with --game "
                                                               "runout, the run-out pilot with the tool)."})
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
    grpo_spread: bool = field(default=False, metadata={"help": "GRPO only on the boards whose samples score unlike."})
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
    # Evaluations in fp32: dtype "auto" casts an fp32 checkpoint to bf16, rounding away a DPO update (~5e-6). The
    # SFT's (1e-4) survives it, and samples are drawn at T=0.8 anyway, so sampling runs in bf16 where the CPU has it
    # natively, the faster dtype there. An 8 GiB KV cache keeps the tool conversations' prefixes that the CPU
    # default (1 GiB) evicts between turns (docs/benchmarks.md#generation).
    eval_model_args: str = field(default="dtype=float32,enforce_eager=True,kv_cache_gib=8",
                                 metadata={"help": "--model_args of every evaluation (the same for all models)."})
    sample_model_args: str = field(default="dtype=auto,enforce_eager=True,kv_cache_gib=8", metadata={
        "help": "--model_args of the sampling stage (auto: bf16 where the CPU has native bf16, else float32)."})
    # The tool track's builder settings, handed on as given ('' = the builder's default): finetune.extra_args.
    tool_demo_order: str = field(default="", metadata={"help": "--track tools: builders/build_sft.py "
                                 "--tool_demo_order (listed or oracle; '' = the builder's default)."})
    tool_demo_speeds: str = field(default="", metadata={"help": "--track tools: builders/build_sft.py "
                                  "--tool_demo_speeds (comma-separated m/s; '' = the builder's default)."})
    tool_sources: str = field(default="", metadata={"help": "--track tools: builders/build_pairs.py "
                              "--tool_sources (comma-separated; '' = the builder's default)."})
    extra_sft_data_args: str = field(default="", metadata={"help": "More builders/build_sft.py arguments, as one "
                                     "string (e.g. --at_cap_no_pot_share 0.5)."})
    extra_sft_args: str = field(default="", metadata={"help": "More training/sft.py arguments."})
    extra_pairs_args: str = field(default="", metadata={"help": "More builders/build_pairs.py arguments, as one "
                                  "string (one flag alone takes '=': --extra_pairs_args=--tool_robust)."})
    extra_dpo_args: str = field(default="", metadata={"help": "More training/dpo.py arguments."})
    extra_grpo_args: str = field(default="", metadata={"help": "More training/grpo.py arguments (--track tools)."})
    game: str = field(default="", metadata={"help": "runout: the run-out pilot (stages "
                      f"{RUNOUT_STAGES}): SFT on the position Oracle's run-out demonstrations, DPO on position "
                      "pairs, each model playing --game_eval_n run-outs; '' = the single-shot tracks (--track)."})
    runout_sft_recipe: str = field(default="training/recipes/sft-runout-smollm2-135m-cpu.yaml",
                                   metadata={"help": "SFT recipe on the sft_runout config (--game runout)."})
    position_dpo_recipe: str = field(default="training/recipes/dpo-position-smollm2-135m-cpu.yaml",
                                     metadata={"help": "DPO recipe on the pairs_position config (--game runout)."})
    runout_tools_sft_recipe: str = field(default="training/recipes/sft-runout-tools-smollm2-135m-cpu.yaml", metadata={
        "help": "SFT recipe on the sft_runout_tools config (--game runout --track tools)."})
    position_tools_dpo_recipe: str = field(default="training/recipes/dpo-position-tools-smollm2-135m-cpu.yaml", metadata={
        "help": "DPO recipe on the pairs_position_tools config (--game runout --track tools)."})
    tool_max_model_len: int = field(default=8192, metadata={"help": "--game runout --track tools: the evaluations' "
                                    "--max_model_len (tool calls need more than 4096; 8192 is SmolLM2's context)."})
    tool_lines: bool = field(default=False, metadata={"help": "--game runout --track tools: the tool's reports show "
                             "the cue ball's headings after contact (cue_after_deg), in every evaluation, "
                             "demonstration and pair."})
    game_eval_n: int = field(default=200, metadata={"help": "--game runout: run-out starts of the evaluation "
                                                            "seed (0) each model plays."})
    runout_demo_starts: int = field(default=0, metadata={"help": "--game runout: train boards whose position-Oracle "
                                    "visits give the demonstrations (builders/build_sft.py --runout_n; 0 = the "
                                    "builder's default)."})
    position_pairs: int = field(default=0, metadata={"help": "--game runout: position pairs to build "
                                "(builders/build_pairs.py; 0 = the builder's default)."})
    results_json: str = field(default="", metadata={"help": "Also write the before/after JSON here."})
    after_model: str = field(default="dpo", metadata={"help": "What `after` evaluates: dpo (SFT + DPO) or sft."})


class StageFailed(RuntimeError):
    """A stage's command exited non-zero: one line naming the stage, its log and its exit code."""


STOP_GRACE_S = 60  # a stopped stage's processes get this long to clean up (vLLM's engine, staging folders)


def _run(cmd: list[str], log: Path, root: Path) -> None:
    """Run a stage's command in a process group of its own (a stopped loop stops the whole group, engines too)."""
    print("+ " + shlex.join(cmd), flush=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as f, subprocess.Popen(cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                                 start_new_session=True) as proc:
        try:
            for chunk in iter(lambda: proc.stdout.read1(65536), b""):
                sys.stdout.buffer.write(chunk)
                sys.stdout.flush()
                f.write(chunk)
            code = proc.wait()
        except BaseException:
            stop_group(proc, STOP_GRACE_S)
            raise
    if code != 0:
        raise StageFailed(f"{Path(cmd[1]).name if len(cmd) > 1 else cmd[0]} exited with code {code}; "
                          f"its output is in {log}")


class Loop(RunoutStages):
    """The stages, each a method named as the stage; `root`: the checkout whose builders/ and training/ run."""

    def __init__(self, a: LoopArguments, root: Path = ROOT):
        self.a = a
        self.root = root
        self.py = sys.executable
        self.cli = [self.py, "-m", "poolbench_data.cli"]
        self.tools = a.track == "tools"
        self.game = a.game
        # Absolute once: the stages run from the repository root, the user may not.
        default = "runs/loop-runout" if self.game else "runs/loop-tools" if self.tools else "runs/loop"
        self.work = Path(a.work_dir or default).resolve()
        self.data = self.work / "dataset" / "poolbench"
        if self.game:
            self.sft_recipe = a.runout_tools_sft_recipe if self.tools else a.runout_sft_recipe
            self.dpo_recipe = a.position_tools_dpo_recipe if self.tools else a.position_dpo_recipe
        else:
            self.sft_recipe = a.tools_sft_recipe if self.tools else a.sft_recipe
            self.dpo_recipe = a.tools_dpo_recipe if self.tools else a.dpo_recipe
        self.sft_dir, self.dpo_dir, self.grpo_dir = (self.work / name for name in ("sft", "dpo", "grpo"))
        self.stage = ""
        self.stamps = Stamps(self.work / "stamps")

    def once(self, key: str, output: Path, inputs: tuple[str, ...], cmd: list[str], what=None,
             prepare=lambda: None) -> None:
        """Run `cmd`, after `prepare()`, unless `output` exists, built by the same command from the same inputs."""
        what = cmd[1:] if what is None else what  # the interpreter's path is the checkout's, not a setting
        if not self.stamps.done(key, output, what, inputs):
            start = time.monotonic()
            prepare()
            self.run(cmd)
            self.stamps.record(key, what, inputs, seconds=time.monotonic() - start)

    def run(self, cmd: list[str]) -> None:
        """A stage's command, its output kept in WORK_DIR/logs/<stage>.log."""
        try:
            _run(cmd, self.work / "logs" / f"{self.stage}.log", self.root)
        except StageFailed as e:
            raise StageFailed(f"stage {self.stage} failed: {e}") from None

    def evaluate(self, out: Path, inputs: tuple[str, ...], model_args: str = "", **settings) -> None:
        """`poolbench eval` in its own process (its engine's memory goes with it), from WORK_DIR/configs/<OUT>.yaml;
        skipped where OUT holds its traces."""
        from functools import partial

        from poolbench_data.config import write_yaml
        from poolbench_data.evaluation.config import EvalConfig

        config = EvalConfig(out=str(out), model_args=model_args or self.a.eval_model_args, quiet=True, **settings)
        path = self.work / "configs" / f"{out.name}.yaml"  # written for a run only: it says what built OUT
        path.parent.mkdir(parents=True, exist_ok=True)
        self.once(f"eval_{out.name}", out / "llm_traces.jsonl", inputs, self.cli + ["eval", "--config", str(path)],
                  what=json.loads(json.dumps(asdict(config), default=str)), prepare=partial(write_yaml, config, path))

    def eval(self, name: str, model: str | None, tools: bool | None = None, made_by: tuple[str, ...] = ()) -> None:
        tools = self.tools if tools is None else tools
        # The tool track is measured against both Heuristics, its targets
        # (docs/results.md#baselines-on-200-held-out-boards).
        self.evaluate(self.work / name, made_by, model=model, n=self.a.eval_n, name=name, tools=tools,
                      **({"baselines": TOOL_BASELINES} if self.tools else {}))

    def before(self):
        self.eval("before", self.a.model)

    def dataset(self):
        self.once("dataset", self.data / "README.md", (), [
            self.py, "builders/build_dataset.py", "--output_dir", str(self.data), "--eval_n", str(self.a.eval_n),
            "--train_n", str(self.a.train_n), "--train_seed", str(self.a.train_seed), "--players", "oracle"])

    def sft_data(self):
        if self.game:
            return self.runout_sft_data()
        config = "sft_tools" if self.tools else "sft"
        self.once("sft_data", self.data / "data" / config, ("dataset",), [
            self.py, "builders/build_sft.py", "--dataset_dir", str(self.data), *(["--tools"] if self.tools else []),
            *builder_flags(self.a, "tool_demo_order", "tool_demo_speeds"),
            *words(self.a.extra_sft_data_args, "--extra_sft_data_args")])

    def sft(self):
        # Examples and optimizer steps convert by the rows a step (batch x accumulation, on one process).
        per_step = 1
        for key in ("per_device_train_batch_size", "gradient_accumulation_steps"):
            per_step *= int(setting(self.a.extra_sft_args, "--extra_sft_args", self.root / self.sft_recipe, key, 1))
        extra = ["--max_steps", str(max(1, self.a.sft_examples // per_step))] if self.a.sft_examples else []
        if self.a.sft_eval_every:
            extra += ["--save_strategy", "steps", "--save_steps", str(max(1, self.a.sft_eval_every // per_step)),
                      "--save_total_limit", "100"]
        self.once("sft", self.sft_dir / "merged", ("sft_data",), [
            self.py, "training/sft.py", "--config", self.sft_recipe, "--dataset_name", str(self.data), "--output_dir",
            str(self.sft_dir), "--num_train_epochs", str(self.a.sft_epochs), *extra, "--model_name_or_path",
            self.a.model, *words(self.a.extra_sft_args, "--extra_sft_args")])

    def scaling(self):
        """Each SFT checkpoint on the test boards, named by the examples it has seen."""
        final = examples_seen(self.sft_dir) if (self.sft_dir / "trainer_state.json").exists() else None
        for ckpt in sorted(self.sft_dir.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1])):
            if examples_seen(ckpt) != final:  # the last checkpoint is the final model, evaluated as `sft`
                self.eval(f"sft-{examples_seen(ckpt)}", str(servable(ckpt)), made_by=("sft",))
        self.eval("sft", str(self.sft_dir / "merged"), made_by=("sft",))

    def samples(self):
        out = self.work / "samples"
        # The tool track's pairs are built from the conversations in OUT (tool_calls.jsonl), not the dataset's traces.
        where = {"tools": True} if self.tools else {"split": "train", "dataset_dir": str(self.data)}
        self.evaluate(out, ("sft", "dataset"), model=str(self.sft_dir / "merged"), n=self.a.sample_n,
                      seed=self.a.train_seed, samples=self.a.samples, temperature=self.a.temperature, name="policy",
                      boards=0, model_args=self.a.sample_model_args, **where)

    def pairs(self):
        if self.game:
            return self.runout_pairs()
        config = "pairs_tools" if self.tools else "pairs"
        self.once("pairs", self.data / "data" / config, ("eval_samples", "dataset"), [
            self.py, "builders/build_pairs.py", "--dataset_dir", str(self.data),
            *(["--tool_eval_dir", str(self.work / "samples")] if self.tools else []),
            *builder_flags(self.a, "tool_sources"), *words(self.a.extra_pairs_args, "--extra_pairs_args")])

    def dpo(self):
        steps = ["--max_steps", str(self.a.dpo_steps)] if self.a.dpo_steps else []
        self.once("dpo", self.dpo_dir / "merged", ("pairs", "sft"), [
            self.py, "training/dpo.py", "--config", self.dpo_recipe, "--dataset_name", str(self.data), "--output_dir",
            str(self.dpo_dir), *steps, "--model_name_or_path", str(self.sft_dir / "merged"),
            *words(self.a.extra_dpo_args, "--extra_dpo_args")])

    def after(self):
        if self.a.after_model == "sft" and (self.sft_dir / "llm_traces.jsonl").exists():
            # `scaling` evaluated this very model on the same boards: reuse it, not ~4 min of generation again.
            import shutil

            (self.work / "after").mkdir(parents=True, exist_ok=True)
            for name in ("summary.json", "results.json", "report.txt", "llm_traces.jsonl"):  # traces last: "done"
                shutil.copy2(self.sft_dir / name, self.work / "after" / name)
            return
        self.eval("after", str((self.dpo_dir if self.a.after_model == "dpo" else self.sft_dir) / "merged"),
                  made_by=(self.a.after_model,))

    # --- the tool track (eval_sft, eval_dpo: the run-out pilot's too) ---

    def eval_sft(self):
        if self.game:
            return self.eval_game("sft", str(self.sft_dir / "merged"), ("sft",))
        self.eval("sft", str(self.sft_dir / "merged"), made_by=("sft",))

    def eval_dpo(self):
        if self.game:
            return self.eval_game("dpo", str(self.dpo_dir / "merged"), ("dpo",))
        self.eval("dpo", str(self.dpo_dir / "merged"), made_by=("dpo",))

    def grpo(self):
        spread = ["--spread_from", str(self.work / "samples")] if self.a.grpo_spread else []
        self.once("grpo", self.grpo_dir / "merged", ("sft", "dataset", *(("eval_samples",) if spread else ())), [
            self.py, "training/grpo.py", "--config", self.a.grpo_recipe, "--dataset_name", str(self.data),
            "--output_dir", str(self.grpo_dir), "--max_steps", str(self.a.grpo_steps), "--model_name_or_path",
            str(self.sft_dir / "merged"), *spread, *words(self.a.extra_grpo_args, "--extra_grpo_args")])

    def eval_grpo(self):
        self.eval("grpo", str(self.grpo_dir / "merged"), made_by=("grpo",))

    def free_text(self):
        if self.a.free_text_model:
            self.eval("free_text", self.a.free_text_model, tools=False)  # the paper's protocol, as it was trained

    def results(self):
        if self.game:
            return self.runout_results()
        available = {c: self.config_rows(c) for c in ("sft_tools", "pairs_tools")}
        print(self.write_result("pilot_tools.json", pilot_tools_result(self.work, available)))

    def config_rows(self, config: str) -> int | None:
        """Rows of the dataset's `config` (train split); None where it was not built."""
        from poolbench_data.hub.folder import read_rows

        return len(read_rows(self.data, config, "train")) if (self.data / "data" / config).exists() else None

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
        self.write_result("pilot.json", pilot_result(self.work, after, self.config_rows("sft")))
        print(scaling_table(self.work))


def main(argv=None, root: Path = ROOT) -> int:
    """`python training/loop.py`: parse, check every flag and input, then run the chosen stages in order."""
    def go() -> None:
        a = parse(LoopArguments, argv)  # inside: a mistake in a --config file is one line too
        if a.track not in TRACKS or a.track == "runout":
            raise UserError(f"--track must be one of free_text, tools (got {a.track!r}); the run-out pilot is "
                            "--game runout")
        if a.game and a.game not in GAMES:
            raise UserError(f"--game {a.game!r}: the loop trains on run-outs (--game runout), or leave it out for the "
                            "single-shot tracks")
        if a.tool_lines and not (a.game and a.track == "tools"):
            raise UserError("--tool_lines is read only with --game runout --track tools; add both, or leave "
                            "--tool_lines out")
        track = TRACKS[a.game or a.track]
        stages = [s for s in a.stages.split(",") if s] or list(track)
        unknown = [s for s in stages if s not in track]
        if unknown:
            raise UserError(f"--stages: unknown stage(s) {unknown} for "
                            f"{'--game ' + a.game if a.game else '--track ' + a.track}; "
                            f"choose from {', '.join(track)}")
        check_seed("--train_seed", a.train_seed)
        if not (a.sft_epochs > 0 and math.isfinite(a.sft_epochs)):
            raise UserError(f"--sft_epochs must be a number of passes > 0 (got {a.sft_epochs})")
        if not 0 <= a.temperature <= 2:  # also nan
            raise UserError(f"--temperature must be a number in [0, 2] (got {a.temperature})")
        if a.train_seed == EVAL_SEED:
            raise UserError(f"--train_seed {EVAL_SEED} is the evaluation set's seed; training on it would leak the "
                            "test boards")
        for name, v, low in (("--eval_n", a.eval_n, 1), ("--train_n", a.train_n, 1), ("--sample_n", a.sample_n, 1),
                             ("--game_eval_n", a.game_eval_n, 1), ("--runout_demo_starts", a.runout_demo_starts, 0),
                             ("--position_pairs", a.position_pairs, 0),
                             ("--tool_max_model_len", a.tool_max_model_len, 1),
                             ("--samples", a.samples, 1), ("--grpo_steps", a.grpo_steps, 1),
                             ("--dpo_steps", a.dpo_steps, 0), ("--sft_examples", a.sft_examples, 0),
                             ("--sft_eval_every", a.sft_eval_every, 0)):
            check_at_least(name, v, low)
        if a.track == "tools" and ("pairs" in stages or a.grpo_spread and "grpo" in stages) and a.samples < 2:
            raise UserError(f"--samples {a.samples}: tool-track pairs and --grpo_spread compare a board's samples; "
                            "give --samples 2 or more")
        if a.after_model not in ("dpo", "sft"):
            raise UserError(f"--after_model must be dpo or sft (got {a.after_model!r})")
        if a.sample_n > a.train_n:
            raise UserError(f"--sample_n {a.sample_n} exceeds --train_n {a.train_n}; sample on the train boards")
        loop = Loop(a, root)
        check_inputs(loop)
        loop.work.mkdir(parents=True, exist_ok=True)
        if stages[0] == track[0] and not (loop.work / ".started").exists():
            (loop.work / ".started").touch()  # a run from the track's first stage starts the pilot's clock
        with terminate_as_exit():  # a SIGTERM stops the running stage's processes too (_run)
            for stage in track:
                if stage in stages:
                    loop.stage = stage
                    try:
                        getattr(loop, stage)()
                    except StageFailed as e:
                        print(f"error: {e}", file=sys.stderr)
                        return 1

    return run_main(go)
