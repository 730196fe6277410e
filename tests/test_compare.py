import pytest

from poolbench_data.report.compare import compare, format_comparison


def _row(sid, contact, pot, parse="ok"):
    return {"scenario_id": sid, "sample": 0, "legal_contact": contact, "own_potted": pot, "clean_pot": pot,
            "foul": not contact, "parse_status": parse}


def test_paired_counts_and_mcnemar():
    before = [_row(f"s{i}", False, False, "no-json") for i in range(10)]
    after = [_row(f"s{i}", i < 8, i < 2) for i in range(10)]
    c = compare(before, after)
    assert c["legal_contact"]["only_after"] == 8 and c["legal_contact"]["only_before"] == 0
    assert c["legal_contact"]["mcnemar_p"] == pytest.approx(2 / 2**8)
    assert c["own_potted"]["mcnemar_p"] == pytest.approx(0.5)
    assert c["parse_ok"] == {"before": 0, "after": 10}
    text = format_comparison(c)
    assert "Contact" in text and "0.008" in text and "0/10 -> 10/10" in text


def test_mismatched_shots_are_refused():
    with pytest.raises(ValueError, match="same --seed"):
        compare([_row("a", 1, 0)], [_row("b", 1, 0)])


def test_same_shot_on_different_boards_or_twice_is_refused():
    with pytest.raises(ValueError, match="different boards for scenario 'a'"):
        compare([{**_row("a", 1, 0), "category": "open"}], [{**_row("a", 1, 0), "category": "sparse"}])
    with pytest.raises(ValueError, match="two rows for scenario 'a' sample 0"):
        compare([_row("a", 1, 0), _row("a", 0, 0)], [_row("a", 1, 0)])
