"""`poolbench figures` against its inputs as a careless or hostile hand gives them: every JSON input (an eval
folder's summary.json and llm_traces.jsonl, a pilot's results, a trainer_state.json) with each key missing,
each value of a wrong type, and the file cut short. Each is one line naming the flag and the file, exit 2, and
no --out folder; nothing is drawn before every input is read (report/figure_inputs.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from poolbench_data.cli import main

SUMMARY = {"summary": {"m": {"overall": {m: {"k": 1, "n": 2} for m in
                                          ("legal_contact", "own_potted", "clean_pot", "foul")}}}}
TRACE = {"scenario_id": "pb0-000000", "player": "m", "action": {"phi": 120.0, "V0": 6.0}}
PILOT = {"n": 10, "sft": {"legal_contact": 6, "own_potted": 4, "clean_pot": 2}}
STATE = {"log_history": [{"step": 1, "loss": 0.8}]}
REPO = Path(__file__).resolve().parents[1]


def _paths(value, path=()):
    """Every path into a JSON value, the root first."""
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*path, i))


def _wrong(value) -> list:
    """Values of the wrong type (or out of range) for a slot holding `value`."""
    if isinstance(value, bool):
        return ["x", 1]
    if isinstance(value, int):
        return ["x", [1, 2], {"a": 1}, None, True, 1.5, -1]
    if isinstance(value, float):
        return ["x", [1, 2], {"a": 1}, None, True]
    if isinstance(value, str):
        return [1, [1, 2], {"a": 1}, None, True]
    if isinstance(value, dict):
        return ["x", [1, 2], 1, None, {}]
    return ["x", {"a": 1}, 1, None, []]


def _set(doc, path, value=None, delete=False):
    doc = copy.deepcopy(doc)
    if not path:
        return value
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


def _mutations(name: str, doc) -> list:
    """(id, name, mutated document) for each key deleted and each value replaced by a wrong one."""
    out = []
    for path in _paths(doc):
        where = "/".join(map(str, path)) or "root"
        if path and isinstance(path[-1], str):
            out.append((f"{name}:{where}:missing", name, _set(doc, path, delete=True)))
        value = doc
        for key in path:
            value = value[key]
        out += [(f"{name}:{where}={json.dumps(w)}", name, _set(doc, path, w)) for w in _wrong(value)]
    return out


# A trace row without an action (or with a null one) is an answer that never parsed: no board pair, not a mistake.
ACCEPTED = {"llm_traces:action:missing", "llm_traces:action=null", "llm_traces:root={}"}
CASES = [c for c in (_mutations("summary", SUMMARY) + _mutations("llm_traces", TRACE) + _mutations("pilot", PILOT)
                     + _mutations("state", STATE)) if c[0] not in ACCEPTED]


def _inputs(tmp_path: Path, **texts: str) -> tuple[list[str], dict[str, Path]]:
    """Good inputs, with the files named in `texts` replaced by that text: (figures' arguments, file paths)."""
    eval_dir = tmp_path / "eval"
    eval_dir.mkdir(exist_ok=True)
    files = {"summary": eval_dir / "summary.json", "llm_traces": eval_dir / "llm_traces.jsonl",
             "pilot": tmp_path / "pilot.json", "state": tmp_path / "trainer_state.json"}
    good = {"summary": json.dumps(SUMMARY), "llm_traces": json.dumps(TRACE) + "\n", "pilot": json.dumps(PILOT),
            "state": json.dumps(STATE)}
    for name, path in files.items():
        path.write_text(texts.get(name, good[name]))
    args = ["figures", "--eval_dir", str(eval_dir), "--pilot_json", str(files["pilot"]), "--trainer_state",
            f"sft={files['state']}", "--out", str(tmp_path / "figs")]
    return args, files


FLAGS = {"summary": "--eval_dir", "llm_traces": "--eval_dir", "pilot": "--pilot_json", "state": "--trainer_state"}


def _refused(tmp_path, capsys, args, files, name):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert FLAGS[name] in err and (files[name].name in err), err
    assert "Traceback" not in err
    assert not (tmp_path / "figs").exists()  # nothing drawn, no folder made
    return err


@pytest.mark.parametrize("case, name, doc", CASES, ids=[c[0] for c in CASES])
def test_a_missing_key_or_a_wrong_type_is_one_line_naming_the_flag_and_file(tmp_path, capsys, case, name, doc):
    text = json.dumps(doc) + ("\n" if name == "llm_traces" else "")
    args, files = _inputs(tmp_path, **{name: text})
    _refused(tmp_path, capsys, args, files, name)


@pytest.mark.parametrize("name", list(FLAGS))
def test_a_file_cut_short_is_one_line_naming_the_flag_and_file(tmp_path, capsys, name):
    whole = {"summary": json.dumps(SUMMARY), "llm_traces": json.dumps(TRACE), "pilot": json.dumps(PILOT),
             "state": json.dumps(STATE)}[name]
    for cut in sorted({1, len(whole) // 3, len(whole) // 2, len(whole) - 1}):
        args, files = _inputs(tmp_path, **{name: whole[:cut]})
        err = _refused(tmp_path, capsys, args, files, name)
        assert "JSON" in err, err


@pytest.mark.parametrize("text, words", [("", "not JSON"), ("[" * 100_000, "not JSON"), ("\xff\xfe{", "not JSON"),
                                         ("NaN", "")])
def test_corrupt_json_names_the_file_and_flag(tmp_path, capsys, text, words):
    path = tmp_path / "pilot.json"
    path.write_bytes(text.encode("latin-1"))
    assert main(["figures", "--pilot_json", str(path), "--out", str(tmp_path / "figs")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--pilot_json" in err and str(path) in err and words in err, err
    assert not (tmp_path / "figs").exists()


def test_the_issue_s_cases(tmp_path, capsys):
    """The reported ones: a trainer_state whose log_history is text, one that is {}, a summary.json without its
    summary, a pilot {"a": 1}, a corrupt JSON."""
    for name, text, words in (("state", '{"log_history": "x"}', '"log_history" is text'),
                              ("state", "{}", 'no "log_history"'),
                              ("state", '{"log_history": [{"step": 1, "grad_norm": 2.0}]}', "no training loss"),
                              ("summary", '{"decomposition": {}}', 'no "summary"'),
                              ("pilot", '{"a": 1}', 'no "n"'),
                              ("pilot", '{"n": 10, "a": 1}', "none of the players"),
                              ("pilot", "{", "is not JSON (Expecting property name")):
        args, files = _inputs(tmp_path, **{name: text})
        assert words in _refused(tmp_path, capsys, args, files, name)


def test_every_input_is_checked_before_anything_is_drawn(tmp_path, capsys):
    """A good --eval_dir beside a garbage --pilot_json: no table1.png, no board pair, no folder."""
    args, files = _inputs(tmp_path, pilot="garbage")
    _refused(tmp_path, capsys, args, files, "pilot")
    out = tmp_path / "kept"
    out.mkdir()
    (out / "table1.png").write_bytes(b"an earlier figure")
    args[args.index("--out") + 1] = str(out)
    assert main(args) == 2
    assert (out / "table1.png").read_bytes() == b"an earlier figure"  # not redrawn before the error


def test_trainer_state_flag_mistakes(tmp_path, capsys):
    state = tmp_path / "trainer_state.json"
    state.write_text(json.dumps(STATE))
    for value, words in ((f"{state}", "give label=PATH"), (f"a={state},a={state}", "given twice"),
                         (f"a={tmp_path / 'none.json'}", "no such file")):
        assert main(["figures", "--trainer_state", value, "--out", str(tmp_path / "figs")]) == 2
        err = capsys.readouterr().err.strip()
        assert words in err and "--trainer_state" in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "figs").exists()


@pytest.mark.slow
def test_the_inputs_a_real_run_writes_are_drawn(tmp_path, capsys):
    """A real `poolbench eval` folder (the replay backend on two boards), the repository's pilot JSONs and a
    trainer_state.json shaped as TRL writes it: every figure drawn."""
    from poolbench_data.boards.generate import generate
    from poolbench_data.players import oracle
    from poolbench_data.protocol.prompts import format_action
    from poolbench_data.report.figure_inputs import read_pilot

    pilots = [p for kind in ("tool_track", "tool_dpo", "tool_grpo", "tool_report")
              for p in sorted((REPO / "docs" / "results").glob(f"{kind}_*.json"))]
    assert len(pilots) >= 10
    for path in pilots:
        read_pilot(str(path))  # every tool-track pilot the repository holds passes
    boards = generate(2)
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"player": "m", "player_kind": "llm", "scenario_id": b.id, "sample": 0,
                                           "raw_response": format_action(oracle(b).shot, b), "temperature": 0.2})
                               + "\n" for b in boards))
    run = tmp_path / "run"
    assert main(["eval", "--backend", "replay", "--responses", str(answers), "--n", "2", "--baselines", "random",
                 "--boards", "0", "--quiet", "--out", str(run)]) == 0
    state = tmp_path / "trainer_state.json"
    state.write_text(json.dumps({"global_step": 2, "log_history": [
        {"epoch": 0.5, "grad_norm": 3.1, "learning_rate": 2e-5, "loss": 1.25, "step": 1},
        {"epoch": 1.0, "grad_norm": 2.7, "learning_rate": 1e-5, "loss": 0.98, "step": 2},
        {"epoch": 1.0, "step": 2, "total_flos": 1.0, "train_loss": 1.1, "train_runtime": 3.0}]}))
    out = tmp_path / "figs"
    capsys.readouterr()
    assert main(["figures", "--eval_dir", str(run), "--pilot_json",
                 str(REPO / "docs" / "results" / "tool_track_smollm2_135m_cpu.json"), "--trainer_state",
                 f"sft={state}", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["before_after.png", "board_pair.png", "table1.png",
                                                     "training_curves.png"]
