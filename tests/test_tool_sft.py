"""Tool-use demonstrations (the `sft_tools` config) and their training contract.

The rows are built by the real builder (`builders/build_sft.py --tools`) from
boards the package generates and the Oracle plays; every check replays them
through the tool and the simulator. Training runs real TRL on the tiny model
with the repository's chat template (`training/templates/`).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from poolbench_data.boards.splits import SplitLeakError
from poolbench_data.core.records import Scenario, Shot
from poolbench_data.llm.player import conversations
from poolbench_data.llm.tools import MAX_CALLS, tool_calls, turn_result, with_tool_note
from poolbench_data.checks import demos as check_sft
from poolbench_data.players.baselines import ORACLE_SPEEDS
from poolbench_data.demos.tools import (NO_POT_SHARE, DemonstrationError, clear, played, tool_demo,
                                           tool_sft_rows, verify_tool_row)
from poolbench_data.protocol.parsing import parse_action
from poolbench_data.protocol.prompts import format_action

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = REPO / "training" / "templates" / "smollm2-chatml-tools.jinja"
RECIPE = REPO / "training" / "recipes" / "sft-tools-smollm2-135m-cpu.yaml"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"poolbench_{name.replace('/', '_')}", REPO / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """A dataset folder with 16 train boards and the sft_tools config, built by the real builder: the Oracle-first
    demonstrations at the Oracle's speeds, whose rows show every kind of call the tests below read."""
    from poolbench_data.hub.build import build_benchmark

    root = tmp_path_factory.mktemp("pbtools") / "poolbench"
    build_benchmark(root, eval_n=1, train_n=16, train_seed=3, players=("oracle",), progress=False)
    assert _load("builders/build_sft").main(["--dataset_dir", str(root), "--tools", "--tool_demo_order", "oracle",
                                             "--tool_demo_speeds", "8,10,12"]) == 0
    return root


@pytest.fixture(scope="module")
def scenario_rows(folder) -> list[dict]:
    from poolbench_data.hub.folder import read_rows

    return read_rows(folder, "scenarios", "train")


@pytest.fixture(scope="module")
def rows(folder) -> list[dict]:
    from datasets import load_dataset

    return list(load_dataset(str(folder), "sft_tools", split="train"))


@pytest.fixture(scope="module")
def listed_rows(scenario_rows) -> list[dict]:
    """The library's demonstrations of the train boards in the prompt's order (what `--tool_demo_order listed`
    writes)."""
    return tool_sft_rows(scenario_rows, "train", order="listed")


def board(scenario_rows, scenario_id) -> Scenario:
    return Scenario.from_row(next(s for s in scenario_rows if s["id"] == scenario_id))


# --- the rows ------------------------------------------------------------------------


def test_every_row_is_a_legal_pot_written_with_the_tools_aim(rows, scenario_rows):
    assert len(rows) >= 8  # most boards have a direct pot the tool's geometry finds
    for row in rows:
        s = board(scenario_rows, row["scenario_id"])
        verify_tool_row(row, s)  # the simulator agrees, replayed from the stored row; every calls_left as the eval's
        if row["demonstration"] == "at_cap":  # the action due at the cap, whatever the simulator makes of it
            continue
        msgs = row["messages"]
        # The conversation the evaluator sends with --tools, then the model's turns.
        assert [{"role": m["role"], "content": m["content"]} for m in msgs[:2]] == \
            with_tool_note(conversations([s]))[0]
        answered_call = tool_calls(msgs[-3]["content"])[0]["arguments"]
        result = json.loads(msgs[-2]["content"])
        call = {"name": "ghost_ball", "arguments": answered_call}
        assert clear(result) and result == turn_result(s, call, MAX_CALLS - row["calls"])
        # The call names the ball; the answer is one of the pockets its report shows open, at that shot's aim.
        assert answered_call == {"target_ball": row["target_ball"]}
        shot = parse_action(msgs[-1]["content"], s).shot
        reported = next(x for x in result["shots"] if x["pocket"] == shot.target_pocket)
        assert reported["open"] and shot.target_ball == answered_call["target_ball"]
        assert shot.phi == pytest.approx(reported["potting_point_aim_angle_deg"], abs=1e-9)
        assert (row["target_ball"], row["pocket"], row["cue_speed"]) == (shot.target_ball, shot.target_pocket,
                                                                         shot.V0)
        assert row["clean_pot"] and row["own_potted"] and not row["foul"] and row["split"] == "train"


def test_mistaken_first_calls_are_shown_not_trained(scenario_rows):
    seen = set()
    for s_row in scenario_rows:
        s = Scenario.from_row(s_row)
        oracle = Shot.from_row(s_row["oracle_shot"])
        for blocked, error, again in ((1.0, 0.0, 0.0), (1.0, 0.0, 1.0), (0.0, 1.0, 1.0)):
            demo = tool_demo(s, oracle, seed=0, blocked_share=blocked, error_share=error, again_share=again,
                             cap_share=0.0, no_pot_share=0.0)
            if demo is None or demo.kind == "direct":
                continue
            seen.add((demo.kind, len(demo.calls)))
            assert demo.context_calls == len(demo.calls) - 1 <= (2 if again and blocked else 1)
            assert len(demo.calls) <= MAX_CALLS and len(set(demo.calls)) == len(demo.calls)
            msgs = demo.messages()
            calls, answers = msgs[2:-1:2], [json.loads(m["content"]) for m in msgs[3:-1:2]]
            assert [c["context"] for c in calls] == [True] * demo.context_calls + [False]
            assert not msgs[-1]["context"]
            for answer in answers[:-1]:  # every mistaken call's report is not clear, the answered one is
                assert not clear(answer) and ("error" in answer) == (demo.kind == "after_error")
            assert clear(answers[-1])
    assert seen == {("after_blocked", 2), ("after_blocked", 3), ("after_error", 2)}


def test_at_the_cap_with_nothing_open_the_action_is_written_not_a_fourth_call(scenario_rows):
    from poolbench_data.llm.tools import tool_answer

    seen = kicks = 0
    for s_row in scenario_rows:
        s = Scenario.from_row(s_row)
        demo = tool_demo(s, Shot.from_row(s_row["oracle_shot"]), seed=0, blocked_share=1.0, again_share=1.0,
                         cap_share=1.0)
        if demo is None or demo.kind != "at_cap":
            continue
        seen += 1
        msgs = demo.messages()
        results = [json.loads(m["content"]) for m in msgs if m["role"] == "tool"]
        # every call shown, none trained, none open; the last result says no calls are left
        assert len(demo.calls) == demo.context_calls == MAX_CALLS and len(set(demo.calls)) == MAX_CALLS
        assert [r["calls_left"] for r in results] == list(range(MAX_CALLS - 1, -1, -1))
        assert not any(clear(r) for r in results)
        assert [m["context"] for m in msgs if m["role"] == "assistant"] == [True] * MAX_CALLS + [False]
        # the trained turn is an action with an aim a report showed: of the shots whose cue path is free the
        # smallest cut (else the last shown), or a report's kick; none of those at any Oracle speed plays better
        shot = parse_action(msgs[-1]["content"], s).shot
        options = [(ball, x) for (ball, _), r in zip(demo.calls, results) for x in r.get("shots", [])]
        assert all(pocket is None for _, pocket in demo.calls)
        detail = {(b, x["pocket"]): tool_answer(s, b, x["pocket"]) for b, x in options}
        free = [(x["cut_angle_deg"], k) for k, (b, x) in enumerate(options)
                if not detail[b, x["pocket"]]["cue_path_blocked_by"]]
        aims = [(b, x["pocket"], x["potting_point_aim_angle_deg"]) for b, x in [options[min(free)[1] if free else -1]]]
        aims += [(r["target_ball"], r["kick"]["pocket"], r["kick"]["aim_angle_deg"]) for r in results if r["kick"]]
        ball, pocket, _ = next(a for a in aims if a[:2] == (shot.target_ball, shot.target_pocket)
                               and shot.phi == pytest.approx(a[2], abs=1e-9))
        kicks += any(shot.phi == pytest.approx(r["kick"]["aim_angle_deg"], abs=1e-9) for r in results if r["kick"])
        got = played(s, msgs[-1]["content"])[1]
        for b, p, aim in aims:
            for v in ORACLE_SPEEDS:
                m = played(s, format_action(Shot(phi=aim, V0=v, target_ball=b, target_pocket=p), s))[1]
                assert (m.clean_pot, m.legal_contact, not m.foul) <= (got.clean_pot, got.legal_contact, not got.foul)
        want = {"pocket": pocket}
        row = demo.to_row("train")
        assert (row["target_ball"], row["pocket"], row["calls"]) == (ball, want["pocket"], MAX_CALLS)
        verify_tool_row(row, s)  # its recorded outcome, whatever it is, replays
    assert seen >= 3 and kicks >= 1


def test_same_seed_same_rows_and_the_seed_moves_the_mistakes(scenario_rows):
    a = tool_sft_rows(scenario_rows, "train", seed=0)
    assert tool_sft_rows(scenario_rows, "train", seed=0) == a
    b = tool_sft_rows(scenario_rows, "train", seed=1)
    assert [r["scenario_id"] for r in a] == [r["scenario_id"] for r in b]  # the boards do not depend on the seed
    # the pots do not either (a board without one: the own balls called, so the action there, may)
    pots_a, pots_b = ([r["messages"][-1] for r in rows if r["demonstration"] not in ("at_cap", "all_closed")]
                      for rows in (a, b))
    assert pots_a and pots_a == pots_b


def test_the_blocked_share_sets_how_many_demonstrations_call_again(folder, scenario_rows, capsys):
    from poolbench_data.demos.tools import RETRY_BLOCKED_SHARE

    build_sft = _load("builders/build_sft")
    assert build_sft.ScriptArguments().retry_blocked_share == RETRY_BLOCKED_SHARE  # one default
    kinds = {share: [r["demonstration"] for r in tool_sft_rows(scenario_rows, "train", blocked_share=share)]
             for share in (0.0, 1.0)}
    assert "after_blocked" not in kinds[0.0] and kinds[1.0].count("after_blocked") > 0
    assert len(kinds[0.0]) == len(kinds[1.0])  # the same boards, the same pots: only the calls before them move
    # at share 1 boards with a blocked own ball start with one: fewer demonstrations answer at once
    assert kinds[1.0].count("direct") < kinds[0.0].count("direct")
    for bad in ("1.5", "-0.1"):
        assert build_sft.main(["--dataset_dir", str(folder), "--tools", "--retry_blocked_share", bad]) == 2
        err = capsys.readouterr().err.strip()
        assert "--retry_blocked_share" in err and len(err.splitlines()) == 1


def test_listed_demonstrations_call_own_balls_in_the_prompts_order_until_one_is_open(scenario_rows):
    from poolbench_data.llm.tools import ball_report
    from poolbench_data.demos.tools import listed_demo, listed_own
    from poolbench_data.protocol.prompts import messages

    kinds = set()
    for s_row in scenario_rows:
        s = Scenario.from_row(s_row)
        prompt = messages(s)[-1]["content"]
        listed = listed_own(s)
        assert [prompt.index(f"Ball {b}:") for b in listed] == sorted(prompt.index(f"Ball {b}:") for b in listed)
        for error_share in (0.0, 1.0):
            demo = listed_demo(s, seed=0, error_share=error_share)
            assert demo is not None
            kinds.add(demo.kind)
            called = [ball for ball, _ in demo.calls[demo.context_calls:]]
            assert called == listed[:len(called)] and len(demo.calls) <= MAX_CALLS
            reports = [ball_report(s, b) for b in called]
            assert not any(r["open"] for r in reports[:-1])  # it calls on only past closed reports
            msgs = demo.messages()
            assert [m["context"] for m in msgs if m["role"] == "assistant"] == \
                [True] * demo.context_calls + [False] * (len(demo.calls) - demo.context_calls + 1)
            if demo.kind == "listed_open":
                assert reports[-1]["open"] and demo.shot.target_ball == called[-1]
                open_aims = {x["potting_point_aim_angle_deg"] for x in reports[-1]["shots"] if x["open"]}
                assert round(demo.shot.phi, 2) in open_aims and demo.shot.V0 in ORACLE_SPEEDS
                # none of the report's open shots at any of the Oracle's speeds is better than the one written
                for x in reports[-1]["shots"]:
                    for v in ORACLE_SPEEDS if x["open"] else ():
                        _, m = played(s, format_action(Shot(phi=x["potting_point_aim_angle_deg"], V0=v,
                                                            target_ball=called[-1], target_pocket=x["pocket"]), s))
                        assert (m.clean_pot, m.legal_contact) <= (demo.metrics.clean_pot, demo.metrics.legal_contact)
            else:
                assert len(demo.calls) == MAX_CALLS or called == listed
            verify_tool_row(demo.to_row("train"), s)
    assert kinds == {"listed_open", "listed_closed"}


def test_the_demonstration_order_is_a_builder_choice(folder, scenario_rows, listed_rows, capsys, tmp_path):
    import shutil

    from poolbench_data.hub.folder import read_rows

    build_sft = _load("builders/build_sft")
    assert build_sft.main(["--dataset_dir", str(folder), "--tools", "--tool_demo_order", "nearest"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--tool_demo_order" in err and len(err.splitlines()) == 1
    with pytest.raises(ValueError, match="nearest"):  # the library refuses it too, never a silent default
        tool_sft_rows(scenario_rows, "train", order="nearest")
    copy = shutil.copytree(folder, tmp_path / "poolbench")  # the module's folder keeps the default rows
    assert build_sft.main(["--dataset_dir", str(copy), "--tools", "--tool_demo_order", "listed",
                           "--tool_demo_speeds", "8,10,12"]) == 0
    rows = read_rows(copy, "sft_tools", "train")
    assert rows == listed_rows
    assert len(rows) == len(scenario_rows) and {r["demonstration"] for r in rows} <= {"listed_open", "listed_closed"}
    out = capsys.readouterr().out
    calls = {n: sum(r["calls"] == n for r in rows) for n in range(1, MAX_CALLS + 1)}
    assert "by calls: " + ", ".join(f"{n}: {k}" for n, k in calls.items() if k) in out
    assert json.loads((copy / "provenance.json").read_text())["sft_tools"]["settings"]["tool_demo_order"] == "listed"


def test_the_demonstrations_speeds_are_a_builder_choice(folder, scenario_rows, listed_rows, capsys, tmp_path):
    import shutil

    from poolbench_data.hub.folder import read_rows

    build_sft = _load("builders/build_sft")
    for bad in ("1", "5,13", "fast", ","):
        assert build_sft.main(["--dataset_dir", str(folder), "--tools", "--tool_demo_speeds", bad]) == 2
        err = capsys.readouterr().err.strip()
        assert "--tool_demo_speeds" in err and len(err.splitlines()) == 1
    copy = shutil.copytree(folder, tmp_path / "poolbench")
    args = ["--dataset_dir", str(copy), "--tools", "--tool_demo_order", "listed", "--tool_demo_speeds", "5,8,10,12"]
    assert build_sft.main(args) == 0
    rows = read_rows(copy, "sft_tools", "train")
    assert rows == tool_sft_rows(scenario_rows, "train", order="listed", speeds=(5.0, 8.0, 10.0, 12.0))
    default = listed_rows
    assert [r["scenario_id"] for r in rows] == [r["scenario_id"] for r in default]  # the same boards and calls
    assert [r["calls"] for r in rows] == [r["calls"] for r in default]
    assert {r["cue_speed"] for r in rows} <= {5.0, 8.0, 10.0, 12.0} and 5.0 in {r["cue_speed"] for r in rows}
    assert 5.0 not in {r["cue_speed"] for r in default}
    for r, d in zip(rows, default):
        s = board(scenario_rows, r["scenario_id"])
        five = json.loads(d["messages"][-1]["content"]) | {"cue_speed": 5.0}
        _, m = played(s, json.dumps(five))
        # more speeds tried, never a worse outcome; 5 m/s first: written wherever the default's shot pots at 5 too
        assert (r["clean_pot"], r["legal_contact"]) >= (d["clean_pot"], d["legal_contact"])
        if d["demonstration"] == "listed_open" and m.clean_pot:
            assert r["cue_speed"] == 5.0
        verify_tool_row(r, s)
    out = capsys.readouterr().out
    assert "written at " + ", ".join(f"{v:g} m/s {sum(r['cue_speed'] == v for r in rows)}"
                                     for v in sorted({r["cue_speed"] for r in rows})) in out
    settings = json.loads((copy / "provenance.json").read_text())["sft_tools"]["settings"]
    assert settings["tool_demo_speeds"] == [5.0, 8.0, 10.0, 12.0]


def test_a_row_that_does_not_replay_is_a_build_error_naming_the_board(rows, scenario_rows):
    row = dict(rows[0])
    s = board(scenario_rows, row["scenario_id"])
    action = json.loads(row["messages"][-1]["content"])
    action["aim_angle_deg"] = (action["aim_angle_deg"] + 20.0) % 360.0
    row["messages"] = [*row["messages"][:-1], {**row["messages"][-1], "content": json.dumps(action)}]
    with pytest.raises(DemonstrationError, match=f"board '{row['scenario_id']}'.*does not reproduce"):
        verify_tool_row(row, s)
    forged = dict(rows[0])
    tool_answer = json.loads(forged["messages"][-2]["content"])
    tool_answer["shots"][0]["potting_point_aim_angle_deg"] += 1.0
    forged["messages"] = [*forged["messages"][:-2], {**forged["messages"][-2], "content": json.dumps(tool_answer)},
                          forged["messages"][-1]]
    with pytest.raises(DemonstrationError, match="not the tool's answer"):
        verify_tool_row(forged, s)


def stop_every_simulation(monkeypatch) -> None:
    """From here on every simulation runs as before but reports that it stopped at the event limit: its outcome
    is the real one, so a builder that does not read the status still finds the same pots (nothing caches an
    outcome between calls: each `simulate` runs the engine)."""
    from poolbench_data.core import physics

    run = physics._run

    def stopped(system, max_events, timeout_s):
        run(system, max_events, timeout_s)
        return "event-limit"

    monkeypatch.setattr(physics, "_run", stopped)


def test_no_demonstration_comes_from_a_simulation_that_stopped_early(rows, scenario_rows, monkeypatch):
    from poolbench_data.demos.tools import DEMO_ORDERS, cap_answer, find_pot

    some = scenario_rows[:3]
    oracles = [(Scenario.from_row(r), Shot.from_row(r["oracle_shot"])) for r in some if r.get("oracle_shot")]
    found = [(s, oracle) for s, oracle in oracles if find_pot(s, oracle) is not None]
    closed = [(s, [(b.id, None)]) for s, _ in oracles for b in s.own() if not clear(turn_result(
        s, {"name": "ghost_ball", "arguments": {"target_ball": b.id}}, 0))]
    built = {order: tool_sft_rows(some, "train", order=order) for order in DEMO_ORDERS}
    assert found and closed and all(built.values())
    stop_every_simulation(monkeypatch)
    # scored from where the balls were when it stopped: never a legal pot found, never the best at the cap
    assert all(find_pot(s, oracle) is None for s, oracle in found)
    assert all(cap_answer(s, calls) is None for s, calls in closed)
    assert {order: tool_sft_rows(some, "train", order=order) for order in DEMO_ORDERS} == {o: [] for o in DEMO_ORDERS}
    with pytest.raises(DemonstrationError, match=f"board '{rows[0]['scenario_id']}'.*stops early"):
        verify_tool_row(rows[0], board(scenario_rows, rows[0]["scenario_id"]))


def test_evaluation_boards_never_become_demonstrations(folder, scenario_rows, capsys):
    with pytest.raises(ValueError, match="evaluation boards"):
        tool_sft_rows(scenario_rows, "test")
    assert _load("builders/build_sft").main(["--dataset_dir", str(folder), "--tools", "--split", "test"]) == 2
    assert "--split test" in capsys.readouterr().err


def test_the_card_describes_the_config(folder):
    card = (folder / "README.md").read_text()
    assert "config_name: sft_tools" in card and "### `sft_tools`" in card
    assert "`--tool_demo_order listed`" in card and "listed_open" in card  # both orders' rows are described


# --- the training contract -----------------------------------------------------------


@pytest.fixture(scope="module")
def sft():
    pytest.importorskip("trl")
    return _load("training/sft")


def test_rows_pass_the_training_checks(sft, rows):
    check_sft.check_sft_rows(rows)


@pytest.mark.parametrize("arguments, problem", [
    ({"target_ball": "1", "pocket": "rt", "spin": 0.5}, r"row 0: .*arguments \['pocket', 'spin', 'target_ball'\]"),
    ({"pocket": "rt"}, r"row 0: .*arguments \['pocket'\] \(it takes target_ball and, optionally, pocket\)"),
])
def test_a_call_with_unknown_arguments_is_refused_with_its_row(sft, rows, arguments, problem):
    bad = dict(rows[0])
    call = {"name": "ghost_ball", "arguments": arguments}
    bad["messages"] = [*bad["messages"][:2], {"role": "assistant", "content": f"<tool_call>{json.dumps(call)}"
                                              "</tool_call>", "context": False}, *bad["messages"][3:]]
    with pytest.raises(check_sft.SFTFormatError, match=problem):
        check_sft.check_sft_rows([bad, *rows[1:]])


def test_tool_rows_from_the_test_split_are_refused(sft, rows):
    leak = {**rows[1], "split": "test"}
    with pytest.raises(SplitLeakError, match="row 1: split='test'"):
        check_sft.check_sft_rows([rows[0], leak])
    with pytest.raises(SplitLeakError, match="row 0: scenario_id='pb0-000004'"):
        check_sft.check_sft_rows([{**rows[0], "scenario_id": "pb0-000004"}])


def test_a_conversation_ending_in_a_call_is_refused(sft, rows):
    bad = {**rows[0], "messages": rows[0]["messages"][:-2]}
    with pytest.raises(check_sft.SFTFormatError, match="the last model turn is a call"):
        check_sft.check_sft_rows([bad])


def test_template_renders_what_the_evaluator_renders(rows):
    """The training template is the tiny model's (and SmolLM2's) ChatML, same text for every conversation that
    starts with a system prompt, as every PoolBench conversation does; and it writes structured tool calls the
    way the model writes them."""
    from jinja2 import Environment
    from transformers.utils.chat_template_utils import _compile_jinja_template

    from tiny_model import CHATML_TEMPLATE

    ours = _compile_jinja_template(TEMPLATE.read_text())
    plain = Environment().from_string(CHATML_TEMPLATE)
    for row in rows:
        assert ours.render(messages=row["messages"]) == plain.render(messages=row["messages"])
    text = row["messages"][-3]["content"]
    call = tool_calls(text)[0]
    structured = [{"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": call}]}]
    as_string = [{"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])}}]}]
    for msgs in (structured, as_string):
        assert ours.render(messages=[row["messages"][0], *msgs]).endswith(f"assistant\n{text}<|im_end|>\n")


def test_loss_is_on_the_model_turns_only(sft, rows, folder, tiny_model, tmp_path):
    """The labels TRL builds with the recipe's template: the trained calls and the action, each with its end of
    turn; never the prompt, a tool's answer or a mistaken call kept as context."""
    model = tiny_model
    argv = ["--config", str(RECIPE), "--model_name_or_path", str(model), "--dataset_name", str(folder),
            "--output_dir", str(tmp_path / "out"), "--chat_template_path", str(TEMPLATE), "--max_length", "4096"]
    trainer, tokenizer, report = sft.make_trainer(*sft.make_parser().parse_args_and_config(args=argv))
    assert report.kept == len(rows)
    for i in range(len(rows)):
        ex = trainer.train_dataset[i]
        trained = [lab for lab in ex["labels"] if lab != -100]
        want = "".join(m["content"] + "<|im_end|>" for m in rows[i]["messages"]
                       if m["role"] == "assistant" and not m["context"])
        assert tokenizer.decode(trained) == want


def test_tool_rows_need_assistant_only_loss_and_a_marked_template(sft, folder, tmp_path):
    base = ["--config", str(RECIPE), "--model_name_or_path", str(tmp_path), "--dataset_name", str(folder),
            "--output_dir", str(tmp_path / "out")]
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ValueError, match="assistant_only_loss is false"):
        sft.make_trainer(*sft.make_parser().parse_args_and_config(args=base + ["--assistant_only_loss", "false"]))
    with pytest.raises(FileNotFoundError, match="chat_template_path"):
        sft.make_trainer(*sft.make_parser().parse_args_and_config(
            args=base + ["--chat_template_path", str(tmp_path / "none.jinja")]))
    unmarked = tmp_path / "plain.jinja"
    unmarked.write_text("{% for m in messages %}{{ m['content'] }}{% endfor %}")
    with pytest.raises(ValueError, match="no \\{% generation %\\} markers"):
        sft.make_trainer(*sft.make_parser().parse_args_and_config(args=base + ["--chat_template_path",
                                                                               str(unmarked)]))


def test_tool_sft_trains_one_step(sft, folder, tiny_model, tmp_path):
    import math

    model = tiny_model
    argv = ["--config", str(RECIPE), "--model_name_or_path", str(model), "--dataset_name", str(folder),
            "--output_dir", str(tmp_path / "out"), "--chat_template_path", str(TEMPLATE), "--max_steps", "1",
            "--gradient_accumulation_steps", "2", "--disable_tqdm", "true",
            # The tiny tokenizer writes digits less compactly than SmolLM2's: a few conversations pass its 2,048
            # positions and are dropped, counted.
            "--max_dropped_share", "0.5"]
    result = sft.main(argv)
    assert result.global_step == 1 and math.isfinite(result.training_loss) and result.training_loss > 0
    assert 0 < result.lengths.kept <= result.lengths.rows
    assert (result.merged_dir / "config.json").is_file()



def test_a_board_without_a_pot_can_teach_the_action_at_the_cap():
    from poolbench_data.boards.generate import generate_scenario
    from poolbench_data.demos.tools import find_pot

    boards = [generate_scenario("indirect", 100 + i, f"pb1-{i:06d}") for i in range(6)]
    boards = [s for s in boards if find_pot(s) is None]
    assert boards
    seen, kinds = 0, set()
    for s in boards:
        assert tool_demo(s, None, seed=0, no_pot_share=0.0) is None  # at 0, no row where the tool gives no pot
        demo = tool_demo(s, None, seed=0, no_pot_share=1.0)
        closed = [b.id for b in s.own() if not clear(turn_result(s, {"name": "ghost_ball",
                                                                    "arguments": {"target_ball": b.id}}, 0))]
        if len(closed) < MAX_CALLS and len(closed) < len(s.own()):
            assert demo is None
            continue
        seen += 1
        n = min(MAX_CALLS, len(closed))  # three of them, or every own ball where there are fewer
        assert demo.kind == ("at_cap" if n == MAX_CALLS else "all_closed") and demo.context_calls == n
        assert len(set(demo.calls)) == n and {b for b, _ in demo.calls} <= set(closed)
        kinds.add(demo.kind)
        msgs = demo.messages()
        assert [m["context"] for m in msgs if m["role"] == "assistant"] == [True] * n + [False]
        assert [json.loads(m["content"])["calls_left"] for m in msgs if m["role"] == "tool"] == \
            list(range(MAX_CALLS - 1, MAX_CALLS - 1 - n, -1))
        assert parse_action(msgs[-1]["content"], s).status == "ok"
        verify_tool_row(demo.to_row("train"), s)
        assert tool_demo(s, None, seed=0, no_pot_share=1.0) == demo  # the draw is the board's own
    assert seen >= 1 and kinds == {"at_cap", "all_closed"}
    # the builder's share reaches the rows
    rows = [{**s.to_row(), "oracle_shot": None} for s in boards]
    with_cap = tool_sft_rows(rows, "train", no_pot_share=1.0)
    assert len(with_cap) == seen and not tool_sft_rows(rows, "train", no_pot_share=0.0)
    assert tool_sft_rows(rows, "train") == with_cap and NO_POT_SHARE == 1.0  # the default: every board without a pot
    assert _load("builders/build_sft").ScriptArguments().at_cap_no_pot_share == NO_POT_SHARE  # one default


# --- tool-only flags --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_folder(tmp_path_factory) -> Path:
    """A dataset folder with 2 train boards the Oracle played: `build_sft.py` without --tools builds `sft` from it."""
    from poolbench_data.hub.build import build_benchmark

    root = tmp_path_factory.mktemp("pbsmall") / "poolbench"
    build_benchmark(root, eval_n=1, train_n=2, train_seed=3, players=("oracle",), progress=False)
    return root


def test_the_builders_defaults_are_the_headline_demonstrations(small_folder, tmp_path):
    """`build_sft.py --tools` alone builds what the tool track's headline trained on: own balls in the prompt's
    order, speeds 5, 8, 10, 12 m/s tried (the settings its recipe names)."""
    import shutil

    import yaml

    from poolbench_data.hub.folder import read_rows

    recipe = yaml.safe_load((REPO / "training" / "recipes" / "loop-tools-headline.yaml").read_text())
    defaults = _load("builders/build_sft").ScriptArguments()
    assert (defaults.tool_demo_order, defaults.tool_demo_speeds) == ("listed", "5,8,10,12")
    assert (recipe["tool_demo_order"], recipe["tool_demo_speeds"]) == (defaults.tool_demo_order,
                                                                       defaults.tool_demo_speeds)
    copy = shutil.copytree(small_folder, tmp_path / "poolbench")
    assert _load("builders/build_sft").main(["--dataset_dir", str(copy), "--tools"]) == 0
    rows = read_rows(copy, "sft_tools", "train")
    scenarios = read_rows(copy, "scenarios", "train")
    assert rows and rows == tool_sft_rows(scenarios, "train", order="listed", speeds=(5.0, 8.0, 10.0, 12.0))
    settings = json.loads((copy / "provenance.json").read_text())["sft_tools"]["settings"]
    assert (settings["tool_demo_order"], settings["tool_demo_speeds"]) == ("listed", [5.0, 8.0, 10.0, 12.0])


@pytest.mark.parametrize("flag, value", [("--tool_demo_order", "oracle"), ("--tool_demo_speeds", "5,8"),
                                         ("--retry_blocked_share", "0.2"), ("--at_cap_no_pot_share", "0.5"),
                                         ("--seed", "4")])
def test_a_tool_only_flag_without_tools_is_refused_before_anything_is_built(small_folder, capsys, flag, value):
    before = {p: p.stat().st_mtime_ns for p in small_folder.rglob("*")}
    assert _load("builders/build_sft").main(["--dataset_dir", str(small_folder), flag, value]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {flag} is read only with --tools; add --tools, or leave {flag} out", err
    assert {p: p.stat().st_mtime_ns for p in small_folder.rglob("*")} == before  # nothing written


def test_every_tool_only_flag_says_so_in_its_help():
    import dataclasses

    fields = {f.name: f for f in dataclasses.fields(_load("builders/build_sft").ScriptArguments)}
    tool_only = sorted(name for name, f in fields.items() if f.metadata.get("requires") == "tools")
    assert tool_only == ["at_cap_no_pot_share", "retry_blocked_share", "seed", "tool_demo_order", "tool_demo_speeds",
                         "tool_lines"]
    assert all(fields[name].metadata["help"].startswith("With --tools:") for name in tool_only)


def test_the_row_check_says_one_thing_of_the_call_s_arguments(sft, rows):
    """The fix line and the row's problem agree: ghost_ball takes target_ball and, optionally, pocket."""
    bad = dict(rows[0])
    call = {"name": "ghost_ball", "arguments": {"target_ball": "1", "spin": 0.5}}
    bad["messages"] = [*bad["messages"][:2], {"role": "assistant", "content": f"<tool_call>{json.dumps(call)}"
                                              "</tool_call>", "context": False}, *bad["messages"][3:]]
    with pytest.raises(check_sft.SFTFormatError) as refused:
        check_sft.check_sft_rows([bad])
    message = str(refused.value)
    assert "exactly target_ball and pocket" not in message
    assert message.count("target_ball and, optionally, pocket") == 2, message
