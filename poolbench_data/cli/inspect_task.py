"""PoolBench as an inspect_ai task (extra `inspect`): any inspect model
provider plays the benchmark; the simulator scores each shot and `inspect
view` shows the response, the parsed action and the event trace.

    inspect eval poolbench_data/cli/inspect_task.py --model openai-api/local/m   # LOCAL_BASE_URL, LOCAL_API_KEY
    inspect eval poolbench_data/cli/inspect_task.py -T n=10 -T seed=0 --model vllm/HuggingFaceTB/SmolLM2-135M-Instruct
    inspect view

Dataset (the protocol's system + user prompts, the Oracle's action as the
target), solver (`generate`) and scorer (pure: parse, simulate, score) are
apart, as inspect intends. Scores per shot: legal_contact, own_potted, foul,
opp_or_8_potted, clean_pot, parseable (each 0/1, reported as mean and
stderr).
"""

from __future__ import annotations

import json

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, GenerateConfig
from inspect_ai.scorer import Score, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState, generate
from inspect_ai._util.error import PrerequisiteError  # what `inspect eval` prints as a message, not a traceback

from poolbench_data.boards.generate import DEFAULT_N, DEFAULT_SEED, generate as generate_boards
from poolbench_data.core.errors import UserError, check_whole
from poolbench_data.core.records import Scenario
from poolbench_data.core.vocab import MAX_SEED
from poolbench_data.llm.player import answer_record
from poolbench_data.players.baselines import oracle
from poolbench_data.protocol.prompts import DEFAULT_MAX_TOKENS, DEFAULT_TEMPERATURE, format_action, messages

METRICS = ("legal_contact", "own_potted", "foul", "opp_or_8_potted", "clean_pot", "parseable")


def sample(s: Scenario) -> Sample:
    system, user = messages(s)
    return Sample(input=[ChatMessageSystem(content=system["content"]), ChatMessageUser(content=user["content"])],
                  target=format_action(oracle(s).shot, s), id=s.id,
                  metadata={"category": s.category, "board": s.to_row()})


class TaskArgumentError(UserError, PrerequisiteError):
    """A task argument (-T) that is not a setting of this task: a ValueError to Python, and to `inspect eval` a
    prerequisite it prints as one line (no traceback)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = f"error: {message}"


def check_arguments(n, seed, temperature, max_tokens) -> None:
    """The task's -T arguments, as inspect passes them (YAML values), checked before any board is generated."""
    try:
        check_whole("-T n", n, 1, what="a whole number of boards", why="the paper's 50")
        check_whole("-T seed", seed, 0, MAX_SEED, what="a base seed")
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0 <= temperature <= 2:
            raise UserError(f"-T temperature is {temperature!r}; give a number from 0 to 2 (the paper's 0.2)")
        check_whole("-T max_tokens", max_tokens, 1, what="a whole number of tokens", why="the paper's 300")
    except UserError as e:
        raise TaskArgumentError(str(e)) from None


@task
def poolbench(n: int = DEFAULT_N, seed: int = DEFAULT_SEED, temperature: float = DEFAULT_TEMPERATURE,
              max_tokens: int = DEFAULT_MAX_TOKENS) -> Task:
    """The benchmark's boards (default: the paper's 50), one shot each, free text."""
    check_arguments(n, seed, temperature, max_tokens)
    return Task(dataset=MemoryDataset([sample(s) for s in generate_boards(n, seed)], name="poolbench"),
                solver=generate(), scorer=physics(),
                config=GenerateConfig(temperature=temperature, max_tokens=max_tokens))


@scorer(metrics={m: [mean(), stderr()] for m in METRICS})
def physics():
    async def score(state: TaskState, target: Target) -> Score:
        s = Scenario.from_row(state.metadata["board"])
        # The evaluator's own path from an answer to its record: one parser, one simulation, one scoring.
        rec = answer_record(s, state.output.completion, None, player="model", sample=0)
        m = rec.metrics
        value = {k: float(getattr(m, k)) for k in METRICS if k != "parseable"} | {"parseable": float(rec.shot is not None)}
        explanation = (f"events: {rec.result.event_text()}" if rec.result is not None else
                       f"not fired ({rec.parse_status}: {rec.parse_message})")
        return Score(value=value, answer=json.dumps(rec.shot.to_row()) if rec.shot else "",
                     explanation=explanation,
                     metadata={"parse_status": rec.parse_status, "foul_reasons": list(m.foul_reasons),
                               "first_contact": rec.result.first_contact if rec.result else None,
                               "category": s.category})

    return score
