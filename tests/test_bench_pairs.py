"""benchmarks/bench_pairs.py: the tool-speed labels timed at several worker counts, on threads made as the
tool-SFT model writes them."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("bench_pairs", REPO / "benchmarks" / "bench_pairs.py")
bench = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = bench  # the arguments dataclass is resolved through its module
spec.loader.exec_module(bench)


def test_a_thread_calls_the_first_listed_ball_and_answers_its_first_open_shot_at_the_model_speed():
    from poolbench_data.boards.generate import generate
    from poolbench_data.llm.tools import MAX_CALLS
    from poolbench_data.demos.tools import clear, listed_own
    from poolbench_data.protocol.prompts import PROMPT_VERSION

    made = 0
    for s in generate(8, base_seed=1):
        found = bench.thread_of({**s.to_row(), "prompt_version": PROMPT_VERSION})
        if found is None:
            continue
        thread, trace = found
        made += 1
        assert thread["calls"][0]["arguments"] == {"target_ball": listed_own(s)[0]}
        report = thread["calls"][0]["result"]
        assert clear(report) and report["calls_left"] == MAX_CALLS - 1
        shot = next(x for x in report["shots"] if x["open"])
        action = json.loads(thread["final_response"])
        assert action["cue_speed"] == bench.MODEL_SPEED
        assert action["aim_angle_deg"] == shot["potting_point_aim_angle_deg"]
        assert (trace["scenario_id"], trace["player"]) == (thread["scenario_id"], thread["player"])
    assert made > 0


@pytest.mark.slow
def test_the_table_says_each_count_labelled_the_same_pairs(capsys):
    assert bench.main(["--boards", "3", "--workers", "1,1"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    rows = [line.split() for line in lines[2:]]
    assert [r[0] for r in rows] == ["1", "1"] and all(r[-1] == "True" for r in rows)


def test_bad_counts_exit_2_before_any_simulation(capsys):
    for argv in (["--workers", "0"], ["--workers", "two"], ["--boards", "0"]):
        assert bench.main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("error: ") and err.split()[1] in argv
