"""`poolbench compare`: before/after from two llm_traces.jsonl files (McNemar)."""

from __future__ import annotations

from pathlib import Path


def add_arguments(p) -> None:
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--player", default=None,
                   help="compare this player's rows (needed when a file holds more than one player)")
    p.add_argument("--out", default="", help="also write the report here")


def run(args) -> int:
    from poolbench_data.core.errors import check_output_file
    from poolbench_data.report.compare import compare_files, format_comparison

    out = check_output_file(args.out) if args.out else None
    text = format_comparison(compare_files(Path(args.before), Path(args.after), args.player),
                             Path(args.before).parent.name, Path(args.after).parent.name)
    print(text)
    if out is not None:
        out.write_text(text + "\n")
    return 0
