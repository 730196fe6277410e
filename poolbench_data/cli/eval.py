"""`poolbench eval`: a model and the baselines on the same boards, one report."""

from __future__ import annotations

import json
import time
from pathlib import Path

from poolbench_data.cli.args import UserError


def add_arguments(p) -> None:
    from poolbench_data.boards.generate import DEFAULT_N, DEFAULT_SEED
    from poolbench_data.llm.registry import BACKENDS
    from poolbench_data.players import EVAL_BASELINES
    from poolbench_data.protocol.prompts import DEFAULT_MAX_TOKENS, DEFAULT_TEMPERATURE

    p.add_argument("--model", default=None, help="local HF folder or Hub id (default: embedded SmolLM2-135M-Instruct)")
    p.add_argument("--name", default=None, help="player name in reports (default: the model's folder name)")
    p.add_argument("--backend", choices=tuple(BACKENDS), default="vllm",
                   help="vllm: in process; openai: any OpenAI-compatible server (--base_url); "
                        "replay: the responses stored in --responses")
    p.add_argument("--base_url", default="http://127.0.0.1:8000/v1", help="server for --backend openai")
    p.add_argument("--responses", default="", help="llm_traces.jsonl whose responses --backend replay re-scores")
    p.add_argument("--n", type=int, default=DEFAULT_N, help="scenarios (default: the paper's 50)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="scenario base seed (default: evaluation set)")
    p.add_argument("--samples", type=int, default=1, help="responses per scenario")
    p.add_argument("--temperature", type=float, default=DEFAULT_TEMPERATURE, help="sampling temperature (paper: 0.2)")
    p.add_argument("--max_tokens", type=int, default=DEFAULT_MAX_TOKENS, help="token budget (paper: 300)")
    p.add_argument("--gen_seed", type=int, default=0, help="generation seed (per-request seeds derive from it)")
    p.add_argument("--structured", action="store_true", help="constrain output to the action's JSON schema")
    p.add_argument("--few_shot", type=int, default=0, help="worked Oracle examples in the prompt (0/1/3/5)")
    p.add_argument("--baselines", default=",".join(EVAL_BASELINES), help="baselines in the report")
    p.add_argument("--max_model_len", type=int, default=4096, help="vLLM context length")
    p.add_argument("--out", default="results/eval", help="report folder")
    p.add_argument("--boards", type=int, default=3, help="board PNGs to draw (one per category)")
    p.add_argument("--dataset_dir", default="", help="append the LLM traces to this dataset folder's traces config")
    p.add_argument("--split", default="test", help="dataset split of these scenarios (with --dataset_dir)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--verbose", action="store_true", help="show the engine's logs (default: OUT/engine.log)")


def _check_before_work(args) -> str:
    """Fail before any simulation or engine start: bad numbers, bad model, server down."""
    from poolbench_data.llm.model import resolve_model

    for field, value, low in (("--n", args.n, 1), ("--samples", args.samples, 1), ("--max_tokens", args.max_tokens, 1),
                              ("--few_shot", args.few_shot, 0), ("--boards", args.boards, 0),
                              ("--temperature", args.temperature, 0.0)):
        if value < low:
            raise UserError(f"{field} must be >= {low} (got {value})")
    if args.backend == "replay":
        if not args.responses:
            raise UserError("--backend replay needs --responses (an llm_traces.jsonl from an earlier run)")
        if not Path(args.responses).is_file():
            raise UserError(f"--responses {args.responses} is not a file; pass an llm_traces.jsonl")
        return args.model or Path(args.responses).parent.name
    if args.backend == "openai":
        from poolbench_data.llm.openai_backend import check_server

        check_server(args.base_url)
        if not args.model:
            raise UserError("--backend openai needs --model (the served model's name)")
        return args.model
    return resolve_model(args.model)


def _make_backend(args, model: str, scenario_ids: list[str], name: str):
    from poolbench_data.llm.registry import make_backend

    if args.backend == "openai":
        return make_backend("openai", base_url=args.base_url, model=model)
    if args.backend == "replay":
        from poolbench_data.llm.replay import ReplayBackend
        from poolbench_data.report.compare import load_traces

        rows = load_traces(args.responses)
        players = sorted({r["player"] for r in rows if r["player_kind"] == "llm"})
        player = args.name if args.name in players else (players[0] if len(players) == 1 else None)
        if player is None:
            raise UserError(f"{args.responses} holds responses of {players}; pick one with --name")
        return ReplayBackend.from_traces(rows, scenario_ids, player)
    return make_backend("vllm", model=model, max_model_len=args.max_model_len)


def run(args) -> int:
    from poolbench_data.boards.generate import generate
    from poolbench_data.cli.logs import engine_logs
    from poolbench_data.llm.player import EvalSettings, evaluate_model, llm_trace_rows
    from poolbench_data.players import check_players
    from poolbench_data.players.play import run_baselines
    from poolbench_data.players.pool import default_workers
    from poolbench_data.players.traces import oracle_shots as oracle_shots_of
    from poolbench_data.report.provenance import provenance

    baselines = check_players([b for b in args.baselines.split(",") if b])
    if "oracle" not in baselines:
        baselines.insert(0, "oracle")  # the decomposition measures against it
    if args.dataset_dir:
        _check_dataset(Path(args.dataset_dir), args.split, args.n, args.seed)
    model = _check_before_work(args)
    name = args.name or Path(model).name
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    scenarios = generate(args.n, args.seed)
    t0 = time.perf_counter()
    runs = list(run_baselines(scenarios, baselines, workers=default_workers(), label=False, total=args.n,
                              progress=not args.quiet))
    base_records = [r for run in runs for r in run.records]
    oracle_shots = oracle_shots_of(base_records)
    settings = EvalSettings(model=model, backend=args.backend, samples=args.samples, temperature=args.temperature,
                            max_tokens=args.max_tokens, seed=args.gen_seed, structured=args.structured,
                            few_shot=args.few_shot)
    t1 = time.perf_counter()
    with engine_logs(out / "engine.log", verbose=args.verbose) as progress:
        backend = _make_backend(args, model, [s.id for s in scenarios], name)
        try:
            llm_records, gen = evaluate_model(scenarios, backend, settings, player=name,
                                              progress=False if args.quiet else progress)
            backend_settings = backend.settings()
        finally:
            backend.close()
    gen_s = time.perf_counter() - t1
    report = _report(args, name, scenarios, baselines, base_records, llm_records, oracle_shots, out)
    print(report)
    rows = llm_trace_rows(llm_records, oracle_shots, settings)
    with open(out / "llm_traces.jsonl", "w") as f:
        for row in rows:
            f.write(json.dumps(row, sort_keys=True) + "\n")
    result = {"report": report, "settings": settings.to_dict(), "backend": backend_settings, "usage": gen.usage,
              "failures": [f.to_dict() for f in gen.failures],
              "timing_s": {"baselines": t1 - t0, "generation_and_physics": gen_s},
              "provenance": provenance(n=args.n, seed=args.seed, evaluation=settings.to_dict())}
    (out / "results.json").write_text(json.dumps(result, indent=2, sort_keys=True, default=str))
    (out / "report.txt").write_text(report + "\n")
    if args.dataset_dir:
        from poolbench_data.hub.update import replace_rows

        n = replace_rows(Path(args.dataset_dir), "traces", args.split, rows,
                         drop=lambda r: r["player"] == name and r["player_kind"] == "llm",
                         provenance_key=f"{name}:{args.split}", provenance=result["provenance"])
        print(f"traces/{args.split} of {args.dataset_dir} now has {n} rows")
    print(f"report, heatmap, boards and traces in {out}/ (generation {gen_s:.0f} s)")
    return 0


def _report(args, name, scenarios, baselines, base_records, llm_records, oracle_shots, out: Path) -> str:
    """Print-ready report; also draws the heatmap and the board PNGs."""
    from poolbench_data.report.evaluation import decomposition, format_decomposition, parse_summary
    from poolbench_data.report.render import render_heatmap
    from poolbench_data.report.tables import format_categories, format_table, summarize

    players = baselines + [name]
    records = base_records + llm_records
    summary = summarize(records, players)
    decomp = {p: decomposition([r for r in records if r.player == p], oracle_shots)
              for p in players if p != "oracle"}
    title = (f"PoolBench: {args.n} scenarios (seed {args.seed}), {name} x{args.samples} "
             f"(T={args.temperature}, max_tokens={args.max_tokens}, {'structured' if args.structured else 'free text'}, "
             f"{args.few_shot}-shot). Wilson 95% CIs.")
    render_heatmap(summary, out / "heatmap_contact.png")
    _boards(scenarios, records, players, out, args.boards)
    (out / "summary.json").write_text(json.dumps({"summary": summary, "decomposition": decomp,
                                                  "parse_status": parse_summary(llm_records)},
                                                 indent=2, sort_keys=True))
    return "\n\n".join([format_table(summary, title), format_categories(summary),
                        f"Parse status ({name}): {parse_summary(llm_records)}", format_decomposition(decomp)])


def _check_dataset(folder: Path, split: str, n: int, seed: int) -> None:
    from poolbench_data.boards.generate import scenario_id
    from poolbench_data.hub.folder import read_rows, require_dataset

    require_dataset(folder, "--dataset_dir")
    ids = {r["id"] for r in read_rows(folder, "scenarios", split)}
    missing = [scenario_id(seed, k) for k in range(n) if scenario_id(seed, k) not in ids]
    if missing:
        raise UserError(f"{len(missing)} scenarios (e.g. {missing[0]}) are not in {folder} split "
                        f"{split!r}; pass the --seed/--n/--split the dataset was built with")


def _boards(scenarios, records, players, out: Path, k: int) -> None:
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
                "no shot" if r.shot is None else "foul")
            plays.append((p, r.shot, verdict))
        render_board(s, plays, out / f"board_{s.id}_{s.category}.png")
