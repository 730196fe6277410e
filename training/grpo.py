"""GRPO on the pool simulator with TRL: a thin script, configured by a YAML recipe.

    python training/grpo.py --config training/recipes/grpo-smollm2-135m-cpu-smoke.yaml
    python training/grpo.py --config training/recipes/grpo-llama-3.1-8b-gpu.yaml --max_steps 50 --output_dir runs/try

The data is the dataset's `scenarios` config (the boards): its `prompt` column
is the conversation the model answers, and its board columns (id, category,
seed, cue_ball, balls) let `poolbench_data.rl.reward.physics_reward` rebuild
each board and simulate every sampled completion: 0 unparseable, 1 foul,
2 legal contact, 3 legal pot (the evaluator's parser and scoring). No pairs,
no reference answers: the simulator is the reward.

Beyond what every training script adds (poolbench_data/finetune/trainer.py: recipe and flags, seed first,
LoRA by default, the model and the leak checks before anything loads, resuming, adapter/ and merged/):
- before the model is loaded: the columns the reward reads are checked, every
  board is rebuilt once (a malformed board would otherwise fail mid-run, after
  minutes of generation), and every prompt is tokenized to check that
  prompt + max_completion_length fits the model's context (this TRL version
  neither truncates prompts nor warns);
- `tool_env: true` plays with the ghost_ball tool through TRL's
  `environment_factory` (`poolbench_data.rl.env.PoolBenchEnv`);
- `spread_from`: only the train boards whose sampled answers (a `poolbench eval --tools --samples K` folder)
  scored differently; a board whose rollouts all score alike gives GRPO's within-board advantage nothing;
- `game: runout` (or nineball-seeded) plays whole episodes instead of one shot (poolbench_data/finetune/grpo.py):
  the starts are `game_episodes` episodes of base seed `game_seed` (poolbench_data.rl.game_trl.game_prompts; no
  dataset folder is read, and the evaluation seed is refused), the model shoots by calling the `shoot` tool through
  TRL's environment_factory, each call one attempt played as `poolbench eval --game` plays an answer, and the
  reward is the episode's sum of `game_reward` (balls, success or physics);
- trainer_state.json logs rewards/physics_reward/mean per step (a game: rewards/game_reward/mean).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from trl import GRPOConfig, TrlParser

from poolbench_data.checks.pairs import SCENARIO_COLUMNS, check_scenario_rows
from poolbench_data.finetune.lengths import check_context
from poolbench_data.finetune.templates import use_tool_template
from poolbench_data.finetune.common import (
    LoraModelConfig, RunResult, TrainScriptArguments, command_line, load_checked_splits, model_and_tokenizer,
    run_script, usage_errors,
)
from poolbench_data.finetune.grpo import SHOT, check_game_flags, make_game_trainer, reward_levels, run_metrics
from poolbench_data.finetune.trainer import build_trainer, fit

logger = logging.getLogger("poolbench.grpo")

@dataclass
class GRPOScriptArguments(TrainScriptArguments):
    # PoolBench publishes its boards, with prompts, as the `scenarios` config.
    dataset_config: str | None = field(
        default="scenarios", metadata={"help": "Dataset config name (`name` of `datasets.load_dataset`)."}
    )
    tool_env: bool = field(
        default=False,
        metadata={"help": "Play with the ghost_ball tool: PoolBenchEnv through TRL's environment_factory, the prompt "
                  "with the tool's paragraph (as `poolbench eval --tools`), the reward on the final action."},
    )
    tool_chat_template: str | None = field(
        default=None,
        metadata={"help": "With tool_env: a .jinja chat template that renders tool calls (SmolLM2's own does not: "
                  "training/templates/smollm2-chatml-tools.jinja); its Hermes <tool_call> turns are parsed with "
                  "TRL's ChatML/Hermes response template. None: the model's template, as TRL supports it."},
    )
    reward_levels: str = field(
        default="0,1,2,3",
        metadata={"help": "With tool_env: the reward of each physics level, comma-separated: unparseable, foul, legal "
                  "contact, legal pot (e.g. 0,1,2,8: a pot far above a contact)."},
    )
    unscored_calls: bool = field(
        default=False,
        metadata={"help": "With tool_env: a rollout that ends on a call (at the cap) gets no reward and no advantage "
                  "instead of the unparseable level, so the calls before it are not blamed for it."},
    )
    spread_from: str = field(
        default="",
        metadata={"help": "The --out folder of `poolbench eval --tools --samples K` on this dataset's train boards "
                  "(the loop's samples/): train only on the boards whose samples scored differently, where GRPO's "
                  "within-board advantage is not zero. '' = every train board."},
    )
    game: str = field(
        default=SHOT,
        metadata={"help": "shot: one shot a board of the dataset (the paper's protocol). nineball-seeded or runout: "
                  "whole episodes of the game, the model shooting through the `shoot` tool (rl.game_trl); no "
                  "dataset is read. nineball deals the evaluation's one rack and is refused."},
    )
    game_episodes: int = field(default=50, metadata={"help": "With a game: the starts, episodes 0 .. N-1."})
    game_seed: int = field(
        default=1, metadata={"help": "With a game: the starts' base seed (the evaluation's, 0, is refused)."}
    )
    game_action: str | None = field(
        default=None,
        metadata={"help": "With nineball-seeded: discrete (DeepPHY's speed and strike spot, the default) or "
                  "continuous (cue_speed, a, b)."},
    )
    game_attempts: int = field(default=15, metadata={"help": "With a game: the most attempts an episode takes."})
    game_reward: str = field(
        default="balls",
        metadata={"help": "With a game: balls (potted on clean attempts), success (1 for a won episode) or physics "
                  "(each attempt's level, 0-3), summed over the episode."},
    )


def make_parser() -> TrlParser:
    return TrlParser((GRPOScriptArguments, GRPOConfig, LoraModelConfig))


def make_trainer(
    script_args: GRPOScriptArguments,
    training_args: GRPOConfig,
    model_args: LoraModelConfig,
    reward_funcs: Sequence[Callable] | None = None,
):
    """Everything up to a ready GRPOTrainer: (trainer, tokenizer). The data is checked first.

    `reward_funcs` defaults to [physics_reward]; a caller may wrap it (e.g. to record its outputs).
    """
    from functools import partial

    from trl import GRPOTrainer

    from poolbench_data.llm.tools import MAX_CALLS
    from poolbench_data.rl.env import PoolBenchEnv, tool_prompts, weighted_reward
    from poolbench_data.rl.reward import physics_reward
    from poolbench_data.rl.boards import only_spread

    check_game_flags(script_args)
    if script_args.game != SHOT:
        return make_game_trainer(script_args, training_args, model_args, reward_funcs)
    if training_args.remove_unused_columns:
        # Trainer would keep only `prompt`, and physics_reward would fail after the first generation.
        raise ValueError(
            "remove_unused_columns=true drops the board columns physics_reward reads. "
            "Fix: set remove_unused_columns: false (GRPOConfig's default)."
        )
    levels = reward_levels(script_args)
    # Data first: a malformed or leaking dataset should fail before minutes of model loading.
    train_dataset, eval_dataset = load_checked_splits(script_args, training_args, check_scenario_rows)
    # Only what generation and the reward read: the Oracle's columns never reach a reward function.
    train_dataset = train_dataset.select_columns(list(SCENARIO_COLUMNS))
    if script_args.spread_from:
        train_dataset = only_spread(train_dataset, script_args.spread_from)
    if eval_dataset is not None:
        eval_dataset = eval_dataset.select_columns(list(SCENARIO_COLUMNS))
    if script_args.tool_env:
        train_dataset = tool_prompts(train_dataset)
        eval_dataset = tool_prompts(eval_dataset) if eval_dataset is not None else None

    # The tokenizer (seconds) before the model: it measures the prompts against the context.
    model_path, tokenizer = model_and_tokenizer(model_args)
    if script_args.tool_env:
        use_tool_template(tokenizer, script_args.tool_chat_template)
    longest = check_context(train_dataset, tokenizer, model_path, model_args, training_args)
    logger.info("model %s, %d training boards, longest prompt %d tokens", model_path, len(train_dataset), longest)
    trainer = build_trainer(
        GRPOTrainer, script_args, training_args, model_args, model_path, tokenizer, train_dataset, eval_dataset,
        reward_funcs=list(reward_funcs) if reward_funcs is not None else
        [weighted_reward(levels, script_args.unscored_calls) if script_args.tool_env else physics_reward],
        # The environment's calls_left counts down from TRL's cap on tool turns, as the evaluator's from its own.
        environment_factory=partial(PoolBenchEnv, max_calls=training_args.max_tool_calling_iterations or MAX_CALLS)
        if script_args.tool_env else None,
    )
    return trainer, tokenizer


def train(
    script_args: GRPOScriptArguments,
    training_args: GRPOConfig,
    model_args: LoraModelConfig,
    reward_funcs: Sequence[Callable] | None = None,
) -> RunResult:
    with usage_errors():
        trainer, tokenizer = make_trainer(script_args, training_args, model_args, reward_funcs)
    return fit(trainer, tokenizer, script_args, training_args, extra_metrics=run_metrics(script_args, trainer))


def main(argv: list[str] | None = None, reward_funcs: Sequence[Callable] | None = None) -> RunResult:
    return run_script(make_parser(), train, argv, reward_funcs=reward_funcs)


if __name__ == "__main__":
    sys.exit(command_line(main))
