"""The simulator as a reward function, with the signature TRL's trainers call
(`GRPOTrainer(reward_funcs=[physics_reward], ...)`): completions plus the
dataset's columns as keyword lists. Use the `scenarios` config as the
training dataset: its `prompt` column is the conversation, and its board
columns (id, category, seed, cue_ball, balls) let every completion be
simulated. Same parser and scoring as the evaluator."""

from __future__ import annotations

from poolbench_data.core.records import Scenario
from poolbench_data.core.scoring import physics_score
from poolbench_data.players.play import play_shot
from poolbench_data.protocol.parsing import parse_action


def _text(completion) -> str:
    if isinstance(completion, str):
        return completion
    return "".join(m.get("content", "") for m in completion if m.get("role") == "assistant")


def play_completion(scenario: Scenario, text: str | None):
    """(the parse, the shot's record): the answer read and played as the evaluator plays a board."""
    p = parse_action(text, scenario)
    return p, play_shot(scenario, p.shot, player="policy", kind="llm", parse_status=p.status)


def score_completion(scenario: Scenario, text: str) -> float:
    return physics_score(play_completion(scenario, text)[1].metrics)


def physics_reward(completions, id, category, seed, cue_ball, balls, **kwargs) -> list[float]:
    """0 unparseable, 1 foul, 2 legal contact, 3 legal pot, for each completion."""
    out = []
    for i, c in enumerate(completions):
        s = Scenario.from_row({"id": id[i], "category": category[i], "seed": seed[i], "cue_ball": cue_ball[i],
                               "balls": balls[i]})
        out.append(score_completion(s, _text(c)))
    return out
