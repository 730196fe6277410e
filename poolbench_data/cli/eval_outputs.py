"""`poolbench eval`'s lm-evaluation-harness conventions: --limit and
--categories pick boards; --output_path writes the results JSON and
--log_samples one JSONL line per shot beside it."""

from __future__ import annotations

import json
from pathlib import Path

from poolbench_data.cli.args import UserError, check_output_file


def add_arguments(p) -> None:
    p.add_argument("--limit", type=int, default=0, help="evaluate only the first N selected boards (0: all)")
    p.add_argument("--categories", default="", help="comma-separated categories to keep (default: all seven)")
    p.add_argument("--output_path", default="",
                   help="results JSON in lm-evaluation-harness's shape (a .json file, or a folder for "
                        "results_<name>.json)")
    p.add_argument("--log_samples", action="store_true",
                   help="with --output_path: also samples_<name>.jsonl, one line per shot (response, parsed "
                        "action, parse status, event trace, metrics)")


def select(args, scenarios: list) -> list:
    """The boards --categories and --limit keep, checked before any work."""
    from poolbench_data.core.records import CATEGORIES

    if args.limit < 0:
        raise UserError(f"--limit must be >= 0 (0: all boards; got {args.limit})")
    wanted = [c for c in args.categories.split(",") if c]
    unknown = [c for c in wanted if c not in CATEGORIES]
    if unknown:
        raise UserError(f"--categories {unknown} unknown; choose from {', '.join(CATEGORIES)}")
    kept = [s for s in scenarios if not wanted or s.category in wanted]
    kept = kept[:args.limit] if args.limit else kept
    if not kept:
        raise UserError(f"--categories {args.categories} keeps none of the --n {args.n} boards; raise --n")
    return kept


def report_folder(args) -> Path:
    """--out; without it, the folder of --output_path (so one flag puts the whole run in one place, and a
    second run never overwrites the first's report in results/eval), else results/eval."""
    if args.out:
        return Path(args.out)
    if args.output_path:
        path = Path(args.output_path)
        return path.parent if path.suffix == ".json" else path
    return Path("results/eval")


def paths(args, name: str) -> tuple[Path, Path] | None:
    """(results JSON, samples JSONL), both writable, or None without --output_path."""
    if args.log_samples and not args.output_path:
        raise UserError("--log_samples needs --output_path (the samples are written beside the results)")
    if not args.output_path:
        return None
    out = Path(args.output_path)
    results = out if out.suffix == ".json" else out / f"results_{name}.json"
    samples = results.with_name(f"samples_{name}.jsonl")
    check_output_file(str(results), "--output_path")
    if args.log_samples:
        check_output_file(str(samples), "--output_path")
    return results, samples


def write(args, targets: tuple[Path, Path], *, name: str, model: str, llm_records, base_records, baselines,
          settings, rows: list[dict], boards: int, total_s: float, backend_settings: dict) -> None:
    from poolbench_data.protocol.prompts import SYSTEM_PROMPT
    from poolbench_data.report.provenance import versions
    from poolbench_data.report.results import prompt_hash, results_json, sample_row

    from poolbench_data.llm.player import REQUEST_FAILED

    answered = [r for r in llm_records if r.parse_status != REQUEST_FAILED]
    s = settings.to_dict()
    config = {"model": model, "model_name": name, "backend": args.backend, "model_args": args.model_args,
              "backend_settings": backend_settings,
              "sampling": {k: s[k] for k in ("samples", "temperature", "max_tokens", "structured", "few_shot")},
              "seeds": {"scenario_seed": args.seed, "gen_seed": args.gen_seed},
              "prompt_version": s["prompt_version"], "prompt_hash": prompt_hash(SYSTEM_PROMPT),
              "n": args.n, "limit": args.limit or None, "categories": args.categories or None,
              "request_failures": len(llm_records) - len(answered)}
    doc = results_json(answered, player=name, config=config, versions=versions(), boards=boards,
                       boards_total=args.n, total_s=total_s,
                       baselines={b: [r for r in base_records if r.player == b] for b in baselines})
    results, samples = targets
    results.write_text(json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n")
    if args.log_samples:
        with open(samples, "w") as f:
            for i, row in enumerate(rows):
                f.write(json.dumps(sample_row(row, i), sort_keys=True, default=str) + "\n")
    print(f"results JSON: {results}" + (f"; samples: {samples}" if args.log_samples else ""))


def write_refinement_pairs(out: Path, scenarios, convs, records, name: str, rounds: int) -> None:
    """--rounds > 1: later-better rounds as TRL preference pairs, OUT/refinement_pairs.jsonl."""
    from poolbench_data.llm.experiments import refinement_pairs

    pairs = refinement_pairs(scenarios, convs, records, name, rounds)
    with open(out / "refinement_pairs.jsonl", "w") as f:
        for pair in pairs:
            f.write(json.dumps(pair, sort_keys=True) + "\n")
    print(f"refinement: {len(pairs)} later-better pairs in {out / 'refinement_pairs.jsonl'}")
