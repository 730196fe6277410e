"""PoolBench as a TRL environment: the simulator as reward for a model that
calls the `ghost_ball` tool (the paper's section 6.3), for any TRL user on any
model whose chat template renders tool calls.

    from trl import GRPOTrainer
    from poolbench_data.rl.env import PoolBenchEnv, tool_physics_reward, tool_prompts

    trainer = GRPOTrainer(model=..., train_dataset=tool_prompts(scenarios_train_split),
                          environment_factory=PoolBenchEnv, reward_funcs=[tool_physics_reward], args=...)

TRL creates one environment per rollout and calls `reset(**row)` with the
dataset row: the board columns of the `scenarios` config (id, category, seed,
cue_ball, balls) deal that board. The environment's public method
`ghost_ball` is the tool, answering exactly as `poolbench eval --tools` does
(geometry only, never the simulator). The reward is the physics score of the
model's final action (0 unparseable, 1 foul, 2 legal contact, 3 legal pot):
TRL's `get_reward()` takes no arguments and so never sees the final answer,
so the score comes from `tool_physics_reward`, which TRL calls with the
completions and the rollouts' environments.
"""

from __future__ import annotations

import json

from poolbench_data.core.records import Scenario
from poolbench_data.llm.tools import MAX_CALLS, answer_call, call_of, tool_calls, with_tool_note
from poolbench_data.rl.reward import score_completion

BOARD_COLUMNS = ("id", "category", "seed", "cue_ball", "balls")


class PoolBenchEnv:
    """One rollout's board: `reset` deals it, `ghost_ball` is the tool. Every public method is a tool to TRL,
    so the scoring lives outside (`tool_physics_reward`)."""

    def __init__(self, max_calls: int = MAX_CALLS):
        # The cap the result's `calls_left` counts down from: set it to GRPOConfig.max_tool_calling_iterations
        # (training/grpo.py does), as the evaluator's to its --max_tool_calls.
        self.max_calls = max_calls
        self.scenario: Scenario | None = None
        self.calls: list[dict] = []

    def reset(self, **row) -> None:
        """Deal the row's board (the `scenarios` config's columns); the prompt already shows it."""
        missing = [c for c in BOARD_COLUMNS if c not in row]
        if missing:
            raise ValueError(f"PoolBenchEnv.reset needs the board columns {list(BOARD_COLUMNS)}; missing {missing}. "
                             "Fix: train on the `scenarios` config (tool_prompts keeps them).")
        self.scenario = Scenario.from_row({c: row[c] for c in BOARD_COLUMNS})
        self.calls = []
        return None

    def ghost_ball(self, target_ball: str, pocket: str | None = None) -> str:
        """Ghost-ball geometry for one object ball on this board: every pocket it can be cut into, or one pocket.

        Args:
            target_ball: object ball id, '1'..'15'
            pocket: pocket id: lb, lc, lt, rb, rc, rt; leave it out for every pocket of the ball

        Returns:
            JSON: the calls left; without a pocket, the ball's shots (open ones first, each with its cut angle
            and the aim from the cue ball to the ghost ball at the pocket's potting point) and the pockets it
            cannot be sent to; with one, whether the shot is open, the aim at the pocket centre and at the potting
            point, the cut angle, the balls blocking either path and whether the ghost ball is free; or an error.
        """
        if self.scenario is None:
            raise RuntimeError("ghost_ball called before reset: no board dealt")
        # Calls count one by one, as the evaluator counts them: past the cap a call is refused, not run (TRL's
        # own cap counts turns, and a turn may hold several calls).
        call = call_of(target_ball, pocket)
        result = answer_call(self.scenario, call, len(self.calls), self.max_calls)
        self.calls.append({"arguments": call["arguments"], "result": result})
        return json.dumps(result)


def final_answer(completion) -> str:
    """The model's last turn: its action (earlier turns are tool calls, and tool answers are not the model's)."""
    if isinstance(completion, str):
        return completion
    return _last_turn(completion).get("content") or ""


def ends_on_call(completion) -> bool:
    """Whether the model's last turn is a tool call, not an action. TRL parses a call out of the turn (its
    `tool_calls`, the content left empty), so the text alone would miss it; a call left in the text counts too."""
    parsed = not isinstance(completion, str) and _last_turn(completion).get("tool_calls")
    return bool(parsed or tool_calls(final_answer(completion)))


def _last_turn(completion: list[dict]) -> dict:
    turns = [m for m in completion if m.get("role") == "assistant"]
    return turns[-1] if turns else {}


def tool_physics_reward(completions, environments, **kwargs) -> list[float]:
    """For each rollout, the physics score of its final answer on its environment's board; an answer that is
    still a tool call (the loop ran out of iterations) is not an action: 0, as unparseable."""
    out = []
    for completion, env in zip(completions, environments, strict=True):
        text = final_answer(completion)
        if env.scenario is None:
            raise RuntimeError("tool_physics_reward got an environment that was never reset: no board to score on")
        out.append(0.0 if ends_on_call(completion) else score_completion(env.scenario, text))
    return out


def weighted_reward(levels: tuple[float, float, float, float], unscored_calls: bool = False):
    """`tool_physics_reward` with each level (0 unparseable, 1 foul, 2 legal contact, 3 legal pot) scored
    `levels[level]`: the plain levels let GRPO trade a pot (3) for a contact (2) to lift an unparseable rollout
    (0) of the same board (docs/results.md#preference-stages-from-the-same-tool-sft); e.g. (0, 1, 2, 8) makes a
    pot worth far more. Logged under the same name.

    With `unscored_calls`, a rollout that ends on a call (at the cap, or out of tokens) gets None: TRL (>= 1.16)
    leaves it out of its board's baseline and gives it no advantage. One reward for the whole conversation
    otherwise blames the calls before the last one too, which teaches GRPO to stop calling a third ball where the
    third call finds the pot (docs/results.md#preference-stages-from-the-same-tool-sft)."""
    def tool_physics_reward_(completions, environments, **kwargs) -> list[float | None]:
        scores = tool_physics_reward(completions, environments, **kwargs)
        return [None if unscored_calls and ends_on_call(c) else levels[int(x)]
                for c, x in zip(completions, scores, strict=True)]

    tool_physics_reward_.__name__ = tool_physics_reward.__name__
    return tool_physics_reward_


def tool_prompts(dataset):
    """A `scenarios` split as GRPO rows: the protocol's prompt with the tool's paragraph (as `eval --tools` sends
    it) and the board columns `reset` reads."""
    def add_note(row):
        return {"prompt": with_tool_note([row["prompt"]])[0]}

    return dataset.select_columns(["prompt", *BOARD_COLUMNS]).map(add_note)

