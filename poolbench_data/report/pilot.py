"""The training loop's numbers: per-player counts from an evaluation's traces, exact McNemar between two
evaluations of the same shots, the supervised-budget table, and the results JSONs (docs/results/, README.md there)."""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
from pathlib import Path

from poolbench_data.core.records import NOT_FIRED
from poolbench_data.players.pool import cores
from poolbench_data.players.traces import load_traces

# Written by the training scripts beside their checkpoints (finetune.common.write_batch_record): rows an
# optimizer step consumes, so steps convert to examples without unpickling training_args.bin.
BATCH_RECORD = "poolbench_batch.json"


def examples_seen(run_dir: Path) -> int | None:
    """Rows a run (or one of its checkpoints) has trained on: global_step x the batch record's examples_per_step.
    0 for a run that has not trained; None where the steps are known but the batch is not (a run without the
    record)."""
    state = run_dir / "trainer_state.json"
    if not state.exists():
        return 0
    record = next((p for p in (run_dir / BATCH_RECORD, run_dir.parent / BATCH_RECORD) if p.exists()), None)
    if record is None:
        return None
    state = json.loads(state.read_text())
    seen = int(state["global_step"] * json.loads(record.read_text())["examples_per_step"])
    # An epoch's last batch may be short (321 rows at 4 a step are 81 steps, not 324 rows): a run that wrote
    # how many rows (or pairs) it kept is capped at the epochs begun times those rows.
    results = next((p for p in (run_dir / "train_results.json", run_dir.parent / "train_results.json")
                    if p.exists()), None)
    kept = json.loads(results.read_text()) if results is not None else {}
    rows = kept.get("train_rows_kept") or kept.get("train_pairs")  # SFT's name, DPO's
    if rows and state.get("epoch"):
        seen = min(seen, math.ceil(state["epoch"] - 1e-6) * rows)
    return seen


def played(row: dict) -> bool:
    """A trace row whose action the simulator played (parsed, legal to fire)."""
    return row["sim_status"] not in (NOT_FIRED, "error")


def player_stats(rows: list[dict]) -> dict:
    """The pilot's per-player numbers from llm_traces.jsonl rows."""
    from poolbench_data.report.stats import quantile

    fired = [r for r in rows if played(r)]
    errors = [abs(r["angle_error_deg"]) for r in fired if r["angle_error_deg"] is not None]
    return {
        "parseable": sum(r["parse_status"] == "ok" for r in rows),
        **{m: sum(bool(r[m]) for r in rows) for m in ("legal_contact", "own_potted", "clean_pot", "foul")},
        "median_abs_angle_error_deg": round(quantile(errors, 0.5), 2) if errors else None,
        "distinct_aims": len({round(r["action"]["phi"]) % 360 for r in fired}),
    }


def pilot_result(work: Path, after_label: str, sft_rows_available: int | None) -> dict:
    """Before/after of the loop in the shape of docs/results/free_text_sft_50_boards.json."""
    before, after = (load_traces(work / name / "llm_traces.jsonl") for name in ("before", "after"))
    p = mcnemar_ps(before, after, {"legal_contact": lambda r: bool(r["legal_contact"]),
                                   "own_potted": lambda r: bool(r["own_potted"]),
                                   "parseable": lambda r: r["parse_status"] == "ok"})
    baseline = baseline_counts(work / "after", ("random", "heuristic-centre", "oracle"))
    return {
        "after_model": after_label,
        "n": len(before),
        "before": player_stats(before),
        "after": player_stats(after),
        "random": baseline.get("random", {}),
        "heuristic_centre": baseline.get("heuristic-centre", {}),
        "oracle": baseline.get("oracle"),  # the ceiling the figures draw
        "mcnemar_p": p,
        "sft_examples": examples_seen(work / "sft"),
        "sft_rows_available": sft_rows_available,
        "dpo_pairs": examples_seen(work / "dpo"),
        "scaling": scaling_rows(work),
        **timing(work),
        "machine": machine(),
    }


def mcnemar_ps(base: list[dict], other: list[dict], tests: dict) -> dict[str, float]:
    """Exact McNemar of `other` against `base` on the same shots (scenario, sample), for each named test."""
    from poolbench_data.report.stats import mcnemar_exact

    key = lambda r: (r["scenario_id"], r["sample"])  # noqa: E731
    b, o = {key(r): r for r in base}, {key(r): r for r in other}
    if set(b) != set(o):
        raise ValueError("the two evaluations cover different shots; evaluate both with the same --n and --seed")
    return {name: mcnemar_exact(sum(t(b[k]) and not t(o[k]) for k in b), sum(t(o[k]) and not t(b[k]) for k in b))
            for name, t in tests.items()}


def baseline_counts(folder: Path, names: tuple[str, ...]) -> dict[str, dict[str, int]]:
    """The baselines' counts from an evaluation's summary.json, for those of `names` it holds."""
    summary = json.loads((folder / "summary.json").read_text())["summary"]
    return {name: {m: summary[name]["overall"][m]["k"] for m in ("legal_contact", "own_potted", "clean_pot", "foul")}
            for name in names if name in summary}


def tool_stats(folder: Path, rows: list[dict] | None = None) -> dict | None:
    """A --tools evaluation's counts: player_stats plus the shots that called the tool. `rows`: its
    llm_traces.jsonl when the caller has read it already."""
    traces = folder / "llm_traces.jsonl"
    if rows is None and not traces.exists():
        return None
    rows = load_traces(traces) if rows is None else rows
    stats = player_stats(rows)
    calls = folder / "tool_calls.jsonl"
    if calls.exists():
        threads = load_traces(calls)
        stats["tool_called"] = sum(1 for t in threads if t["calls"])
        stats["speeds_by_calls"] = speeds_by_calls(rows, threads)
    return stats


def speeds_by_calls(rows: list[dict], threads: list[dict]) -> dict[str, dict[str, int]]:
    """The speeds (m/s, to 0.1) of the shots played, by how many tool calls each made ("3": answered at the
    default cap): whether a preference stage moved the speed it trains (tool-speed, tool-cap-speed pairs), which
    clean pots alone do not show."""
    from collections import Counter

    calls = {(t["scenario_id"], t["sample"]): len(t["calls"]) for t in threads}
    found: dict[int, Counter] = {}
    for r in filter(played, rows):
        found.setdefault(calls.get((r["scenario_id"], r["sample"]), 0), Counter())[round(r["action"]["V0"], 1)] += 1
    return {str(n): {f"{v:g}": c[v] for v in sorted(c)} for n, c in sorted(found.items())}


def pilot_tools_result(work: Path, available: dict[str, int | None]) -> dict:
    """The tool track's numbers in the shape of docs/results/tool_track_smollm2_135m_cpu.json; a stage
    that did not run is null, never a zero. `available`: rows of the dataset's sft_tools and pairs_tools configs
    (None: not built)."""
    sft = load_traces(work / "sft" / "llm_traces.jsonl")
    baseline = baseline_counts(work / "sft", ("random", "heuristic-centre", "heuristic", "oracle"))
    tests = {"clean_pot": lambda r: bool(r["clean_pot"]), "own_potted": lambda r: bool(r["own_potted"])}
    p = {f"{name}_vs_sft": mcnemar_ps(sft, load_traces(work / name / "llm_traces.jsonl"), tests)
         for name in ("dpo", "grpo") if (work / name / "llm_traces.jsonl").exists()}
    grpo_state, grpo_run = (work / "grpo" / name for name in ("trainer_state.json", "train_results.json"))
    return {
        "n": len(sft),
        "random": baseline.get("random"),
        "heuristic_centre": baseline.get("heuristic-centre"),
        "heuristic_potpoint": baseline.get("heuristic"),
        "oracle": baseline.get("oracle"),  # the ceiling the figures draw
        "sft": tool_stats(work / "sft", sft),
        "dpo": tool_stats(work / "dpo"),
        "grpo": tool_stats(work / "grpo"),
        "free_text_sft": tool_stats(work / "free_text"),
        "mcnemar_p": p,
        "demonstrations": examples_seen(work / "sft"),
        "demonstrations_available": available.get("sft_tools"),
        "dpo_pairs": examples_seen(work / "dpo"),
        "dpo_pairs_available": available.get("pairs_tools"),
        "grpo_steps": json.loads(grpo_state.read_text())["global_step"] if grpo_state.exists() else 0,
        # the boards GRPO drew from (all train boards, or those whose samples spread: grpo.py --spread_from)
        "grpo_boards": json.loads(grpo_run.read_text()).get("train_boards") if grpo_run.exists() else None,
        "tool_version": tool_version(work),
        **timing(work),
        "machine": machine(),
    }


def tool_version(work: Path) -> str | None:
    """The ghost_ball version the track's evaluations played with (llm.tools.TOOL_VERSION), "mixed: ..." when
    they differ (a stage resumed from a run with another tool); None before any evaluation ran or where they did
    not record it (results.json without the field)."""
    found = {}
    for name in ("sft", "dpo", "grpo"):
        results = work / name / "results.json"
        if results.exists():
            found[name] = json.loads(results.read_text()).get("tools", {}).get("tool_version")
    if len(set(found.values())) > 1:
        return "mixed: " + ", ".join(f"{v} ({k})" for k, v in found.items())
    return next(iter(found.values()), None)


def scaling_rows(work: Path) -> list[dict]:
    """before, SFT checkpoints by examples seen, the final SFT model (by the examples it saw, where the run
    recorded its batch), then DPO; each with `shots`, the shots its counts are of."""
    rows = []
    names = ["before"] + sorted((p.name for p in work.glob("sft-*") if p.name[4:].isdigit()),
                                key=lambda n: int(n[4:])) + ["sft", "after"]
    final = examples_seen(work / "sft")
    for name in names:
        traces = work / name / "llm_traces.jsonl"
        if traces.exists():
            label = {"before": "base (0 examples)", "after": "after",
                     "sft": "SFT (final)" if final is None else f"SFT ({final} examples)"}.get(
                name, f"SFT ({name[4:]} examples)")
            shots = load_traces(traces)
            rows.append({"model": label, "shots": len(shots), **player_stats(shots)})
    return rows


def scaling_table(work: Path) -> str:
    rows = scaling_rows(work)
    cols = ("parseable", "legal_contact", "own_potted", "clean_pot", "foul", "median_abs_angle_error_deg",
            "distinct_aims")
    head = f"{'model':22}" + "".join(f"{c[:13]:>14}" for c in cols)
    shots = sorted({r["shots"] for r in rows})
    of = f"counts of {shots[0]}" if len(shots) == 1 else "counts of each row's shots: " + ", ".join(
        f"{r['model']} {r['shots']}" for r in rows)
    lines = [f"Supervised budget and DPO on the held-out boards ({of})", head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['model']:22}" + "".join(f"{'-' if r[c] is None else r[c]!s:>14}" for c in cols))
    return "\n".join(lines)


def stage_minutes(work: Path) -> dict[str, float | None]:
    """Minutes each stage of this work_dir took, by its stamp (finetune.stamps), in the order they ran: the seconds
    the loop recorded, or for a stamp without them (a version that keeps none), the time from the stamp before it
    (or the loop's start) to its own; None where neither is known (a stage run by hand)."""
    stamps = sorted((work / "stamps").glob("*.json"), key=lambda p: p.stat().st_mtime)
    start = work / ".started"
    last = start.stat().st_mtime if start.exists() else None
    minutes = {}
    for stamp in stamps:
        seconds = json.loads(stamp.read_text()).get("seconds")
        if seconds is None and last is not None:
            seconds = stamp.stat().st_mtime - last
        last = stamp.stat().st_mtime
        minutes[stamp.stem] = None if seconds is None else round(seconds / 60, 1)
    return minutes


def timing(work: Path) -> dict:
    """The pilot's time, `wall_minutes`: the sum of its `stage_minutes` (a resumed run counts each stage's own run,
    not the hours between); None where a stage's time is not known or no stage ran. The stamps are read once."""
    stages = stage_minutes(work)
    minutes = list(stages.values())
    return {"wall_minutes": round(sum(minutes), 1) if minutes and None not in minutes else None,
            "stage_minutes": stages}


def machine() -> str:
    """The machine in words, for a result's provenance: its GPUs, else the CPU (with its bf16: the pilots' times
    differ ~2x between CPUs with and without it), architecture, cores and memory."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=10)
        gpu = out.stdout.strip().replace("\n", ", ") if out.returncode == 0 else ""
    except (OSError, subprocess.TimeoutExpired):
        gpu = ""
    mem = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30)
    return gpu or f"{cpu_name()}, {platform.machine()}, {cores()} cores, {mem} GiB, no GPU"


def cpu_name(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The CPU's model name and how it does bf16 (AMX, AVX-512 BF16, or not natively), from Linux's cpuinfo."""
    try:
        text = Path(cpuinfo).read_text()
    except OSError:
        return platform.processor() or "unknown CPU"
    field = lambda key: next((ln.split(":", 1)[1].strip() for ln in text.splitlines()  # noqa: E731
                              if ln.split(":", 1)[0].strip() == key), "")
    flags = set(field("flags").split())
    bf16 = "AMX bf16" if "amx_bf16" in flags else "AVX-512 bf16" if "avx512_bf16" in flags else "no native bf16"
    return f"{field('model name') or 'unknown CPU'} ({bf16})"


RUNOUT_MODELS = ("start", "sft", "dpo")  # the run-out pilot's models, in training order


def _episode_facts(folder: Path) -> list[dict]:
    """A game evaluation's episodes (OUT/episodes.jsonl) as report.games.facts rows keyed by start and sample;
    [] where the evaluation did not run."""
    path = folder / "episodes.jsonl"
    if not path.exists():
        return []
    from poolbench_data.report.games import facts_of_row

    return [{**facts_of_row(r), "player_kind": r["player_kind"], "key": (r["episode"], r["sample"])}
            for r in load_traces(path) if not r.get("request_failed")]


def _parse_statuses(folder: Path) -> dict[str, int] | None:
    """How a game evaluation's model answers parsed, turn by turn ({status: turns}); None where it did not run."""
    path = folder / "llm_turns.jsonl"
    if not path.exists():
        return None
    from collections import Counter

    return dict(sorted(Counter(r["parse_status"] for r in load_traces(path)).items()))


def pilot_runout_result(work: Path, available: dict[str, int | None]) -> dict:
    """The run-out pilot: each model's balls per visit, run-out rate and fouls on the same starts, the baselines of
    the first evaluation, and exact paired tests between consecutive stages (a stage that did not run is null).
    `available`: the rows built of the demonstrations and of the pairs ("demonstrations", "pairs"; None: not
    built)."""
    from poolbench_data.report.games import paired_tests, runout_summary

    models, rows = {}, {}
    for name in RUNOUT_MODELS:
        facts = [{**r, "player": name} for r in _episode_facts(work / f"eval_{name}") if r["player_kind"] == "llm"]
        rows[name] = facts
        models[name] = runout_summary(facts, [name])[name] if facts else None
    baseline_rows = [r for r in _episode_facts(work / "eval_start") if r["player_kind"] == "baseline"]
    names = list(dict.fromkeys(r["player"] for r in baseline_rows))
    baselines = runout_summary(baseline_rows, names) if baseline_rows else {}
    paired = {}
    for a, b in (("sft", "start"), ("dpo", "sft")):
        if rows[a] and rows[b]:
            paired[f"{a}_vs_{b}"] = paired_tests(rows[a] + rows[b], a, b)
    for b in names:
        for a in ("sft", "dpo"):
            if rows[a]:
                paired[f"{a}_vs_{b}"] = paired_tests(rows[a] + baseline_rows, a, b)
    answers = {name: _parse_statuses(work / f"eval_{name}") for name in RUNOUT_MODELS}
    return {"n": len(rows["start"]) or len(rows["sft"]) or None, "models": models, "baselines": baselines,
            "answers": answers,
            "paired": paired, "demonstrations": examples_seen(work / "sft"),
            "demonstrations_available": available.get("demonstrations"), "dpo_pairs": examples_seen(work / "dpo"),
            "dpo_pairs_available": available.get("pairs"), **timing(work), "machine": machine()}


def runout_table(result: dict) -> str:
    """The pilot's table as printed: each model and baseline on the same starts, then the paired tests."""
    from poolbench_data.report.games import format_paired, format_runout

    summary = {**{n: s for n, s in result["models"].items() if s}, **result["baselines"]}
    title = f"Run-out pilot: {result['n']} starts of the evaluation seed"
    return format_runout(summary, title) + "\n\n" + format_paired(list(result["paired"].values()), "run-out")
