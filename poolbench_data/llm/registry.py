"""Backends by name: the one place a backend is chosen (as lm-evaluation-harness's model table). Each entry
knows how to check an evaluation's config before any work, how to build itself from it, and what it can do,
so no caller branches on a backend's name. Constructors import their module only when called.

The config is any object with an evaluation's fields (`poolbench_data.evaluation.EvalConfig`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from poolbench_data.core.errors import UserError
from poolbench_data.llm.backend import Backend


@dataclass(frozen=True)
class BackendSpec:
    """One backend: `resolve(config)` checks what it needs and returns the model's id (before any work);
    `make(config, model, scenario_ids)` builds it."""

    resolve: Callable[[Any], str]
    make: Callable[[Any, str, Sequence[str]], Backend]
    build: Callable[..., Backend]  # from keyword options, for programs that build one by hand
    generates: bool = True  # False: it only replays stored answers (no tools, no reasoning budget)
    images: bool = False  # it can send the rendered board (--vision)
    greedy_at_zero: bool = False  # at temperature 0 it decodes greedily: one answer, whatever --samples
    # How prompt lengths are checked against max_model_len: "model" (the model folder's tokenizer), "if-local"
    # (only when the model names a local folder with one), "none" (nothing is generated).
    tokenizer: str = "model"
    reads: tuple[str, ...] = ()  # config fields only this backend reads: set for another, they are a mistake
    # check_boards(config, scenario_ids): what the backend needs of the selected boards, checked before the
    # baselines run and before any folder is written (replay: an answer for every board and sample).
    check_boards: Callable[[Any, Sequence[str]], None] | None = None


def _engine_kwargs(config) -> dict:
    return {} if config.reasoning_budget is None else {"thinking_token_budget": config.reasoning_budget}


def _vllm_resolve(config) -> str:
    from poolbench_data.llm.model import resolve_model

    return resolve_model(config.model, field="--model")


def _vllm(config, model: str, scenario_ids: Sequence[str]) -> Backend:
    from poolbench_data.llm.vllm_backend import parse_model_args

    return _build_vllm(model, max_model_len=config.max_model_len, **parse_model_args(config.model_args),
                       **_engine_kwargs(config))


def _openai_resolve(config) -> str:
    from poolbench_data.llm.openai_backend import check_server

    check_server(config.base_url)
    if not config.model:
        raise UserError("--backend openai needs --model (the served model's name)")
    return config.model


def _openai(config, model: str, scenario_ids: Sequence[str]) -> Backend:
    return _build_openai(config.base_url, model, timeout_s=config.request_timeout, retries=config.retries,
                         deadline_s=config.timeout, **_engine_kwargs(config))


def _replay_resolve(config) -> str:
    if not config.responses:
        raise UserError("--backend replay needs --responses (an llm_traces.jsonl from another run)")
    if not Path(config.responses).is_file():
        raise UserError(f"--responses {config.responses} is not a file; pass an llm_traces.jsonl")
    return config.model or Path(config.responses).parent.name


def _replay_answers(config) -> tuple[list[dict], str]:
    """(rows, player) of --responses: every row readable, one player picked (--name where it holds several)."""
    from poolbench_data.llm.replay import replay_rows

    rows = replay_rows(config.responses, "give --responses an llm_traces.jsonl of `poolbench eval` (or a "
                                          "`poolbench play` responses.jsonl), unedited")
    players = sorted({r["player"] for r in rows if r["player_kind"] == "llm"})
    player = config.name if config.name in players else (players[0] if len(players) == 1 else None)
    if player is None:
        raise UserError(f"--responses {config.responses} holds responses of {players}; pick one with --name")
    return rows, player


def _replay_check(config, scenario_ids: Sequence[str]) -> None:
    from poolbench_data.llm.replay import coverage_problem

    rows, player = _replay_answers(config)
    if problem := coverage_problem(rows, scenario_ids, player, config.samples):
        raise UserError(f"--responses {config.responses} {problem}")


def _replay(config, model: str, scenario_ids: Sequence[str]) -> Backend:
    from poolbench_data.llm.replay import ReplayBackend

    rows, player = _replay_answers(config)
    return ReplayBackend.from_traces(rows, scenario_ids, player)


def _build_vllm(model: str, **options) -> Backend:
    from poolbench_data.llm.vllm_backend import VLLMBackend

    return VLLMBackend(model, **options)


def _build_openai(base_url: str, model: str, **options) -> Backend:
    from poolbench_data.llm.openai_backend import OpenAIBackend

    return OpenAIBackend(base_url, model, **options)


def _build_replay(responses, model: str = "replay") -> Backend:
    from poolbench_data.llm.replay import ReplayBackend

    return ReplayBackend(responses, model=model)


# name -> what it is; the one place a backend is chosen.
BACKENDS: dict[str, BackendSpec] = {
    "vllm": BackendSpec(_vllm_resolve, _vllm, _build_vllm, greedy_at_zero=True),
    "openai": BackendSpec(_openai_resolve, _openai, _build_openai, images=True, tokenizer="if-local",
                          reads=("base_url",)),
    "replay": BackendSpec(_replay_resolve, _replay, _build_replay, generates=False, tokenizer="none",
                          reads=("responses",), check_boards=_replay_check),
}


def backend_spec(name: str) -> BackendSpec:
    if name not in BACKENDS:
        raise UserError(f"--backend {name!r} is unknown; choose from {', '.join(BACKENDS)}")
    return BACKENDS[name]


def make_backend(name: str, **options: Any) -> Backend:
    """A backend from keyword options: vllm (model, engine settings), openai (base_url, model, ...), replay
    (responses: a list of answers for each conversation)."""
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose from {', '.join(BACKENDS)}")
    return BACKENDS[name].build(**options)
