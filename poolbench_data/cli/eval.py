"""`poolbench eval`: a model and the baselines on the same boards, one report."""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path

from poolbench_data.cli import eval_experiments, eval_outputs
from poolbench_data.cli.args import UserError
from poolbench_data.core.shutdown import terminate_as_exit


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
    p.add_argument("--request_timeout", type=float, default=60.0,
                   help="seconds one attempt of one request may take (--backend openai)")
    p.add_argument("--retries", type=int, default=2,
                   help="retries of a request that timed out, could not connect or got HTTP 429/5xx "
                        "(--backend openai)")
    p.add_argument("--timeout", type=float, default=1800.0,
                   help="seconds all of the model's requests may take together (--backend openai); "
                        "those unanswered by then fail as 'deadline'")
    p.add_argument("--max_failed_share", type=float, default=0.0,
                   help="share of the model's shots whose request may fail for good before the run fails "
                        "(exit 1, results marked incomplete, nothing added to --dataset_dir); 0: none may")
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
    p.add_argument("--model_args", default="",
                   help="engine settings passed to vLLM, as lm-evaluation-harness's --model_args: "
                        "k=v,k=v (e.g. dtype=float32,enforce_eager=True,tensor_parallel_size=2); recorded in results")
    p.add_argument("--max_model_len", type=int, default=4096,
                   help="context length (the vLLM engine's); every prompt plus --max_tokens must fit in it")
    p.add_argument("--out", default=None, help="report folder (default: --output_path's folder if given, else "
                                                "results/eval)")
    p.add_argument("--boards", type=int, default=3, help="board PNGs to draw (one per category)")
    p.add_argument("--dataset_dir", default="", help="append the LLM traces to this dataset folder's traces config")
    p.add_argument("--split", default="test", help="dataset split of these scenarios (with --dataset_dir)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--verbose", action="store_true", help="show the engine's logs (default: OUT/engine.log)")
    eval_outputs.add_arguments(p)
    eval_experiments.add_arguments(p)


def _check_before_work(args) -> str:
    """Fail before any simulation or engine start: bad numbers, bad model, server down."""
    from poolbench_data.llm.model import resolve_model

    for field, value, low in (("--n", args.n, 1), ("--samples", args.samples, 1), ("--max_tokens", args.max_tokens, 1),
                              ("--few_shot", args.few_shot, 0), ("--boards", args.boards, 0),
                              ("--max_model_len", args.max_model_len, 1), ("--retries", args.retries, 0)):
        if value < low:
            raise UserError(f"{field} must be >= {low} (got {value})")
    _check_sampling(args)
    for field, value in (("--request_timeout", args.request_timeout), ("--timeout", args.timeout)):
        if not (value > 0 and math.isfinite(value)):
            raise UserError(f"{field} must be a number of seconds > 0 (got {value})")
    if not 0.0 <= args.max_failed_share <= 1.0:
        raise UserError(f"--max_failed_share must be a share in [0, 1] (got {args.max_failed_share})")
    parse_model_args(args.model_args)  # a malformed item fails here, not after the baselines
    eval_experiments.check(args)
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


def _check_sampling(args) -> None:
    """What the engines refuse, refused before the baselines and the engine
    start: vLLM's SamplingParams (0.32) and the OpenAI API take temperatures
    in [0, 2] only, and vLLM decodes greedily at 0, which has one answer."""
    t = args.temperature
    if t < 0:
        raise UserError(f"--temperature must be >= 0 (got {t})")
    if not t <= 2.0:  # also nan and inf
        raise UserError(f"--temperature must be a number in [0, 2] (got {t}); pass e.g. the paper's 0.2")
    if args.backend != "vllm":
        return
    if args.samples > 1 and t < 1e-5:  # vLLM's _SAMPLING_EPS
        raise UserError(f"--samples {args.samples} needs --temperature > 0: at 0 vLLM decodes greedily, which "
                        "gives one answer; pass --samples 1 or a --temperature such as 0.2")
    limit = os.environ.get("VLLM_MAX_N_SEQUENCES", "16384")
    if limit.isdigit() and args.samples > int(limit):
        raise UserError(f"--samples must be at most {limit} (vLLM's VLLM_MAX_N_SEQUENCES; got {args.samples})")


def _check_name(args, name: str, baselines: list[str]) -> None:
    """A model named like a baseline would share its rows in every table and trace file."""
    from poolbench_data.players import BASELINES

    if name in BASELINES or name in baselines:
        which = f"--name {name}" if args.name else f"the model's name {name!r} (its folder's name)"
        raise UserError(f"{which} is a baseline's name, so the model's rows would merge with that baseline's; "
                        "pass --name something-else")


def _has_tokenizer(model: str) -> bool:
    folder = Path(model)
    return folder.is_dir() and any((folder / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json"))


def _check_context(args, model: str, scenarios) -> None:
    """Every prompt plus --max_tokens must fit in --max_model_len: vLLM would
    otherwise cut answers short without a word, a server refuse them."""
    from poolbench_data.llm.player import conversations, few_shot_examples, load_tokenizer, prompt_tokens
    from poolbench_data.protocol.prompts import messages

    if args.backend == "replay":
        return
    if args.backend == "openai" and not _has_tokenizer(model):
        print(f"note: prompt lengths not checked against --max_model_len: --model {model} is not a local folder "
              "with a tokenizer (the server refuses a prompt too long for it)", file=sys.stderr)
        return
    try:
        tokenizer = load_tokenizer(model)
    except Exception as exc:  # noqa: BLE001 - the engine will name what is wrong with the model
        print(f"note: prompt lengths not checked: no tokenizer loads from {model} ({type(exc).__name__})",
              file=sys.stderr)
        return
    budget = args.max_model_len - args.max_tokens
    longest = max(prompt_tokens(tokenizer, conversations(scenarios, args.few_shot)))
    growth, flag = eval_experiments.context_growth(args)
    if longest + growth <= budget:
        return
    if longest <= budget:
        raise UserError(f"{flag} keeps up to {growth} more tokens in the conversation than the first prompt (up to "
                        f"{longest} tokens), which with --max_tokens {args.max_tokens} exceeds --max_model_len "
                        f"{args.max_model_len}; lower {flag.split()[0]} or raise --max_model_len to "
                        f"{longest + growth + args.max_tokens}")
    top = max(5, args.few_shot)
    examples = few_shot_examples(top)
    by_k = {k: max(prompt_tokens(tokenizer, [messages(s, examples[:k]) for s in scenarios])) for k in range(top + 1)}
    by_k[args.few_shot] = longest
    shown = ", ".join(f"{k}: {by_k[k]}" for k in sorted({0, 1, 3, 5, args.few_shot}))
    fits = [k for k, tokens in by_k.items() if tokens <= budget]
    fix = f"the largest that fits is {max(fits)}: pass --few_shot {max(fits)}" if fits else "no --few_shot fits"
    if longest < args.max_model_len:
        fix += f", lower --max_tokens to {args.max_model_len - longest}"
    raise UserError(f"--few_shot {args.few_shot} makes prompts of up to {longest} tokens, which with --max_tokens "
                    f"{args.max_tokens} exceeds --max_model_len {args.max_model_len}; the longest prompt by "
                    f"--few_shot is {shown} tokens; {fix}, or raise --max_model_len to {longest + args.max_tokens}")


def _make_backend(args, model: str, scenario_ids: list[str], name: str):
    from poolbench_data.llm.registry import make_backend

    if args.backend == "openai":
        return make_backend("openai", base_url=args.base_url, model=model, timeout_s=args.request_timeout,
                            retries=args.retries, deadline_s=args.timeout, **eval_experiments.backend_options(args))
    if args.backend == "replay":
        from poolbench_data.llm.replay import ReplayBackend
        from poolbench_data.report.compare import load_traces

        rows = load_traces(args.responses)
        players = sorted({r["player"] for r in rows if r["player_kind"] == "llm"})
        player = args.name if args.name in players else (players[0] if len(players) == 1 else None)
        if player is None:
            raise UserError(f"{args.responses} holds responses of {players}; pick one with --name")
        return ReplayBackend.from_traces(rows, scenario_ids, player)
    return make_backend("vllm", model=model, max_model_len=args.max_model_len, **parse_model_args(args.model_args),
                        **eval_experiments.backend_options(args))


def run(args) -> int:
    from poolbench_data.boards.generate import generate
    from poolbench_data.cli.logs import engine_logs
    from poolbench_data.llm.player import REQUEST_FAILED, EvalSettings, conversations, llm_trace_rows
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
    _check_name(args, name, baselines)
    scenarios = eval_outputs.select(args, generate(args.n, args.seed))
    targets = eval_outputs.paths(args, name)
    _check_context(args, model, scenarios)
    out = eval_outputs.report_folder(args)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    runs = list(run_baselines(scenarios, baselines, workers=default_workers(), label=False, total=len(scenarios),
                              progress=not args.quiet))
    base_records = [r for run in runs for r in run.records]
    oracle_shots = oracle_shots_of(base_records)
    settings = EvalSettings(model=model, backend=args.backend, samples=args.samples, temperature=args.temperature,
                            max_tokens=args.max_tokens, seed=args.gen_seed, structured=args.structured,
                            few_shot=args.few_shot)
    t1 = time.perf_counter()
    # SIGTERM while the engine runs is an exit, so `finally` shuts its worker processes down (else they outlive us).
    with engine_logs(out / "engine.log", verbose=args.verbose) as progress, terminate_as_exit():
        backend = _make_backend(args, model, [s.id for s in scenarios], name)
        try:
            convs = conversations(scenarios, settings.few_shot)
            llm_records, gen, threads = eval_experiments.play(args, scenarios, convs, backend, settings, name=name,
                                                              progress=False if args.quiet else progress)
            backend_settings = backend.settings()
        finally:
            backend.close()
    gen_s = time.perf_counter() - t1
    failed = _request_failures(args, name, llm_records)
    report = _report(args, name, scenarios, baselines, base_records, llm_records, oracle_shots, out, failed)
    print(report)
    rows = llm_trace_rows(llm_records, oracle_shots, settings)
    with open(out / "llm_traces.jsonl", "w") as f:
        for row in rows:
            f.write(json.dumps(row, sort_keys=True) + "\n")
    result = {"report": report, "settings": settings.to_dict(), "backend": backend_settings, "usage": gen.usage,
              "failures": [f.to_dict() for f in gen.failures], "request_failures": failed,
              "incomplete": failed["incomplete"],
              "timing_s": {"baselines": t1 - t0, "generation_and_physics": gen_s},
              "provenance": provenance(n=args.n, seed=args.seed, limit=args.limit, categories=args.categories,
                                           evaluation=settings.to_dict())}
    result.update(eval_experiments.write(args, out, scenarios, convs, llm_records, name, threads, gen.usage))
    (out / "results.json").write_text(json.dumps(result, indent=2, sort_keys=True, default=str))
    (out / "report.txt").write_text(report + "\n")
    if targets:
        eval_outputs.write(args, targets, name=name, model=model, llm_records=llm_records, base_records=base_records,
                           baselines=baselines, settings=settings, rows=rows, boards=len(scenarios),
                           total_s=time.perf_counter() - t0, backend_settings=backend_settings)
    if args.dataset_dir and not failed["incomplete"]:
        from poolbench_data.hub.update import replace_rows

        # A shot without a response is no answer of the model's: preference
        # pairs and before/after tables would read it as the model's failure.
        answered = [r for r in rows if r["parse_status"] != REQUEST_FAILED]
        n = replace_rows(Path(args.dataset_dir), "traces", args.split, answered,
                         drop=lambda r: r["player"] == name and r["player_kind"] == "llm",
                         provenance_key=f"{name}:{args.split}", provenance=result["provenance"])
        print(f"traces/{args.split} of {args.dataset_dir} now has {n} rows")
    print(f"report, heatmap, boards and traces in {out}/ (generation {gen_s:.0f} s)")
    if failed["incomplete"]:
        kept = " and nothing was added to --dataset_dir" if args.dataset_dir else ""
        print(f"error: {failed['text']}; the results in {out}/ are marked incomplete{kept}. First failure: "
              f"{failed['example']}", file=sys.stderr)
        return 1
    return 0


def _request_failures(args, name: str, llm_records) -> dict:
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
    incomplete = share > args.max_failed_share
    kinds = ", ".join(f"{k}: {v}" for k, v in by_kind.items())
    text = (f"{failed} of {shots} shots of {name} got no response ({kinds}), "
            f"{'more than' if incomplete else 'within what'} --max_failed_share {args.max_failed_share:g} allows")
    example = " ".join(redact(lost[0].parse_message.split(":", 1)[-1]).split())[:300] if lost else ""
    return {"shots": shots, "failed": failed, "share": share, "by_kind": by_kind,
            "max_failed_share": args.max_failed_share, "incomplete": incomplete, "text": text, "example": example}


def _report(args, name, scenarios, baselines, base_records, llm_records, oracle_shots, out: Path,
            failed: dict) -> str:
    """Print-ready report; also draws the heatmap and the board PNGs. Shots
    without a response are counted apart, never in the model's rates."""
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
    title = (f"PoolBench: {len(scenarios)} scenarios (seed {args.seed}), {name} x{args.samples} "
             f"(T={args.temperature}, max_tokens={args.max_tokens}, {'structured' if args.structured else 'free text'}, "
             f"{args.few_shot}-shot). Wilson 95% CIs.")
    render_heatmap(summary, out / "heatmap_contact.png")
    _boards(scenarios, base_records + llm_records, baselines + [name], out, args.boards)
    (out / "summary.json").write_text(json.dumps({"summary": summary, "decomposition": decomp,
                                                  "parse_status": parse_summary(llm_records),
                                                  "request_failures": failed}, indent=2, sort_keys=True))
    parse_line = f"Parse status ({name}): {parse_summary(llm_records)}"
    if failed["failed"]:
        rates = (f"its rates count its {len(answered)} answered shots only" if answered else
                 f"{name} has no row: none of its shots was answered")
        parse_line += f"\nRequests failed: {failed['text']}; {rates}"
    parts = [format_table(summary, title), format_categories(summary), parse_line, format_decomposition(decomp)]
    if failed["incomplete"]:
        parts.insert(0, f"INCOMPLETE: {failed['text']}; these results are not a measurement of {name}")
    return "\n\n".join(parts)


def _check_dataset(folder: Path, split: str, n: int, seed: int) -> None:
    """Everything the final `replace_rows` needs, checked before generation:
    a writable parent, no other writer, every shard readable, the boards."""
    from poolbench_data.boards.generate import scenario_id
    from poolbench_data.hub.folder import read_rows, require_dataset

    require_dataset(folder, "--dataset_dir")  # also finishes a swap a killed run left, and opens every shard
    ids = {r["id"] for r in read_rows(folder, "scenarios", split)}
    missing = [scenario_id(seed, k) for k in range(n) if scenario_id(seed, k) not in ids]
    if missing:
        raise UserError(f"{len(missing)} scenarios (e.g. {missing[0]}) are not in {folder} split "
                        f"{split!r}; pass the --seed/--n/--split the dataset was built with")


def _boards(scenarios, records, players, out: Path, k: int) -> None:
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


def parse_model_args(text: str) -> dict:
    """'dtype=float32,enforce_eager=True,tensor_parallel_size=2' -> engine kwargs
    (ints, floats, booleans and None read as such, anything else as a string)."""
    out: dict = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--model_args item {item!r} is not key=value; write e.g. dtype=float32,enforce_eager=True")
        out[key.strip()] = _value(value.strip())
    return out


def _value(text: str):
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "none":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text

