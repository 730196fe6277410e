"""`poolbench eval`: a model and the baselines on the same boards, one report."""

from __future__ import annotations

import json
import time
from pathlib import Path


def add_arguments(p) -> None:
    from poolbench_data.scenarios import DEFAULT_N, DEFAULT_SEED

    p.add_argument("--model", default=None, help="local HF folder or Hub id (default: embedded SmolLM2-135M-Instruct)")
    p.add_argument("--name", default=None, help="player name in reports (default: the model's folder name)")
    p.add_argument("--backend", choices=("vllm", "openai"), default="vllm",
                   help="vllm: in process; openai: any OpenAI-compatible server (--base-url)")
    p.add_argument("--base-url", default="http://127.0.0.1:8000/v1", help="server for --backend openai")
    p.add_argument("--n", type=int, default=DEFAULT_N, help="scenarios (default: the paper's 50)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="scenario base seed (default: evaluation set)")
    p.add_argument("--samples", type=int, default=1, help="responses per scenario")
    p.add_argument("--temperature", type=float, default=0.2, help="sampling temperature (paper: 0.2)")
    p.add_argument("--max-tokens", type=int, default=300, help="token budget (paper: 300)")
    p.add_argument("--gen-seed", type=int, default=0, help="generation seed (per-request seeds derive from it)")
    p.add_argument("--structured", action="store_true", help="constrain output to the action's JSON schema")
    p.add_argument("--few-shot", type=int, default=0, help="worked Oracle examples in the prompt (0/1/3/5)")
    p.add_argument("--baselines", default="oracle,heuristic-centre,random", help="baselines in the report")
    p.add_argument("--max-model-len", type=int, default=4096, help="vLLM context length")
    p.add_argument("--out", default="results/eval", help="report folder")
    p.add_argument("--boards", type=int, default=3, help="board PNGs to draw (one per category)")
    p.add_argument("--dataset-dir", default="", help="append the LLM traces to this dataset folder's traces config")
    p.add_argument("--split", default="test", help="dataset split of these scenarios (with --dataset-dir)")
    p.add_argument("--quiet", action="store_true")


def _check_before_work(args) -> str:
    """Fail before any simulation or engine start: bad model, server down."""
    from poolbench_data.llm.model import resolve_model

    if args.n < 1 or args.samples < 1 or args.max_tokens < 1 or args.few_shot < 0:
        raise SystemExit("error: --n, --samples and --max-tokens must be >= 1 and --few-shot >= 0")
    if args.backend == "openai":
        from poolbench_data.llm.backends import check_server

        check_server(args.base_url)
        if not args.model:
            raise SystemExit("error: --backend openai needs --model (the served model's name)")
        return args.model
    return resolve_model(args.model)


def _make_backend(args, model: str):
    if args.backend == "openai":
        from poolbench_data.llm.backends import OpenAIBackend

        return OpenAIBackend(args.base_url, model)
    from poolbench_data.llm.backends import VLLMBackend

    return VLLMBackend(model, max_model_len=args.max_model_len)


def run(args) -> int:
    from poolbench_data.evaluate import (
        EvalSettings, decomposition, evaluate_model, format_decomposition, llm_trace_rows, parse_summary)
    from poolbench_data.provenance import provenance
    from poolbench_data.render import render_heatmap
    from poolbench_data.report import format_categories, format_table, summarize
    from poolbench_data.runs import default_workers, run_baselines
    from poolbench_data.scenarios import generate

    model = _check_before_work(args)
    name = args.name or Path(model).name
    baselines = [b for b in args.baselines.split(",") if b]
    if "oracle" not in baselines:
        baselines.insert(0, "oracle")  # the decomposition measures against it
    if args.dataset_dir:
        _check_dataset(Path(args.dataset_dir), args.split, args.n, args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    scenarios = generate(args.n, args.seed)
    t0 = time.perf_counter()
    runs = list(run_baselines(scenarios, baselines, workers=default_workers(), label=False, total=args.n,
                              progress=not args.quiet))
    base_records = [r for run in runs for r in run.records]
    oracle_shots = {r.scenario_id: r.shot for r in base_records if r.player == "oracle"}
    settings = EvalSettings(model=model, backend=args.backend, samples=args.samples, temperature=args.temperature,
                            max_tokens=args.max_tokens, seed=args.gen_seed, structured=args.structured,
                            few_shot=args.few_shot)
    t1 = time.perf_counter()
    backend = _make_backend(args, model)
    try:
        llm_records = evaluate_model(scenarios, backend, settings, player=name, progress=not args.quiet)
        backend_settings = backend.settings()
        usage = dict(getattr(backend, "last_usage", {}))
        failures = [f.to_dict() for f in getattr(backend, "last_failures", [])]
    finally:
        if hasattr(backend, "close"):
            backend.close()
    gen_s = time.perf_counter() - t1
    players = baselines + [name]
    summary = summarize(base_records + llm_records, players)
    decomp = {p: decomposition([r for r in base_records + llm_records if r.player == p], oracle_shots)
              for p in players if p != "oracle"}
    parse = parse_summary(llm_records)
    title = (f"PoolBench: {args.n} scenarios (seed {args.seed}), {name} x{args.samples} "
             f"(T={args.temperature}, max_tokens={args.max_tokens}, {'structured' if args.structured else 'free text'}, "
             f"{args.few_shot}-shot). Wilson 95% CIs.")
    report = "\n\n".join([format_table(summary, title), format_categories(summary),
                          f"Parse status ({name}): {parse}", format_decomposition(decomp)])
    print(report)
    render_heatmap(summary, out / "heatmap_contact.png")
    _boards(scenarios, base_records + llm_records, players, out, args.boards)
    rows = llm_trace_rows(llm_records, oracle_shots, settings)
    with open(out / "llm_traces.jsonl", "w") as f:
        for row in rows:
            f.write(json.dumps(row, sort_keys=True) + "\n")
    result = {"summary": summary, "parse_status": parse, "decomposition": decomp, "settings": settings.to_dict(),
              "backend": backend_settings, "usage": usage, "failures": failures,
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


def _check_dataset(folder: Path, split: str, n: int, seed: int) -> None:
    from poolbench_data.hub.folder import read_rows
    from poolbench_data.scenarios import scenario_id

    if not (folder / "README.md").exists():
        raise SystemExit(f"error: --dataset-dir {folder} is not a dataset folder; build it with builders/build_dataset.py")
    ids = {r["id"] for r in read_rows(folder, "scenarios", split)}
    missing = [scenario_id(seed, k) for k in range(n) if scenario_id(seed, k) not in ids]
    if missing:
        raise SystemExit(f"error: {len(missing)} scenarios (e.g. {missing[0]}) are not in {folder} split "
                         f"{split!r}; pass the --seed/--n/--split the dataset was built with")


def _boards(scenarios, records, players, out: Path, k: int) -> None:
    from poolbench_data.render import render_board

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
