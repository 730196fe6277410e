"""Every entry point's parser, walked (issue 22 item 11): each flag that takes a value is given a wrong one (a
wrong type, a choice that is not one, and for the project's own settings a value out of range, an empty
string and a path that does not exist), and the run must end in one line naming the flag, exit 2, no
traceback, nothing written, before any work starts. "Work" is caught where it would begin (a simulation, a
worker pool, an engine or server client, a trainer, a loop stage): a wrong value that reaches it fails here
unless the value is a documented valid one (VALID).

New commands, scripts and flags are covered as they are added: the parsers are read from the entry points
themselves. The project's own entry points parse a frozen dataclass through poolbench_data.config (the parser
keeps it as `config_class`); the TRL scripts parse TRL's dataclasses with TrlParser."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import pytest

from entry_parsers import OUTSIDE, REPO, load_script, poolbench_parsers, script_parser

SCRIPTS = sorted(str(p.relative_to(REPO)) for d in ("builders", "benchmarks", "analysis")
                 for p in (REPO / d).glob("*.py") if str(p.relative_to(REPO)) not in OUTSIDE)
TRAINING = ["training/sft.py", "training/dpo.py", "training/grpo.py"]

# What each of the project's own text flags holds, and so which values are wrong for it (KIND_VALUES). A new
# text flag must be added here: the walk fails on a flag it cannot classify.
KINDS = {
    "input": ["--eval_dir", "--pilot_json", "--baselines_json", "--trainer_state", "--responses", "--dataset_dir", "--tool_eval_dir",
              "--shards_dir", "--sft_recipe", "--dpo_recipe",
              "--tools_sft_recipe", "--tools_dpo_recipe", "--grpo_recipe", "--tool_chat_template", "--spread_from",
              "--runout_sft_recipe", "--position_dpo_recipe", "--runout_tools_sft_recipe", "--position_tools_dpo_recipe"],
    "model": ["--model", "--free_text_model"],  # a folder, or a Hub id (owner/name)
    "output": ["--out", "--output_dir", "--output_path", "--work_dir", "--results_json", "--eval_results"],
    "names": ["--players", "--baselines", "--categories", "--sources", "--tool_sources", "--stages", "--decimals",
              "--split", "--track", "--after_model", "--executor", "--player", "--shard", "--board", "--tool_speeds",
              "--tool_demo_order", "--tool_demo_speeds", "--reward_levels", "--episodes_games", "--episodes_players",
              "--position_continuation", "--game", "--game_action", "--game_reward"],
    "name": ["--name"],
    "url": ["--base_url"],
    "host": ["--host"],
    "ray": ["--ray_address"],
    "repo": ["--repo_id", "--eval_results_dataset"],
    "model_args": ["--model_args", "--eval_model_args", "--sample_model_args"],
    "script_args": ["--extra_sft_data_args", "--extra_sft_args", "--extra_pairs_args", "--extra_dpo_args", "--extra_grpo_args"],
    "id_prefix": ["--test_id_prefix"],
}
KIND_OF = {flag: kind for kind, flags in KINDS.items() for flag in flags}
KIND_VALUES = {
    "input": ["", "{missing}"], "model": ["{missing}"], "output": ["", "{file}/x"], "names": ["", "zz_unknown"],
    "name": [""], "url": ["", "not a url"], "host": ["", "not a host"], "ray": ["zz:not-an-address"], "repo": ["", "a/b/c"],
    "model_args": ["zz"], "script_args": ["--zz_no_such_flag 1"], "id_prefix": ["zz"],
}
# Valid although they look wrong: (entry point, flag, value) -> why.
VALID = {
    **{(e, f, ""): "'' is the documented default" for e, f in [
        ("training/loop.py", "--work_dir"), ("training/loop.py", "--stages"), ("training/loop.py", "--results_json"),
        ("training/loop.py", "--tool_demo_order"), ("training/loop.py", "--tool_demo_speeds"),
        ("training/loop.py", "--tool_sources"), ("training/loop.py", "--game"), ("builders/build_sft.py", "--game"),
        ("poolbench eval", "--categories"), ("poolbench eval", "--output_path"),
        ("poolbench eval", "--dataset_dir"), ("poolbench eval", "--responses"), ("poolbench eval", "--eval_results"),
        ("poolbench score", "--out"), ("poolbench compare", "--out"),
        ("poolbench rounding", "--out"), ("poolbench baseline", "--out"), ("builders/build_dataset.py", "--shard"),
        ("builders/build_pairs.py", "--tool_eval_dir"),
        ("training/grpo.py", "--spread_from"),
        ("poolbench figures", "--eval_dir"),
        ("poolbench figures", "--board"), ("poolbench figures", "--trainer_state"),
        ("poolbench figures", "--baselines_json")]},
    ("builders/build_dataset.py", "--episodes_games", ""): "'' builds no episodes config",
}


class WorkStarted(BaseException):
    """A run got past its checks: where work would begin."""


def _entry_points() -> dict:
    """label -> (main(argv) -> int, the parser, the names of the project's own settings)."""
    from poolbench_data.cli import COMMANDS
    from poolbench_data.cli import main as cli_main

    subs = poolbench_parsers()
    out = {f"poolbench {c}": ((lambda argv, c=c: cli_main([c, *argv])), subs[c], None) for c in COMMANDS}
    for rel in [*SCRIPTS, "training/loop.py"]:
        out[rel] = (load_script(rel).main, script_parser(rel), None)
    for rel in TRAINING:
        module = load_script(rel)
        parser = script_parser(rel)
        own = {f.name for f in dataclasses.fields(parser.dataclass_types[0])} - {
            f.name for f in dataclasses.fields(__import__("trl").ScriptArguments)}

        def main(argv, module=module):
            from poolbench_data.finetune.common import command_line

            return command_line(lambda: module.main(argv))

        out[rel] = (main, parser, own)
    return out


def _flags(parser, own):
    for a in parser._actions:
        if not a.option_strings or a.nargs == 0 or isinstance(a, argparse._HelpAction) or a.dest == "config":
            continue
        yield a, (own is None or a.dest in own)


def _wrong_type(action) -> tuple[str, str] | None:
    """(the kind of value a flag takes, a value of the wrong kind) for flags whose parser checks the kind."""
    if action.choices:
        return "choice", "zz_not_a_choice"
    if action.type in (int, float):
        return action.type.__name__, "abc"
    if getattr(action.type, "__name__", "") == "string_to_bool":
        return "bool", "maybe"
    return None


def _cases():
    cases, theirs = [], set()
    for label, (main, parser, own) in ENTRY.items():
        for action, ours in _flags(parser, own):
            flag = next(o for o in action.option_strings if o.startswith("--"))
            wrong = _wrong_type(action)
            # TRL's and transformers' own fields are checked by their parser: one case a script and kind of value
            # shows that the script reports that parser's refusal in one line.
            if wrong and (ours or (label, wrong[0]) not in theirs):
                cases.append((label, flag, wrong[1]))
                theirs |= set() if ours else {(label, wrong[0])}
            if not ours or label.startswith(("benchmarks/", "analysis/")) or action.choices:
                continue  # range and path checks of TRL's own fields and of measurement scripts are theirs
            if action.type is int:
                cases.append((label, flag, "-5"))
            elif action.type is float:
                cases += [(label, flag, "nan"), (label, flag, "-1")]
            elif action.type in (None, str):
                assert flag in KIND_OF, f"{label} {flag}: classify it in KINDS"
                cases += [(label, flag, v) for v in KIND_VALUES[KIND_OF[flag]]]
    return cases


ENTRY = _entry_points()
CASES = _cases()


@pytest.fixture(scope="module")
def inputs(small_dataset, two_shards, tmp_path_factory) -> dict[str, Path]:
    """A small dataset folder (and a copy with a model's answers on its train boards, what build_pairs reads), two
    shards of one, and an evaluation's traces: what the entry points read."""
    from conftest import SMALL_DATASET, copy_of

    from poolbench_data.boards.generate import generate
    from poolbench_data.hub.update import replace_rows
    from poolbench_data.llm.player import EvalSettings, evaluate_model, llm_trace_rows
    from poolbench_data.llm.replay import ReplayBackend

    root = tmp_path_factory.mktemp("inputs")
    settings = EvalSettings(model="m", backend="replay")
    recs, _ = evaluate_model(generate(2), ReplayBackend([["no idea"], ["no idea"]]), settings, player="m",
                             progress=False)
    traces = root / "llm_traces.jsonl"
    traces.write_text("".join(json.dumps(r) + "\n" for r in llm_trace_rows(recs, {}, settings)))
    answered = copy_of(small_dataset, root)
    train = generate(SMALL_DATASET["train_n"], SMALL_DATASET["train_seed"])
    recs, _ = evaluate_model(train, ReplayBackend([["no idea"]] * len(train)), settings, player="m", progress=False)
    replace_rows(answered, "traces", "train", llm_trace_rows(recs, {}, settings), drop=lambda r: False)
    return {"dataset": small_dataset, "answered": answered, "parts": two_shards, "traces": traces}


def _base(label: str, inputs: dict, tmp: Path) -> tuple[list[str], list[str]]:
    """(positional arguments, flags) that make a run of `label` valid but for the flag under test."""
    t = str(inputs["traces"])
    data = str(inputs["dataset"])
    return {
        "poolbench score": ([t], []),
        "poolbench compare": ([t, t], []),
        "poolbench figures": ([], ["--pilot_json", str(REPO / "docs/results/tool_track_smollm2_135m_cpu.json"),
                                   "--out", str(tmp / "figures")]),
        "builders/build_dataset.py": ([], ["--output_dir", str(tmp / "o"), "--eval_n", "1", "--train_n", "1"]),
        "builders/build_sft.py": ([], ["--dataset_dir", data]),
        "builders/build_pairs.py": ([], ["--dataset_dir", str(inputs["answered"])]),
        "builders/merge_shards.py": ([], ["--shards_dir", str(inputs["parts"]), "--output_dir", str(tmp / "m")]),
        "training/loop.py": ([], ["--work_dir", str(tmp / "w")]),
        "benchmarks/bench_suite.py": ([], ["--commits", "HEAD", "--json", str(tmp / "suite.json")]),
        "training/sft.py": ([], ["--config", str(REPO / "training/recipes/sft-smollm2-135m-cpu.yaml"),
                                 "--dataset_name", data, "--output_dir", str(tmp / "o")]),
        "training/dpo.py": ([], ["--config", str(REPO / "training/recipes/dpo-smollm2-135m-cpu.yaml"),
                                 "--dataset_name", data, "--output_dir", str(tmp / "o")]),
        "training/grpo.py": ([], ["--config", str(REPO / "training/recipes/grpo-tools-smollm2-135m-cpu.yaml"),
                                  "--model_name_or_path", "embedded", "--dataset_name", data, "--tool_chat_template",
                                  str(REPO / "training/templates/smollm2-chatml-tools.jinja"),
                                  "--output_dir", str(tmp / "o")]),
    }.get(label, ([], []))


class _NoInput:
    def readline(self, *a):
        raise WorkStarted()

    read = readline
    __iter__ = readline


@pytest.fixture
def no_work(monkeypatch, tmp_path, inputs):
    """Work raises WorkStarted where it would begin; the run happens in an empty folder of its own."""
    import transformers

    from poolbench_data.core import physics
    from poolbench_data.hub import update
    from poolbench_data.llm import openai_backend, vllm_backend
    from poolbench_data.players import pool
    from poolbench_data.finetune import loop

    def started(*a, **k):
        raise WorkStarted()

    for target, name in [(physics, "_run"), (update, "write_config"), (pool, "imap_bounded"), (pool, "imap_ray"),
                         (loop, "_run"), (vllm_backend.VLLMBackend, "__init__"), (openai_backend.OpenAIBackend, "__init__"),
                         (transformers.Trainer, "__init__")]:
        monkeypatch.setattr(target, name, started)
    monkeypatch.setattr(load_script("benchmarks/bench_suite.py"), "time_commit", started)  # a clone and the suite
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "stdin", _NoInput())
    (tmp_path / "file").write_text("a file, not a folder\n")
    return cwd


def test_every_entry_point_is_walked():
    assert {"poolbench eval", "poolbench play", "builders/build_dataset.py", "training/loop.py",
            "training/dpo.py", "benchmarks/bench_training.py", "analysis/choice_rules.py"} <= set(ENTRY)
    assert {label for label, _, _ in CASES} == set(ENTRY)
    for label in TRAINING:  # TRL's and transformers' fields: one case of each kind (int, float, bool, choice)
        _, parser, own = ENTRY[label]
        theirs = {o for a, ours in _flags(parser, own) if not ours for o in a.option_strings}
        assert sorted(v for lab, f, v in CASES if lab == label and f in theirs) == ["abc", "abc", "maybe",
                                                                                    "zz_not_a_choice"], label
    assert not set(VALID) - set(CASES), "a VALID entry the walk no longer makes"


def test_every_own_entry_point_reads_a_frozen_dataclass_with_help_on_each_field():
    """One configuration system: each subcommand, builder, benchmark, analysis script and the loop has a parser
    made from a frozen dataclass, every argument (but --config and --help) one of its fields, each with help."""
    own = [label for label in ENTRY if label not in TRAINING]
    assert len(own) == len(ENTRY) - len(TRAINING) >= 20
    for label in own:
        parser = ENTRY[label][1]
        cls = parser.config_class
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, label
        fields = {f.name: f for f in dataclasses.fields(cls)}
        dests = {a.dest for a in parser._actions} - {"help", "config"}
        assert dests == set(fields), (label, dests ^ set(fields))
        assert all(f.metadata.get("help") for f in fields.values()), (label, [n for n, f in fields.items()
                                                                              if not f.metadata.get("help")])


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


@pytest.mark.parametrize("label, flag, value", CASES, ids=lambda v: str(v)[:40])
def test_a_wrong_value_is_one_line_and_exit_2(label, flag, value, no_work, inputs, tmp_path, capsys):
    main = ENTRY[label][0]
    positional, base = _base(label, inputs, tmp_path)
    given = value.format(missing=tmp_path / "missing" / "x", file=tmp_path / "file")
    before = _files(tmp_path)
    try:
        code = main([*positional, *base, flag, given])
    except SystemExit as e:
        code = e.code
    except WorkStarted:
        assert (label, flag, value) in VALID, f"{label} {flag} {given!r}: accepted; the run got to its work"
        return
    err = capsys.readouterr().err.strip()
    if (label, flag, value) in VALID:  # accepted: a run that ends before any work ends well
        assert code in (0, None) and "error" not in err.lower(), f"{label} {flag} {given!r}: exit {code}; {err[-500:]}"
        return
    assert code == 2, f"{label} {flag} {given!r}: exit {code}; stderr: {err[-500:]}"
    last = err.splitlines()[-1] if err else ""
    assert last.startswith("error: ") and "Traceback" not in err, f"{label} {flag} {given!r}: {err[-800:]}"
    assert flag in last or flag.lstrip("-") in last, f"{label} {flag} {given!r}: the line names no flag: {last}"
    assert _files(tmp_path) == before, f"{label} {flag} {given!r} wrote {sorted(_files(tmp_path) - before)}"
