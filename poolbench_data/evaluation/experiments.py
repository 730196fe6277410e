"""The paper's section 6.3 experiments (vision, refinement, tools, reasoning
budgets): their checks before work, and how they change what is sent to the
model and what a run writes."""

from __future__ import annotations

import json
from pathlib import Path

from poolbench_data.core.errors import UserError, check_at_least


def check(config, spec) -> None:
    """The experiments' flags against each other and against what the backend (`spec`) can do."""
    for flag, value, low in (("--rounds", config.rounds, 1), ("--max_tool_calls", config.max_tool_calls, 1)):
        check_at_least(flag, value, low)
    if config.vision and not spec.images:
        raise UserError("--vision sends images over the OpenAI-compatible API: pass --backend openai and a "
                        "multimodal model's --base_url")
    if config.reasoning_budget is not None:
        if not spec.generates:
            raise UserError("--reasoning_budget limits generation: use --backend vllm or openai, not replay")
        if not 1 <= config.reasoning_budget < config.max_tokens:
            raise UserError(f"--reasoning_budget must be >= 1 and leave room for the answer within --max_tokens "
                            f"{config.max_tokens} (got {config.reasoning_budget}); raise --max_tokens or lower the budget")
    if config.tools and config.rounds > 1:
        raise UserError("--tools and --rounds are separate conditions: pass one of them")
    if config.tools and not spec.generates:
        raise UserError("--tools needs a live model to answer the tool's results: use --backend vllm or openai")


def context_growth(config) -> tuple[int, str]:
    """(tokens the longest later turn adds to the first prompt, the flag that
    adds them): each tool call (an answer and its result) or refinement round
    (an answer and the feedback) stays in the conversation."""
    from poolbench_data.llm.tools import RESULT_TOKENS, TOOL_NOTE

    if config.tools:  # the note is English prose: ~2 characters a token is an upper bound here
        return (len(TOOL_NOTE) // 2 + config.max_tool_calls * (config.max_tokens + RESULT_TOKENS),
                f"--max_tool_calls {config.max_tool_calls}")
    return (config.rounds - 1) * (config.max_tokens + RESULT_TOKENS), f"--rounds {config.rounds}"


def play(config, scenarios, convs, backend, settings, *, name: str, progress):
    """The model's records and GenerationResult under the chosen condition,
    and what the condition leaves to write (tool threads)."""
    from poolbench_data.llm.experiments import refine, with_images, with_usage
    from poolbench_data.llm.player import evaluate_model

    if config.vision:
        from poolbench_data.report.render import board_png

        convs = with_images(convs, [board_png(s) for s in scenarios])
    if config.tools:
        from poolbench_data.llm.tools import play_with_tools

        records, gens, threads = play_with_tools(scenarios, convs, backend, settings, player=name,
                                                 max_calls=config.max_tool_calls)
        return records, with_usage(gens[0], gens[1:]), threads
    records, gen = evaluate_model(scenarios, backend, settings, player=name, progress=progress, convs=convs)
    if config.rounds > 1:
        later, gens = refine(scenarios, convs, records, backend, settings, player=name, rounds=config.rounds)
        records, gen = records + later, with_usage(gen, gens)
    return records, gen, None


def write(config, out: Path, scenarios, convs, records, name: str, threads, usage: dict) -> dict:
    """The condition's own files and lines; returns what goes into results.json."""
    budget = config.reasoning_budget if config.reasoning_budget is not None else "none"
    if "reasoning_tokens" not in usage and config.reasoning_budget is not None:  # a server that does not count them
        print(f"reasoning: tokens not reported by the backend (budget {budget})")
    elif usage.get("reasoning_tokens") or config.reasoning_budget is not None:
        answered = max(1, sum(1 for r in records if r.raw_response is not None))
        print(f"reasoning: {usage['reasoning_tokens']} of {usage['completion_tokens']} completion tokens inside "
              f"<think> ({usage['reasoning_tokens'] / answered:.1f} a response; budget {budget})")
    if config.rounds > 1:
        from poolbench_data.evaluation.outputs import write_refinement_pairs

        write_refinement_pairs(out, scenarios, convs, records, name, config.rounds)
    if threads is None:
        return {}
    from poolbench_data.llm.tools import tool_summary

    with open(out / "tool_calls.jsonl", "w") as f:
        for t in threads:
            f.write(json.dumps(t.to_row(scenarios[t.board].id, name), sort_keys=True) + "\n")
    summary = tool_summary(threads)
    print(f"tools: {summary['calls']} ghost_ball calls ({summary['calls_with_error']} with an error) on "
          f"{summary['shots_with_calls']} of {summary['shots']} shots; {out / 'tool_calls.jsonl'}")
    return {"tools": summary}
