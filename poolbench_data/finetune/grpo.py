"""What training/grpo.py runs beyond what every training script shares (poolbench_data.finetune.trainer): the
checks of its own settings (`reward_levels` with tool_env; the `game*` settings, each read by the kind of run it
belongs to) and GRPO on whole episodes of a game (`game: runout` or nineball-seeded): the trainer on the game's
starts (poolbench_data.rl.game_trl: game_prompts' starts, the game's environment through TRL's
environment_factory, game_reward)."""

from __future__ import annotations

import logging
import re
from dataclasses import fields

from poolbench_data.finetune.common import model_and_tokenizer
from poolbench_data.finetune.lengths import check_context
from poolbench_data.finetune.templates import use_tool_template
from poolbench_data.finetune.trainer import build_trainer

logger = logging.getLogger("poolbench.grpo")

SHOT = "shot"  # `game` of the single shot: one shot a board of the dataset
GAME_FIELDS = ("game_episodes", "game_seed", "game_action", "game_attempts", "game_reward")
# The single shot's settings a game does not read: given with a game, the run would silently ignore them.
SHOT_FIELDS = ("dataset_name", "tool_env", "spread_from", "reward_levels", "unscored_calls")
# The library's argument names in a game's errors -> the recipe's keys.
RECIPE_NAMES = {"n": "game_episodes", "seed": "game_seed", "action": "game_action", "attempts": "game_attempts",
                "reward": "game_reward", "game": "game"}


def check_game_flags(script_args) -> None:
    """Each setting read by the kind of run it belongs to: a game's with a game, the single shot's without.
    `script_args` is the script's dataclass of arguments; a setting is given where it differs from its default."""
    default = {f.name: f.default for f in fields(type(script_args))}
    given = [n for n in (SHOT_FIELDS if script_args.game != SHOT else GAME_FIELDS)
             if getattr(script_args, n) != default[n]]
    if script_args.game == SHOT and given:
        raise ValueError(f"{given[0]} is read only with a game (game: runout or nineball-seeded); set game, or "
                         f"drop {given[0]}")
    if given:
        raise ValueError(f"{given[0]} is a setting of the single shot, not read with game: {script_args.game} "
                         "(its starts are game_episodes episodes of game_seed); drop it")


def make_game_trainer(script_args, training_args, model_args, reward_funcs=None):
    """GRPO on whole episodes: game_prompts' starts, the game's environment, game_reward."""
    from trl import GRPOTrainer

    from poolbench_data.rl.game_trl import game_environment, game_prompts, game_reward

    if not training_args.output_dir:
        raise ValueError("output_dir is not set. Fix: set it in the recipe or pass --output_dir.")
    if training_args.remove_unused_columns:
        raise ValueError("remove_unused_columns=true drops the start columns the environment's reset reads. "
                         "Fix: set remove_unused_columns: false (GRPOConfig's default).")
    if training_args.eval_strategy != "no":
        raise ValueError("eval_strategy: a game trains on its starts only and has no eval split; evaluate with "
                         "`poolbench eval --game`. Fix: set eval_strategy: no")
    # The settings, then the starts (the evaluation seed refused), all before the model.
    names = {"game": script_args.game, "action": script_args.game_action, "attempts": script_args.game_attempts,
             "reward": script_args.game_reward}
    try:
        environment = game_environment(**names)
        train_dataset = game_prompts(script_args.game, script_args.game_episodes, script_args.game_seed,
                                     action=script_args.game_action, attempts=script_args.game_attempts)
    except ValueError as exc:  # name the recipe's keys, not the library's arguments
        raise ValueError(recipe_names(str(exc))) from None
    model_path, tokenizer = model_and_tokenizer(model_args)
    use_tool_template(tokenizer, script_args.tool_chat_template)
    longest = check_context(train_dataset, tokenizer, model_path, model_args, training_args)
    logger.info("model %s, %d %s starts, longest prompt %d tokens", model_path, len(train_dataset), script_args.game,
                longest)
    trainer = build_trainer(
        GRPOTrainer, script_args, training_args, model_args, model_path, tokenizer, train_dataset, None,
        reward_funcs=list(reward_funcs) if reward_funcs is not None else [game_reward],
        environment_factory=environment,
    )
    return trainer, tokenizer


def reward_levels(script_args) -> tuple[float, ...]:
    """The four level rewards of `reward_levels`; a malformed list, or it or `unscored_calls` without tool_env,
    is refused."""
    import math

    text = script_args.reward_levels
    try:
        levels = tuple(float(x) for x in text.split(","))
    except ValueError:
        levels = ()
    if len(levels) != 4 or not all(math.isfinite(x) for x in levels):
        raise ValueError(f"reward_levels={text!r}: give 4 comma-separated numbers, the rewards of an unparseable "
                         "answer, a foul, a legal contact and a legal pot (default 0,1,2,3)")
    if levels != (0, 1, 2, 3) and not script_args.tool_env:
        raise ValueError("reward_levels applies to tool_env: true only; drop it or set tool_env: true")
    if script_args.unscored_calls and not script_args.tool_env:
        raise ValueError("unscored_calls applies to tool_env: true only; drop it or set tool_env: true")
    return levels


def recipe_names(message: str) -> str:
    """A game argument's error in the recipe's words: `action` is game_action, `n` game_episodes, ..."""
    return re.sub(r"^(\w+)(?= )", lambda m: RECIPE_NAMES.get(m.group(1), m.group(1)), message)


def run_metrics(script_args, trainer) -> dict:
    """What train_results.json adds: a game's starts (the game, how many, their base seed, the reward); the single
    shot's training boards, spread_from and unscored_calls."""
    if script_args.game != SHOT:
        return {"game": script_args.game, "train_episodes": len(trainer.train_dataset),
                "game_seed": script_args.game_seed, "game_reward": script_args.game_reward}
    return {"train_boards": len(trainer.train_dataset), "spread_from": script_args.spread_from,
            "unscored_calls": script_args.unscored_calls}
