import json
import math

import pytest

from poolbench_data.core.records import InvalidScenario, Scenario


def _json(positions):
    cue = positions.pop("cue", None)
    row = {"id": "bad", "category": "open", "seed": 1,
           "balls": [{"id": k, "x": x, "y": y} for k, (x, y) in positions.items()]}
    if cue is not None:
        row["cue_ball"] = {"x": cue[0], "y": cue[1]}
    return json.dumps(row)


OK = {"cue": (0.5, 0.3), "1": (0.7, 1.0), "8": (0.3, 1.5)}


@pytest.mark.parametrize("change, ball, words", [
    ({"9": (0.71, 1.01)}, "'1' and '9'", "overlap"),
    ({"9": (1.2, 1.0)}, "'9'", "off the cloth"),
    ({"9": (0.01, 1.0)}, "'9'", "off the cloth"),
    ({"9": (0.02, 0.02)}, "'9'", "off the cloth"),
    ({"9": (0.03, 0.03)}, "'9'", "mouth of pocket lb"),
    ({"9": (1.0368, 2.1036)}, "'9'", "mouth of pocket rt"),
    ({"16": (0.5, 1.0)}, "'16'", "unknown ball id"),
    ({"9": (math.nan, 1.0)}, "'9'", "not finite"),
    ({"9": (0.5, math.inf)}, "'9'", "not finite"),
    ({"9": ("0.5", 1.0)}, "'9'", "not a number"),
])
def test_bad_positions_are_rejected_naming_the_ball(change, ball, words):
    with pytest.raises(InvalidScenario) as e:
        Scenario.create("bad", "open", 0, {**OK, **change})
    assert ball in str(e.value) and words in str(e.value)


def test_bad_scenario_json_is_rejected_with_a_clear_message():
    with pytest.raises(InvalidScenario, match="missing cue ball"):
        Scenario.from_json(_json({"1": (0.7, 1.0)}))
    with pytest.raises(InvalidScenario, match="does not parse"):
        Scenario.from_json("{not json")
    with pytest.raises(InvalidScenario, match="'1' appears twice"):
        Scenario.from_json(json.dumps({"id": "x", "category": "open", "seed": 0, "cue_ball": {"x": 0.5, "y": 0.3},
                                       "balls": [{"id": "1", "x": 0.7, "y": 1.0}, {"id": "1", "x": 0.2, "y": 1.0}]}))
    # NaN survives JSON (Python writes it as NaN) and is still caught.
    with pytest.raises(InvalidScenario, match="'1' coordinate x=nan is not finite"):
        Scenario.from_json(_json({"cue": (0.5, 0.3), "1": (math.nan, 1.0)}))
    with pytest.raises(InvalidScenario, match="unknown category"):
        Scenario.create("x", "trick-shot", 0, OK)


def test_missing_cue_and_empty_table():
    with pytest.raises(InvalidScenario, match="missing cue ball"):
        Scenario.create("x", "open", 0, {"1": (0.5, 0.5)})
    with pytest.raises(InvalidScenario, match="no object balls"):
        Scenario.create("x", "open", 0, {"cue": (0.5, 0.5)})


def test_scenario_round_trips_through_json_and_rows():
    s = Scenario.create("x", "sparse", 7, {"8": (0.3, 1.5), "cue": (0.5, 0.3), "1": (0.7, 1.0)})
    assert [b.id for b in s.balls] == ["cue", "1", "8"]  # canonical order
    assert Scenario.from_json(s.to_json()) == s
    assert Scenario.from_row(s.to_row()) == s
