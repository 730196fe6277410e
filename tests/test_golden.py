"""Simulator drift fails here: saved traces must replay bit for bit.

JSON keeps floats exactly (shortest round-trip repr), so == is exact.
Regenerate with tests/fixtures/make_golden.py only on purpose.
"""

import json
from pathlib import Path

import pytest

from poolbench_data.core.physics import simulate
from poolbench_data.core.records import Scenario, Shot

GOLDEN = json.loads((Path(__file__).parent / "fixtures" / "golden_traces.json").read_text())


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=lambda c: f"{c['scenario']['id']}-{c['label']}")
def test_golden_trace_replays_exactly(case):
    s = Scenario.from_row(case["scenario"])
    r = simulate(s, Shot.from_row(case["shot"]))
    assert r.status == case["status"]
    assert [e.to_row() for e in r.events] == case["events"]
    assert [list(p) for p in r.pocketed] == case["pocketed"]
    assert [list(p) for p in r.final_positions] == case["final_positions"]


def test_golden_set_is_not_trivial():
    assert len(GOLDEN["cases"]) >= 10
    assert any(c["pocketed"] for c in GOLDEN["cases"])
    assert sum(len(c["events"]) for c in GOLDEN["cases"]) > 100
