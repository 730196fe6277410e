"""`poolbench compare`: before/after from two llm_traces.jsonl files (McNemar)."""

from __future__ import annotations

from pathlib import Path


def add_arguments(p) -> None:
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--out", default="", help="also write the report here")


def run(args) -> int:
    from poolbench_data.report.compare import compare, format_comparison, load_traces

    text = format_comparison(compare(load_traces(args.before), load_traces(args.after)),
                             Path(args.before).parent.name, Path(args.after).parent.name)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0
