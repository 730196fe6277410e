"""What an evaluation writes, and lm-evaluation-harness's conventions: --limit
and --categories pick boards; --output_path writes the results JSON and
--log_samples one JSONL line per shot beside it."""

from __future__ import annotations

import json
from pathlib import Path

from poolbench_data.core.errors import UserError, check_output_file


def select(config, scenarios: list) -> list:
    """The boards --categories and --limit keep, checked before any work."""
    from poolbench_data.core.records import CATEGORIES

    if config.limit < 0:
        raise UserError(f"--limit must be >= 0 (0: all boards; got {config.limit})")
    wanted = [c for c in config.categories.split(",") if c]
    unknown = [c for c in wanted if c not in CATEGORIES]
    if unknown:
        raise UserError(f"--categories {unknown} unknown; choose from {', '.join(CATEGORIES)}")
    kept = [s for s in scenarios if not wanted or s.category in wanted]
    kept = kept[:config.limit] if config.limit else kept
    if not kept:
        raise UserError(f"--categories {config.categories} keeps none of the --n {config.n} boards; raise --n")
    return kept


def report_folder(config) -> Path:
    """--out; without it, the folder of --output_path (so one flag puts the whole run in one place, and a
    second run never overwrites the first's report in results/eval), else results/eval."""
    if config.out:
        return Path(config.out)
    if config.output_path:
        path = Path(config.output_path)
        return path.parent if path.suffix == ".json" else path
    return Path("results/eval")


def paths(config, name: str) -> tuple[Path, Path] | None:
    """(results JSON, samples JSONL), both writable, or None without --output_path."""
    if config.log_samples and not config.output_path:
        raise UserError("--log_samples needs --output_path (the samples are written beside the results)")
    if not config.output_path:
        return None
    out = Path(config.output_path)
    results = out if out.suffix == ".json" else out / f"results_{name}.json"
    samples = results.with_name(f"samples_{name}.jsonl")
    check_output_file(str(results), "--output_path")
    if config.log_samples:
        check_output_file(str(samples), "--output_path")
    return results, samples


def write(config, targets: tuple[Path, Path], *, name: str, model: str, llm_records, base_records, baselines,
          settings, rows: list[dict], boards: int, total_s: float, backend_settings: dict) -> None:
    from poolbench_data.protocol.prompts import SYSTEM_PROMPT
    from poolbench_data.report.provenance import versions
    from poolbench_data.report.results import prompt_hash, results_json, sample_row

    from poolbench_data.llm.player import REQUEST_FAILED

    answered = [r for r in llm_records if r.parse_status != REQUEST_FAILED]
    s = settings.to_dict()
    run_config = {"model": model, "model_name": name, "backend": config.backend, "model_args": config.model_args,
                  "backend_settings": backend_settings,
                  "sampling": {k: s[k] for k in ("samples", "temperature", "max_tokens", "structured", "few_shot")},
                  "seeds": {"scenario_seed": config.seed, "gen_seed": config.gen_seed},
                  "prompt_version": s["prompt_version"], "prompt_hash": prompt_hash(SYSTEM_PROMPT),
                  "n": config.n, "limit": config.limit or None, "categories": config.categories or None,
                  "request_failures": len(llm_records) - len(answered), "command": command_line(config)}
    doc = results_json(answered, player=name, config=run_config, versions=versions(), boards=boards,
                       boards_total=config.n, total_s=total_s,
                       baselines={b: [r for r in base_records if r.player == b] for b in baselines})
    results, samples = targets
    results.write_text(json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n")
    if config.log_samples:
        with open(samples, "w") as f:
            for i, row in enumerate(rows):
                f.write(json.dumps(sample_row(row, i), sort_keys=True, default=str) + "\n")
    print(f"results JSON: {results}" + (f"; samples: {samples}" if config.log_samples else ""))


def condition(config) -> str:
    """The run's protocol as a file-name word: free_text (the paper's), else its settings joined by `_`."""
    parts = [w for w, on in (("tools", config.tools), ("structured", config.structured),
                             (f"{config.few_shot}shot", config.few_shot), ("vision", config.vision)) if on]
    return "_".join(parts) or "free_text"


# Flags about this machine's files (where the run writes, the dataset folder it reads), which the Hub file leaves
# out so that its command runs elsewhere as printed: --split, --log_samples and --overwrite are read only with
# another of them, and the boards stay named by --n and --seed.
LOCAL_FLAGS = ("out", "output_path", "log_samples", "eval_results", "overwrite", "dataset_dir", "split")


def command_line(config, hub_name: str | None = None) -> str:
    """`poolbench eval` with the flags of every setting that is not its default, shell-quoted so that it runs as
    printed, URL credentials masked (`redact`). With `hub_name`, the line for others (the Hub file), which names
    no place on this machine: no LOCAL_FLAGS, --responses by its file's name, and a --model given as a local
    path by `hub_name` (--name, else the model's own name)."""
    import dataclasses
    import shlex

    from poolbench_data.llm.model import is_local_path
    from poolbench_data.llm.openai_backend import redact

    args = ["poolbench", "eval"]
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if value == f.default or value is None or (hub_name is not None and f.name in LOCAL_FLAGS):
            continue
        if hub_name is not None and f.name == "responses":
            value = Path(value).name
        if hub_name is not None and f.name == "model" and is_local_path(value):
            value = hub_name
        args += [f"--{f.name}"] if value is True else [f"--{f.name}", redact(value)]
    return shlex.join(args)


def write_eval_results(config, name: str, summary: dict) -> None:
    """The model's headline metrics (its first round) as the Hub's .eval_results YAML in --eval_results."""
    from poolbench_data.report import eval_results
    from poolbench_data.report.provenance import versions

    if name not in summary:
        print(f"note: no --eval_results written: none of {name}'s shots was answered")
        return
    version = versions()["poolbench_data"]
    how = condition(config).replace("_", " ")
    if config.tools:
        how = how.replace("tools", f"tools (ghost_ball, at most {config.max_tool_calls} calls)")
    boards = f"{summary[name]['overall']['clean_pot']['n']} answers on {config.n} boards of seed {config.seed}"
    if config.limit or config.categories:
        boards += f" (--limit {config.limit or 'none'}, --categories {config.categories or 'all'})"
    command = command_line(config, hub_name=name)
    notes = (f"{how}; {boards}; T={config.temperature:g}, max_tokens={config.max_tokens}; poolbench-data "
             f"{version}: {command}")
    doc = eval_results.entries(summary[name]["overall"], dataset_id=config.eval_results_dataset,
                               date=eval_results.now(), notes=notes,
                               source_url=f"https://huggingface.co/datasets/{config.eval_results_dataset}",
                               source_name=f"poolbench-data {version} (poolbench eval)")
    header = (f"PoolBench results of {name} for the Hub: copy this file into the model repo's .eval_results/.\n"
              f"Written by poolbench-data {version}: {command}")
    path = eval_results.write(Path(config.eval_results), condition(config), doc, header)
    print(f"eval results: {path}")


def write_refinement_pairs(out: Path, scenarios, convs, records, name: str, rounds: int) -> None:
    """--rounds > 1: later-better rounds as TRL preference pairs, OUT/refinement_pairs.jsonl."""
    from poolbench_data.llm.experiments import refinement_pairs

    pairs = refinement_pairs(scenarios, convs, records, name, rounds)
    with open(out / "refinement_pairs.jsonl", "w") as f:
        for pair in pairs:
            f.write(json.dumps(pair, sort_keys=True) + "\n")
    print(f"refinement: {len(pairs)} later-better pairs in {out / 'refinement_pairs.jsonl'}")


def request_failures(config, name: str, llm_records) -> dict:
    """The model's shots that got no response, by failure kind, and whether
    they are more than --max_failed_share allows (the run is incomplete)."""
    from poolbench_data.llm.openai_backend import redact
    from poolbench_data.llm.player import REQUEST_FAILED

    shots = len(llm_records)
    lost = [r for r in llm_records if r.parse_status == REQUEST_FAILED]
    failed = len(lost)
    share = failed / shots if shots else 0.0
    # From the records, not round 1's result: a later round or tool turn can fail too.
    by_kind: dict[str, int] = {}
    for r in lost:
        kind = r.parse_message.split(":", 1)[0]
        by_kind[kind] = by_kind.get(kind, 0) + 1
    by_kind = dict(sorted(by_kind.items()))
    incomplete = share > config.max_failed_share
    kinds = ", ".join(f"{k}: {v}" for k, v in by_kind.items())
    text = (f"{failed} of {shots} shots of {name} got no response ({kinds}), "
            f"{'more than' if incomplete else 'within what'} --max_failed_share {config.max_failed_share:g} allows")
    example = " ".join(redact(lost[0].parse_message.split(":", 1)[-1]).split())[:300] if lost else ""
    return {"shots": shots, "failed": failed, "share": share, "by_kind": by_kind,
            "max_failed_share": config.max_failed_share, "incomplete": incomplete, "text": text, "example": example}


def simulator_stops(records) -> dict[str, dict[str, int]]:
    """Per player, the fired shots whose simulation stopped before the balls came to rest (`timeout`, `event-limit`):
    they are scored from where the balls were, so the report names them rather than count them as any shot."""
    out: dict[str, dict[str, int]] = {}
    for r in records:
        if r.stopped_early:
            by = out.setdefault(r.player, {})
            by[r.result.status] = by.get(r.result.status, 0) + 1
    return out


def stops_line(stops: dict[str, dict[str, int]]) -> str:
    """The report's line for `simulator_stops`; empty when every simulation ran to rest."""
    if not stops:
        return ""
    return ("Simulations stopped early, scored from where the balls were (core.physics: MAX_EVENTS, TIMEOUT_S): "
            + "; ".join(f"{p}: " + ", ".join(f"{k} {v}" for k, v in sorted(by.items())) for p, by in stops.items()))


def generated(config) -> str:
    """How the model's answers came to be, for the report's title: the sampling settings of a backend that
    generates; for stored answers (a replay, a person's `poolbench play`), where they were read, since this
    run's sampling settings never produced them."""
    from poolbench_data.llm.registry import backend_spec

    if not backend_spec(config.backend).generates:  # the file's name: the same answers, the same report anywhere
        return f"answers read from {Path(config.responses).name}"
    return f"T={config.temperature}, max_tokens={config.max_tokens}, {config.few_shot}-shot"


def report(config, name, scenarios, baselines, base_records, llm_records, oracle_shots, out: Path,
            failed: dict) -> tuple[str, dict]:
    """Print-ready report and the summary it prints (also summary.json); draws the heatmap and the board PNGs.
    Shots without a response are counted apart, never in the model's rates."""
    from poolbench_data.llm.player import REQUEST_FAILED
    from poolbench_data.report.evaluation import decomposition, format_decomposition, parse_summary
    from poolbench_data.report.render import render_heatmap
    from poolbench_data.report.tables import format_categories, format_table, summarize

    answered = [r for r in llm_records if r.parse_status != REQUEST_FAILED]
    # With no answered shot the model's rates would be 0/0: no row at all. One row per refinement round.
    players = baselines + list(dict.fromkeys(r.player for r in answered))
    records = base_records + answered
    summary = summarize(records, players)
    decomp = {p: decomposition([r for r in records if r.player == p], oracle_shots)
              for p in players if p != "oracle"}
    mode = ("structured" if config.structured else
            f"ghost_ball tool, <= {config.max_tool_calls} calls" if config.tools else "free text")
    title = (f"PoolBench: {len(scenarios)} scenarios (seed {config.seed}), {name} x{config.samples} "
             f"({generated(config)}, {mode}). Wilson 95% CIs.")
    stops = simulator_stops(base_records + llm_records)
    render_heatmap(summary, out / "heatmap_contact.png")
    draw_boards(scenarios, base_records + llm_records, baselines + [name], out, config.boards)
    (out / "summary.json").write_text(json.dumps({"summary": summary, "decomposition": decomp,
                                                  "parse_status": parse_summary(llm_records),
                                                  "request_failures": failed, "simulator_stops": stops},
                                                 indent=2, sort_keys=True))
    parse_line = f"Parse status ({name}): {parse_summary(llm_records)}"
    if failed["failed"]:
        rates = (f"its rates count its {len(answered)} answered shots only" if answered else
                 f"{name} has no row: none of its shots was answered")
        parse_line += f"\nRequests failed: {failed['text']}; {rates}"
    if stops:
        parse_line += "\n" + stops_line(stops)
    parts = [format_table(summary, title), format_categories(summary), parse_line, format_decomposition(decomp)]
    if failed["incomplete"]:
        parts.insert(0, f"INCOMPLETE: {failed['text']}; these results are not a measurement of {name}")
    return "\n\n".join(parts), summary


def draw_boards(scenarios, records, players, out: Path, k: int) -> None:
    from poolbench_data.llm.player import REQUEST_FAILED
    from poolbench_data.report.render import render_board

    seen = set()
    for s in scenarios:
        if len(seen) >= k:
            break
        if s.category in seen:
            continue
        seen.add(s.category)
        plays = []
        for p in players:
            r = next(x for x in records if x.player == p and x.scenario_id == s.id)
            verdict = "pot" if r.metrics.clean_pot else "contact" if r.metrics.legal_contact else (
                "request failed" if r.parse_status == REQUEST_FAILED else "no shot" if r.shot is None else "foul")
            plays.append((p, r.shot, verdict))
        render_board(s, plays, out / f"board_{s.id}_{s.category}.png")
