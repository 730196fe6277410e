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


# The baselines JSON is read by the reader of summary.json (read_summary_file): each key missing and the root's
# wrong types are enough to show it names its own flag and file.
BASELINES_CASES = [c for c in _mutations("summary", SUMMARY) if c[0].endswith(":missing") or ":root=" in c[0]]


@pytest.mark.parametrize("case, name, doc", BASELINES_CASES, ids=[c[0] for c in BASELINES_CASES])
def test_a_broken_baselines_json_is_one_line_naming_the_flag_and_file(tmp_path, capsys, case, name, doc):
    path = tmp_path / "base.json"
    path.write_text(json.dumps(doc))
    assert main(["figures", "--baselines_json", str(path), "--out", str(tmp_path / "figs")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"--baselines_json {path}" in err and "poolbench baseline" in err, err
    assert not (tmp_path / "figs").exists()


def test_baselines_beside_a_pilot_must_be_of_its_boards(tmp_path, capsys):
    """The Oracle's ceiling comes from --baselines_json only where it played the pilot's boards: the same n, and
    every baseline both files hold with the same counts; else one line naming both flags, nothing drawn."""
    from poolbench_data.report.figure_inputs import read_inputs

    base = REPO / "docs/results/baselines_200_boards.json"
    pilot = REPO / "docs/results/tool_track_smollm2_135m_cpu.json"
    inputs = read_inputs(pilot_json=str(pilot), baselines_json=str(base))
    oracle = json.loads(base.read_text())["summary"]["oracle"]["overall"]
    assert inputs.ceiling == {m: (oracle[m]["k"], 200) for m in ("legal_contact", "own_potted", "clean_pot")}
    assert sorted(inputs.summary) == ["heuristic", "heuristic-centre", "oracle", "oracle-kick", "random"]
    doc = json.loads(pilot.read_text())
    other = tmp_path / "pilot.json"
    for changed, words in (({"random": {**doc["random"], "clean_pot": 11}}, "random's clean_pot is 10 of 200 in one, "
                                                                              "11 of 200"),
                           ({"n": 400, "random": None, "heuristic_centre": None, "heuristic_potpoint": None},
                            f"its Oracle played 200 boards and the pilot of --pilot_json {other} 400")):
        other.write_text(json.dumps({**doc, **changed}))
        assert main(["figures", "--pilot_json", str(other), "--baselines_json", str(base), "--out",
                     str(tmp_path / "figs")]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and words in err and "--baselines_json" in err, err
        assert not (tmp_path / "figs").exists()
    # A pilot that played the Oracle itself draws its own ceiling.
    own = {**doc, "oracle": {"legal_contact": 1, "own_potted": 2, "clean_pot": 3}}
    other.write_text(json.dumps(own))
    assert read_inputs(pilot_json=str(other), baselines_json=str(base)).ceiling == {
        "legal_contact": (1, 200), "own_potted": (2, 200), "clean_pot": (3, 200)}


@pytest.mark.parametrize("args, words", [
    (["--eval_dir", "E", "--baselines_json", "B"], "--eval_dir and --baselines_json both draw table1.png"),
    (["--board", "pb0-x"], "--board 'pb0-x' is not a generated board's id"),
    (["--board", f"pb{2**63}-000001"], "is not a generated board's id"),
    (["--pilot_json", "P"], "\"after_model\" is 1, not text"),
    (["--pilot_json", "P2"], "\"demonstrations\" is \"400\", not a count (or null)"),
    (["--pilot_json", "P3"], "'oracle''s clean_pot is 300, not a count from 0 to n=10"),
])
def test_figure_flag_mistakes_are_one_line(tmp_path, capsys, args, words):
    files = {"E": tmp_path / "eval", "B": tmp_path / "b.json", "P": tmp_path / "p.json", "P2": tmp_path / "p2.json",
             "P3": tmp_path / "p3.json"}
    files["E"].mkdir()
    files["P"].write_text(json.dumps({**PILOT, "after_model": 1}))
    files["P2"].write_text(json.dumps({**PILOT, "demonstrations": "400"}))
    files["P3"].write_text(json.dumps({**PILOT, "oracle": {**PILOT["sft"], "clean_pot": 300}}))
    assert main(["figures", *[str(files.get(a, a)) for a in args], "--out", str(tmp_path / "figs")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err, err
    assert not (tmp_path / "figs").exists()


def test_a_model_is_named_by_itself_not_by_its_folder(tmp_path):
    """`poolbench eval` without --name names a model by its model card, a training run's merged/ by the run,
    never "merged"; a folder named for its model and a Hub id keep their names."""
    from poolbench_data.llm.model import model_name

    run = tmp_path / "runs" / "sft"
    for folder in (run / "merged", run / "checkpoint-40", tmp_path / "SmolLM2-135M-Instruct"):
        folder.mkdir(parents=True)
        (folder / "config.json").write_text("{}")
    assert model_name(str(run / "merged")) == "sft"
    assert model_name(str(run / "checkpoint-40")) == "sft-checkpoint-40"
    (run / "README.md").write_text("---\nbase_model: HuggingFaceTB/SmolLM2-135M-Instruct\nmodel_name: smol-sft\n"
                                   "tags:\n- trl\n---\n\n# Model Card\n")
    assert model_name(str(run / "merged")) == "smol-sft"
    (run / "merged" / "README.md").write_text("---\nmodel_name: smol-tool-sft\n---\n")
    assert model_name(str(run / "merged")) == "smol-tool-sft"
    (run / "merged" / "README.md").write_text("---\nmodel_name: [not, a, name]\n---\n")  # a card without one
    assert model_name(str(run / "merged")) == "smol-sft"
    assert model_name(str(tmp_path / "SmolLM2-135M-Instruct")) == "SmolLM2-135M-Instruct"
    assert model_name("Qwen/Qwen2.5-7B-Instruct") == "Qwen2.5-7B-Instruct"


def test_the_loop_s_scaling_table_counts_its_own_boards_and_names_the_sft_count(tmp_path):
    """training/loop.py's table says the shots its counts are of (not 50 whatever --eval_n) and labels the final
    SFT model by the examples it saw."""
    from poolbench_data.boards.generate import generate
    from poolbench_data.llm.player import EvalSettings, evaluate_model, llm_trace_rows
    from poolbench_data.llm.replay import ReplayBackend
    from poolbench_data.players import oracle
    from poolbench_data.protocol.prompts import format_action
    from poolbench_data.report.pilot import BATCH_RECORD, scaling_table

    boards = generate(3)
    settings = EvalSettings(model="m", backend="replay")
    work = tmp_path / "work"
    for name, texts in (("before", ["no idea"] * 3), ("sft", [format_action(oracle(s).shot, s) for s in boards])):
        recs, _ = evaluate_model(boards, ReplayBackend([[t] for t in texts]), settings, player=name, progress=False)
        (work / name).mkdir(parents=True)
        (work / name / "llm_traces.jsonl").write_text("".join(json.dumps(r) + "\n"
                                                              for r in llm_trace_rows(recs, {}, settings)))
    (work / "sft" / "trainer_state.json").write_text(json.dumps({"global_step": 4}))
    (work / "sft" / BATCH_RECORD).write_text(json.dumps({"examples_per_step": 4}))
    table = scaling_table(work).splitlines()
    assert table[0] == "Supervised budget and DPO on the held-out boards (counts of 3)"
    assert [row[:22].strip() for row in table[3:]] == ["base (0 examples)", "SFT (16 examples)"]
