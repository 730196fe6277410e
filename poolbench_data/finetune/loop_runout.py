"""The run-out pilot's stages (training/loop.py --game runout): the loop's Loop runs them as its own."""

from __future__ import annotations

import json
from dataclasses import asdict

from poolbench_data.boards.splits import EVAL_SEED
from poolbench_data.finetune.extra_args import words
from poolbench_data.report.pilot import pilot_runout_result, runout_table

RUNOUT_STAGES = ("dataset", "sft_data", "eval_start", "sft", "eval_sft", "pairs", "dpo", "eval_dpo", "results")
# The first evaluation plays every run-out baseline; later ones only the Heuristic (the same starts: the baselines'
# episodes do not change between stages, and the position Oracle's search is the costly one).
RUNOUT_BASELINES = "oracle,position-oracle,heuristic,heuristic-centre,random"
GAMES = ("runout",)


class RunoutStages:
    """Methods of the loop (finetune.loop.Loop: self.a, self.work, self.data, self.once, ...) for --game runout."""

    def runout_configs(self) -> tuple[str, str]:
        """The demonstrations' and the pairs' configs: with --track tools, as a ghost_ball player writes them."""
        return ("sft_runout_tools", "pairs_position_tools") if self.tools else ("sft_runout", "pairs_position")

    def tool_flags(self, tools: str) -> list[str]:
        return [tools, *(["--tool_lines"] if self.a.tool_lines else [])] if self.tools else []

    def runout_sft_data(self):
        n = ["--runout_n", str(self.a.runout_demo_starts)] if self.a.runout_demo_starts else []
        self.once("sft_data", self.data / "data" / self.runout_configs()[0], ("dataset",), [
            self.py, "builders/build_sft.py", "--dataset_dir", str(self.data), "--game", self.game, *n,
            *self.tool_flags("--tools"), *words(self.a.extra_sft_data_args, "--extra_sft_data_args")])

    def runout_pairs(self):
        n = ["--position_n", str(self.a.position_pairs)] if self.a.position_pairs else []
        self.once("pairs", self.data / "data" / self.runout_configs()[1], ("dataset",), [
            self.py, "builders/build_pairs.py", "--dataset_dir", str(self.data), "--position", *n,
            *self.tool_flags("--position_tools"), *words(self.a.extra_pairs_args, "--extra_pairs_args")])

    def runout_results(self):
        demos, pairs = self.runout_configs()
        available = {"demonstrations": self.config_rows(demos), "pairs": self.config_rows(pairs)}
        result = pilot_runout_result(self.work, available)
        self.write_result("pilot_runout.json", result)
        print(runout_table(result))

    def eval_game(self, name: str, model: str, made_by: tuple[str, ...], baselines: str = "heuristic") -> None:
        """`poolbench eval --game` of `model` on --game_eval_n starts of seed 0, from WORK_DIR/configs/eval_NAME.yaml
        in its own process; skipped where WORK_DIR/eval_NAME holds its results (a stopped one resumes)."""
        from functools import partial

        from poolbench_data.config import write_yaml
        from poolbench_data.evaluation.config import EvalConfig

        out = self.work / f"eval_{name}"
        tools = {}
        if self.tools:
            tools = dict(tools=True, tool_lines=self.a.tool_lines, max_model_len=self.a.tool_max_model_len)
        config = EvalConfig(game=self.game, out=str(out), model=model, name=name, n=self.a.game_eval_n, seed=EVAL_SEED,
                            baselines=baselines, model_args=self.a.eval_model_args, quiet=True, **tools)
        path = self.work / "configs" / f"{out.name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.once(f"eval_{name}", out / "results.json", made_by, self.cli + ["eval", "--config", str(path)],
                  what=json.loads(json.dumps(asdict(config), default=str)), prepare=partial(write_yaml, config, path))

    def eval_start(self):
        self.eval_game("start", self.a.model, (), baselines=RUNOUT_BASELINES)
