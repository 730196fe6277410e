"""`evaluate(config)`: a model and the baselines on the same boards, one report; what `poolbench eval`,
`poolbench score` and other programs call."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from poolbench_data.core.shutdown import terminate_as_exit
from poolbench_data.evaluation import checks, experiments, outputs
from poolbench_data.evaluation.config import EvalConfig


@dataclass(frozen=True)
class EvalResult:
    """What an evaluation measured and where it wrote it (`out`: report.txt, results.json, llm_traces.jsonl, ...)."""

    config: EvalConfig
    name: str  # the model's player name
    report: str  # the printed tables
    summary: dict  # summary.json's: per player and category, each metric's count, rate and Wilson interval
    records: tuple  # the model's ShotRecords (refinement rounds and samples included)
    baseline_records: tuple
    trace_rows: tuple  # the model's rows as written to llm_traces.jsonl
    results: dict  # results.json
    out: Path

    @property
    def incomplete(self) -> bool:
        """More of the model's requests failed than max_failed_share allows: not a measurement of the model."""
        return self.results["request_failures"]["incomplete"]


def evaluate(config: EvalConfig):
    """Check the config (before any work), play the baselines and the model on the boards, write the report
    folder; the dataset folder gets the model's traces only when the run is complete. Returns an EvalResult; with
    a --game, the game's evaluator plays it (evaluation.game_eval) and returns a GameEvalResult."""
    from poolbench_data.boards.generate import generate
    from poolbench_data.evaluation.logs import engine_logs
    from poolbench_data.llm.player import REQUEST_FAILED, EvalSettings, conversations, llm_trace_rows
    from poolbench_data.llm.model import model_name
    from poolbench_data.llm.registry import backend_spec
    from poolbench_data.players import check_players
    from poolbench_data.players.play import run_baselines
    from poolbench_data.players.pool import default_workers
    from poolbench_data.players.traces import oracle_shots as oracle_shots_of
    from poolbench_data.report.provenance import provenance

    checks.check_types(config)  # a hand-built config (EvalConfig(n="5")) is named before any value is compared
    if config.game != "shot":  # a game played shot by shot: its own evaluator, its own result
        from poolbench_data.evaluation.game_eval import evaluate_game

        return evaluate_game(config)
    from poolbench_data.evaluation.game_eval import check_shot_flags

    check_shot_flags(config)
    baselines = check_players([b for b in config.baselines.split(",") if b], "--baselines")
    if "oracle" not in baselines:
        baselines.insert(0, "oracle")  # the decomposition measures against it
    if config.n is not None:
        checks.check_at_least("--n", config.n, 1)
    if config.seed is not None:
        checks.check_seed("--seed", config.seed)
    config = checks.with_boards(config)
    if config.dataset_dir:  # every run says which data it used
        print(f"boards: {config.n} of {config.dataset_dir} split {config.split!r} (seed {config.seed})")
    model = checks.check_config(config)
    name = config.name or model_name(model)
    checks.check_name(config, name, baselines)
    scenarios = outputs.select(config, generate(config.n, config.seed))
    targets = outputs.paths(config, name)
    checks.check_context(config, model, scenarios)
    checks.check_boards(config, scenarios)
    out = outputs.report_folder(config)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    runs = list(run_baselines(scenarios, baselines, workers=default_workers(), label=False, total=len(scenarios),
                              progress=not config.quiet))
    base_records = [r for run in runs for r in run.records]
    oracle_shots = oracle_shots_of(base_records)
    settings = EvalSettings(model=model, backend=config.backend, samples=config.samples,
                            temperature=config.temperature, max_tokens=config.max_tokens, seed=config.gen_seed,
                            structured=config.structured, few_shot=config.few_shot)
    t1 = time.perf_counter()
    # SIGTERM while the engine runs is an exit, so `finally` shuts its worker processes down (else they outlive us).
    with engine_logs(out / "engine.log", verbose=config.verbose) as progress, terminate_as_exit():
        backend = backend_spec(config.backend).make(config, model, [s.id for s in scenarios])
        try:
            convs = conversations(scenarios, settings.few_shot)
            llm_records, gen, threads = experiments.play(config, scenarios, convs, backend, settings, name=name,
                                                         progress=False if config.quiet else progress)
            backend_settings = backend.settings()
        finally:
            backend.close()
    gen_s = time.perf_counter() - t1
    failed = outputs.request_failures(config, name, llm_records)
    report, summary = outputs.report(config, name, scenarios, baselines, base_records, llm_records, oracle_shots, out,
                                     failed)
    print(report)
    rows = llm_trace_rows(llm_records, oracle_shots, settings)
    with open(out / "llm_traces.jsonl", "w") as f:
        for row in rows:
            f.write(json.dumps(row, sort_keys=True) + "\n")
    result = {"command": outputs.command_line(config), "report": report, "settings": settings.to_dict(),
              "backend": backend_settings, "usage": gen.usage,
              "failures": [f.to_dict() for f in gen.failures], "request_failures": failed,
              "incomplete": failed["incomplete"],
              "timing_s": {"baselines": t1 - t0, "generation_and_physics": gen_s},
              "provenance": provenance(n=config.n, seed=config.seed, limit=config.limit,
                                       categories=config.categories, evaluation=settings.to_dict())}
    result.update(experiments.write(config, out, scenarios, convs, llm_records, name, threads, gen.usage))
    (out / "results.json").write_text(json.dumps(result, indent=2, sort_keys=True, default=str))
    (out / "report.txt").write_text(report + "\n")
    if targets:
        outputs.write(config, targets, name=name, model=model, llm_records=llm_records, base_records=base_records,
                      baselines=baselines, settings=settings, rows=rows, boards=len(scenarios),
                      total_s=time.perf_counter() - t0, backend_settings=backend_settings)
    if config.eval_results and not failed["incomplete"]:
        outputs.write_eval_results(config, name, summary)
    if config.dataset_dir and not failed["incomplete"]:
        from poolbench_data.hub.update import replace_rows

        # A shot without a response is no answer of the model's: preference
        # pairs and before/after tables would read it as the model's failure.
        answered = [r for r in rows if r["parse_status"] != REQUEST_FAILED]
        n = replace_rows(Path(config.dataset_dir), "traces", config.split, answered,
                         drop=lambda r: r["player"] == name and r["player_kind"] == "llm",
                         provenance_key=f"{name}:{config.split}", provenance=result["provenance"])
        print(f"traces/{config.split} of {config.dataset_dir} now has {n} rows")
    print(f"report, heatmap, boards and traces in {out}/ (generation {gen_s:.0f} s)")
    return EvalResult(config, name, report, summary, tuple(llm_records), tuple(base_records), tuple(rows), result,
                      out)
