"""Model-side report sections: the target-vs-angle decomposition and the
parse-status counts."""

from __future__ import annotations

from collections.abc import Sequence

from poolbench_data.core.records import Shot
from poolbench_data.players.diagnostics import fired, oracle_diagnostics
from poolbench_data.players.play import ShotRecord
from poolbench_data.report.stats import quantile


def decomposition(records: Sequence[ShotRecord], oracle_shots: dict[str, Shot]) -> dict:
    """Target-vs-angle decomposition (paper section 6.3) for one player: the
    traces' per-shot diagnostics, counted over the shots that were fired."""
    shots = [(r, oracle_diagnostics(r, oracle_shots.get(r.scenario_id))) for r in records if fired(r)]
    match = [r for r, d in shots if d["target_matches_oracle"]]
    errors = [abs(d["angle_error_deg"]) for _, d in shots if d["angle_error_deg"] is not None]
    return {
        "shots": len(records),
        "fired": len(shots),
        "target_matches_oracle": len(match),
        "median_abs_angle_error_deg": quantile(errors, 0.5) if errors else None,
        "within_1deg": sum(e <= 1.0 for e in errors),
        "within_5deg": sum(e <= 5.0 for e in errors),
        "contact_given_target_match": sum(r.metrics.legal_contact for r in match),
        "pot_given_target_match": sum(r.metrics.own_potted for r in match),
    }


def format_decomposition(rows: dict[str, dict]) -> str:
    head = (f"{'Player':24} {'fired':>6} {'target=Oracle':>13} {'med |dphi|':>10} {'<=1deg':>7} {'<=5deg':>7} "
            f"{'contact|match':>13} {'pot|match':>9}")
    lines = ["Target-vs-angle decomposition (against the Oracle's shot)", head, "-" * len(head)]
    for p, d in rows.items():
        med = f"{d['median_abs_angle_error_deg']:.2f}" if d["median_abs_angle_error_deg"] is not None else "-"
        lines.append(f"{p:24} {d['fired']:>3}/{d['shots']:<2} {d['target_matches_oracle']:>13} {med:>10} "
                     f"{d['within_1deg']:>7} {d['within_5deg']:>7} {d['contact_given_target_match']:>13} "
                     f"{d['pot_given_target_match']:>9}")
    return "\n".join(lines)


def parse_summary(records: Sequence[ShotRecord]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in records:
        out[r.parse_status] = out.get(r.parse_status, 0) + 1
    return dict(sorted(out.items()))
