"""`poolbench eval`'s flags for the paper's section 6.3 experiments (vision,
refinement, tools, reasoning budgets): arguments, their checks before work,
and how they change what is sent to the model."""

from __future__ import annotations

import json
from pathlib import Path

from poolbench_data.cli.args import UserError


def add_arguments(p) -> None:
    p.add_argument("--rounds", type=int, default=1,
                   help="refinement: after each shot the model gets the simulator's feedback and shoots again on "
                        "the same board, this many rounds in all (rows <name>@r2, ...)")
    p.add_argument("--vision", action="store_true",
                   help="send the rendered board PNG with the prompt (OpenAI image_url; --backend openai)")
    p.add_argument("--tools", action="store_true",
                   help="tool-augmented: the model may call a ghost_ball geometry tool (OpenAI function calling, "
                        "run locally) before it answers; calls in OUT/tool_calls.jsonl")
    p.add_argument("--max_tool_calls", type=int, default=3, help="tool calls a shot may make (with --tools)")
    p.add_argument("--reasoning_budget", type=int, default=None,
                   help="reasoning models: at most this many tokens inside <think> ... </think> (vLLM's "
                        "thinking_token_budget; the server needs --reasoning-parser), within --max_tokens; "
                        "tokens spent reasoning are reported in results.json's usage")


def check(args) -> None:
    for field, value, low in (("--rounds", args.rounds, 1), ("--max_tool_calls", args.max_tool_calls, 1)):
        if value < low:
            raise UserError(f"{field} must be >= {low} (got {value})")
    if args.vision and args.backend != "openai":
        raise UserError("--vision sends images over the OpenAI-compatible API: pass --backend openai and a "
                        "multimodal model's --base_url")
    if args.reasoning_budget is not None:
        if args.backend == "replay":
            raise UserError("--reasoning_budget limits generation: use --backend vllm or openai, not replay")
        if not 1 <= args.reasoning_budget < args.max_tokens:
            raise UserError(f"--reasoning_budget must be >= 1 and leave room for the answer within --max_tokens "
                            f"{args.max_tokens} (got {args.reasoning_budget}); raise --max_tokens or lower the budget")
    if args.tools and args.rounds > 1:
        raise UserError("--tools and --rounds are separate conditions: pass one of them")
    if args.tools and args.backend == "replay":
        raise UserError("--tools needs a live model to answer the tool's results: use --backend vllm or openai")


def backend_options(args) -> dict:
    """What the conditions ask of the backend itself."""
    return {} if args.reasoning_budget is None else {"thinking_token_budget": args.reasoning_budget}


def context_growth(args) -> tuple[int, str]:
    """(tokens the longest later turn adds to the first prompt, the flag that
    adds them): each tool call (an answer and its result) or refinement round
    (an answer and the feedback) stays in the conversation."""
    from poolbench_data.llm.tools import RESULT_TOKENS, TOOL_NOTE

    if args.tools:  # the note is English prose: ~2 characters a token is an upper bound here
        return (len(TOOL_NOTE) // 2 + args.max_tool_calls * (args.max_tokens + RESULT_TOKENS),
                f"--max_tool_calls {args.max_tool_calls}")
    return (args.rounds - 1) * (args.max_tokens + RESULT_TOKENS), f"--rounds {args.rounds}"


def play(args, scenarios, convs, backend, settings, *, name: str, progress):
    """The model's records and GenerationResult under the chosen condition,
    and what the condition leaves to write (tool threads)."""
    from poolbench_data.llm.experiments import refine, with_images, with_usage
    from poolbench_data.llm.player import evaluate_model

    if args.vision:
        from poolbench_data.report.render import board_png

        convs = with_images(convs, [board_png(s) for s in scenarios])
    if args.tools:
        from poolbench_data.llm.tools import play_with_tools

        records, gens, threads = play_with_tools(scenarios, convs, backend, settings, player=name,
                                                 max_calls=args.max_tool_calls)
        return records, with_usage(gens[0], gens[1:]), threads
    records, gen = evaluate_model(scenarios, backend, settings, player=name, progress=progress, convs=convs)
    if args.rounds > 1:
        later, gens = refine(scenarios, convs, records, backend, settings, player=name, rounds=args.rounds)
        records, gen = records + later, with_usage(gen, gens)
    return records, gen, None


def write(args, out: Path, scenarios, convs, records, name: str, threads, usage: dict) -> dict:
    """The condition's own files and lines; returns what goes into results.json."""
    budget = args.reasoning_budget if args.reasoning_budget is not None else "none"
    if "reasoning_tokens" not in usage and args.reasoning_budget is not None:  # a server that does not count them
        print(f"reasoning: tokens not reported by the backend (budget {budget})")
    elif usage.get("reasoning_tokens") or args.reasoning_budget is not None:
        answered = max(1, sum(1 for r in records if r.raw_response is not None))
        print(f"reasoning: {usage['reasoning_tokens']} of {usage['completion_tokens']} completion tokens inside "
              f"<think> ({usage['reasoning_tokens'] / answered:.1f} a response; budget {budget})")
    if args.rounds > 1:
        from poolbench_data.cli.eval_outputs import write_refinement_pairs

        write_refinement_pairs(out, scenarios, convs, records, name, args.rounds)
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
