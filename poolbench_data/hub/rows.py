"""Pure per-row functions: records in, dataset rows out."""

from __future__ import annotations

from poolbench_data.core.table import geometry
from poolbench_data.players.play import ScenarioRun
from poolbench_data.players.traces import trace_row

def scenario_row(run: ScenarioRun, base_seed: int, index: int) -> dict:
    from poolbench_data.protocol.prompts import PROMPT_VERSION, format_action, messages

    s = run.scenario
    oracle = next(r for r in run.records if r.player == "oracle")
    return {
        **s.to_row(),
        "base_seed": base_seed,
        "index": index,
        "table": geometry().to_row(),
        "prompt": messages(s),
        "prompt_version": PROMPT_VERSION,
        "oracle_shot": oracle.shot.to_row(),
        "oracle_action": format_action(oracle.shot, s),
        "oracle_pots": oracle.metrics.clean_pot,
        "oracle_how": oracle.how,
        "oracle_sims": oracle.sims,
        "straight_pottable": run.pottability.pottable,
        "pottable_how": run.pottability.how,
        "pottability": run.pottability.kind,
    }


def baseline_trace_rows(run: ScenarioRun) -> list[dict]:
    oracle = next((r.shot for r in run.records if r.player == "oracle"), None)
    return [trace_row(rec, oracle) for rec in run.records]
