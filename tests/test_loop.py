"""The loop (poolbench_data.finetune.loop, run as training/loop.py) and its numbers (report.pilot), from real
evaluations (replay backend)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _loop():
    from poolbench_data.finetune import loop

    return loop


def _responses(path: Path, texts: list[str], boards) -> Path:
    from poolbench_data.llm.player import EvalSettings, evaluate_model, llm_trace_rows
    from poolbench_data.llm.replay import ReplayBackend

    settings = EvalSettings(model="m", backend="replay")
    recs, _ = evaluate_model(boards, ReplayBackend([[t] for t in texts]), settings, player="m", progress=False)
    path.write_text("".join(json.dumps(r) + "\n" for r in llm_trace_rows(recs, {}, settings)))
    return path


@pytest.mark.slow
def test_pilot_json_has_the_issue_shape_and_counts_what_the_traces_say(tmp_path):
    from poolbench_data.boards.generate import generate
    from poolbench_data.cli import main
    from poolbench_data.players import oracle
    from poolbench_data.protocol.prompts import format_action

    boards = generate(4)
    actions = [format_action(oracle(s).shot, s) for s in boards]
    work = tmp_path / "work"
    for name, texts in (("before", ["no idea"] * 4), ("after", actions[:3] + ["still no idea"])):
        src = _responses(tmp_path / f"{name}.jsonl", texts, boards)
        assert main(["eval", "--backend", "replay", "--responses", str(src), "--n", "4", "--name", name,
                     "--out", str(work / name), "--boards", "0", "--quiet"]) == 0
    from poolbench_data.report.pilot import pilot_result, scaling_table

    result = pilot_result(work, "SFT only", None)
    assert result["n"] == 4 and result["after_model"] == "SFT only"
    keys = {"parseable", "legal_contact", "own_potted", "clean_pot", "foul", "median_abs_angle_error_deg",
            "distinct_aims"}
    assert set(result["before"]) == keys and set(result["after"]) == keys
    assert result["before"]["parseable"] == 0 and result["before"]["median_abs_angle_error_deg"] is None
    assert result["after"]["parseable"] == 3 and result["after"]["distinct_aims"] >= 1
    # The Oracle's own actions: aim error 0 to the Oracle of the same report.
    assert result["after"]["median_abs_angle_error_deg"] == 0.0
    assert result["after"]["legal_contact"] == sum(
        json.loads(x)["legal_contact"] for x in (work / "after" / "llm_traces.jsonl").read_text().splitlines())
    assert set(result["mcnemar_p"]) == {"legal_contact", "own_potted", "parseable"}
    assert result["mcnemar_p"]["parseable"] == pytest.approx(0.25)  # 3 discordant of 3: 2 * 0.5**3
    assert set(result["random"]) >= {"legal_contact"}
    assert [r["model"] for r in result["scaling"]] == ["base (0 examples)", "after"]
    table = scaling_table(work).splitlines()
    assert table[-1].split()[:2] == ["after", "3"]  # the after row, parseable first


def test_bad_loop_arguments_are_one_line(capsys):
    loop = _loop()
    for argv, words in ((["--stages", "warmup"], "--stages"), (["--train_seed", "0"], "--train_seed 0"),
                        (["--sample_n", "500", "--train_n", "400"], "--sample_n"),
                        (["--after_model", "ppo"], "--after_model")):
        assert loop.main(argv) == 2
        err = capsys.readouterr().err
        assert words in err and len(err.strip().splitlines()) == 1, err


def test_after_reuses_the_sft_models_evaluation(tmp_path):
    # With --after_model sft, `scaling` already evaluated that model on the same
    # boards; `after` takes its files instead of generating again.
    loop = _loop()
    work = tmp_path / "work"
    sft = work / "sft"
    sft.mkdir(parents=True)
    for name in ("summary.json", "results.json", "report.txt", "llm_traces.jsonl"):
        (sft / name).write_text(name)
    runner = loop.Loop(loop.LoopArguments(work_dir=str(work), after_model="sft"))
    runner.eval = lambda *a: pytest.fail("evaluated again")
    runner.after()
    assert (work / "after" / "llm_traces.jsonl").read_text() == "llm_traces.jsonl"
    assert (work / "after" / "summary.json").read_text() == "summary.json"


def _tool_eval(work: Path, name: str, texts: list[str], boards, tmp_path: Path) -> None:
    """A finished `eval --tools` folder as the tool track leaves it: the traces, the report, the tool calls."""
    from poolbench_data.cli import main

    src = _responses(tmp_path / f"{name}.jsonl", texts, boards)
    assert main(["eval", "--backend", "replay", "--responses", str(src), "--n", str(len(boards)), "--name", name,
                 "--out", str(work / name), "--boards", "0", "--quiet", "--baselines",
                 _loop().TOOL_BASELINES]) == 0
    calls = [{"scenario_id": s.id, "sample": 0, "calls": [{"arguments": {}, "result": {}}] * (i % 2)}
             for i, s in enumerate(boards)]
    (work / name / "tool_calls.jsonl").write_text("".join(json.dumps(c) + "\n" for c in calls))
    from poolbench_data.llm.tools import TOOL_VERSION

    results = work / name / "results.json"  # the replay eval made no calls: results.json["tools"] as --tools writes it
    results.write_text(json.dumps({**json.loads(results.read_text()), "tools": {"tool_version": TOOL_VERSION}}))


@pytest.mark.slow
def test_tool_track_json_has_the_issue_shape(tmp_path):
    from poolbench_data.boards.generate import generate
    from poolbench_data.players import oracle
    from poolbench_data.protocol.prompts import format_action

    boards = generate(4)
    actions = [format_action(oracle(s).shot, s) for s in boards]
    work = tmp_path / "work"
    _tool_eval(work, "sft", ["no idea"] * 4, boards, tmp_path)
    _tool_eval(work, "grpo", actions, boards, tmp_path)
    from poolbench_data.players.traces import load_traces
    from poolbench_data.report.pilot import pilot_tools_result

    result = pilot_tools_result(work, {})
    assert result["n"] == 4 and result["dpo"] is None and result["free_text_sft"] is None
    assert result["sft"]["tool_called"] == 2 and result["sft"]["parseable"] == 0
    assert result["grpo"]["clean_pot"] == sum(json.loads(x)["clean_pot"] for x in
                                              (work / "grpo" / "llm_traces.jsonl").read_text().splitlines())
    played = [r for r in load_traces(work / "grpo" / "llm_traces.jsonl") if r["sim_status"] == "ok"]
    speeds = result["grpo"]["speeds_by_calls"]  # boards 0 and 2 made no call, 1 and 3 one (_tool_eval)
    assert set(speeds) == {"0", "1"} and sum(sum(c.values()) for c in speeds.values()) == len(played) == 4
    assert speeds["1"] == dict(Counter(f"{round(a.shot.V0, 1):g}" for a in map(oracle, boards[1::2])))
    assert result["sft"]["speeds_by_calls"] == {}  # nothing parsed, nothing played
    assert set(result["mcnemar_p"]) == {"grpo_vs_sft"}
    assert set(result["mcnemar_p"]["grpo_vs_sft"]) == {"clean_pot", "own_potted"}
    assert {"random", "heuristic_centre", "heuristic_potpoint"} <= set(result)
    assert result["heuristic_potpoint"]["legal_contact"] >= 0 and result["demonstrations_available"] is None
    assert result["grpo_boards"] is None  # no GRPO run in this folder, only its evaluation
    (work / "grpo" / "train_results.json").write_text(json.dumps({"train_boards": 49, "spread_from": "s"}))
    assert pilot_tools_result(work, {})["grpo_boards"] == 49
    from poolbench_data.llm.tools import TOOL_VERSION

    assert result["tool_version"] == TOOL_VERSION  # what the evaluations played with
    results = work / "grpo" / "results.json"  # a stage resumed from a run with another tool
    results.write_text(json.dumps({**json.loads(results.read_text()), "tools": {"tool_version": "ghost_ball-v0"}}))
    assert pilot_tools_result(work, {})["tool_version"] == f"mixed: {TOOL_VERSION} (sft), ghost_ball-v0 (grpo)"


def test_tool_track_arguments(capsys):
    loop = _loop()
    for argv, words in ((["--track", "rl"], "--track"), (["--track", "tools", "--stages", "after"], "--stages"),
                        (["--track", "tools", "--grpo_steps", "0"], "--grpo_steps"),
                        (["--track", "tools", "--samples", "1"], "--samples"),
                        (["--track", "tools", "--extra_pairs_args", "--tool_source x"], "--extra_pairs_args: --tool_source"),
                        (["--track", "tools", "--extra_sft_data_args", "--at_cap 1"], "--extra_sft_data_args: --at_cap"),
                        (["--track", "tools", "--extra_dpo_args", "--beta '0.2"], "--extra_dpo_args: No closing quotation")):
        assert loop.main(argv) == 2
        err = capsys.readouterr().err
        assert words in err and len(err.strip().splitlines()) == 1, err


def test_relative_work_dir_is_resolved_once_from_where_the_loop_was_started(tmp_path, monkeypatch):
    loop = _loop()
    monkeypatch.chdir(tmp_path)
    runner = loop.Loop(loop.LoopArguments(work_dir="w"))
    assert runner.work == tmp_path / "w" and runner.data == tmp_path / "w" / "dataset" / "poolbench"
    assert loop.Loop(loop.LoopArguments(track="tools")).work == tmp_path / "runs" / "loop-tools"


def test_a_missing_recipe_or_model_is_found_before_the_first_stage(tmp_path, capsys):
    loop = _loop()
    work = tmp_path / "w"
    for argv, words in ((["--sft_recipe", "training/recipes/nope.yaml"], "--sft_recipe"),
                        (["--track", "tools", "--grpo_recipe", "nope.yaml"], "--grpo_recipe"),
                        (["--track", "tools", "--tools_dpo_recipe", "nope.yaml"], "--tools_dpo_recipe"),
                        (["--model", str(tmp_path / "no-model")], "--model"),
                        (["--model", " "], "--model is empty"),
                        (["--model", "no-org/not-cached"], "--model='no-org/not-cached'"),  # offline: not in the cache
                        (["--model", str(tmp_path)], "has no config.json"),
                        (["--track", "tools", "--free_text_model", "./gone"], "--free_text_model")):
        assert loop.main([*argv, "--work_dir", str(work)]) == 2
        err = capsys.readouterr().err
        assert words in err and len(err.strip().splitlines()) == 1, err
        assert not work.exists()  # nothing ran


def test_a_failing_stage_is_one_line_with_its_log(tmp_path, capsys):
    loop = _loop()
    work = tmp_path / "w"
    # No dataset in the work dir: the demonstrations builder refuses, and the loop says which stage and where.
    assert loop.main(["--work_dir", str(work), "--stages", "sft_data"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    log = work / "logs" / "sft_data.log"
    assert err == [f"error: stage sft_data failed: build_sft.py exited with code 2; its output is in {log}"]
    assert "--dataset_dir" in log.read_text()


def test_tool_track_preference_stages_chain_samples_pairs_dpo_and_its_evaluation(tmp_path):
    from poolbench_data.config import read_yaml
    from poolbench_data.evaluation.config import EvalConfig

    loop = _loop()
    sources = "tool-on-policy,tool-at-cap,tool-recovery,tool-answer"
    runner = loop.Loop(loop.LoopArguments(track="tools", work_dir=str(tmp_path), dpo_steps=0, samples=4,
                                          extra_pairs_args=f"--tool_sources '{sources}'"))  # as a shell splits it
    ran = []
    runner.run = ran.append
    for stage in ("samples", "pairs", "dpo", "eval_dpo"):
        runner.stage = stage
        getattr(runner, stage)()
    samples, pairs, dpo, evaluation = ran
    # The evaluations are handed a config file that `poolbench eval --config` reads back.
    sampled = EvalConfig(**read_yaml(samples[samples.index("--config") + 1], EvalConfig))
    assert sampled.tools and not sampled.dataset_dir and sampled.samples == 4 and sampled.seed == 1
    assert sampled.model == str(tmp_path / "sft" / "merged") and sampled.out == str(tmp_path / "samples")
    # Sampling in the CPU's bf16 where it is native (vLLM's auto), the held-out evaluations in fp32.
    assert sampled.model_args == "dtype=auto,enforce_eager=True,kv_cache_gib=8"
    assert pairs[pairs.index("--tool_eval_dir") + 1] == str(tmp_path / "samples")
    assert pairs[pairs.index("--tool_sources") + 1] == sources
    assert dpo[dpo.index("--config") + 1] == "training/recipes/dpo-tools-smollm2-135m-cpu.yaml"
    assert "--max_steps" not in dpo and dpo[dpo.index("--model_name_or_path") + 1] == str(tmp_path / "sft" / "merged")
    held_out = EvalConfig(**read_yaml(evaluation[evaluation.index("--config") + 1], EvalConfig))
    assert held_out.tools and held_out.out == str(tmp_path / "dpo") and held_out.model == str(tmp_path / "dpo" / "merged")
    assert held_out.baselines == loop.TOOL_BASELINES
    assert held_out.model_args == "dtype=float32,enforce_eager=True,kv_cache_gib=8"


def test_grpo_spread_trains_on_the_samples_stages_boards_and_depends_on_it(tmp_path, capsys):
    loop = _loop()
    runner = loop.Loop(loop.LoopArguments(track="tools", work_dir=str(tmp_path), grpo_spread=True, grpo_steps=7))
    ran = []
    runner.run = ran.append
    runner.stage = "grpo"
    runner.grpo()
    (cmd,) = ran
    assert cmd[cmd.index("--spread_from") + 1] == str(tmp_path / "samples") and "--max_steps" in cmd
    stamp = json.loads(runner.stamps.path("grpo").read_text())
    assert set(stamp["inputs"]) == {"sft", "dataset", "eval_samples"}  # samples built again: GRPO is stale
    plain = loop.Loop(loop.LoopArguments(track="tools", work_dir=str(tmp_path / "plain")))
    plain.run, plain.stage = ran.append, "grpo"
    plain.grpo()
    assert "--spread_from" not in ran[-1]
    assert loop.main(["--track", "tools", "--grpo_spread", "--samples", "1", "--stages", "grpo"]) == 2
    assert "--grpo_spread compare a board's samples; give --samples 2" in capsys.readouterr().err


def test_the_demonstrations_stage_takes_the_builder_flags_it_is_given(tmp_path):
    loop = _loop()
    runner = loop.Loop(loop.LoopArguments(track="tools", work_dir=str(tmp_path),
                                          extra_sft_data_args="--at_cap_no_pot_share 1 --seed 3"))
    ran = []
    runner.run = ran.append
    runner.stage = "sft_data"
    runner.sft_data()
    (cmd,) = ran
    assert cmd[1:] == ["builders/build_sft.py", "--dataset_dir", str(runner.data), "--tools",
                       "--at_cap_no_pot_share", "1", "--seed", "3"]


def test_the_builders_settings_are_the_loops_own_flags_handed_on_as_given(tmp_path):
    loop = _loop()

    def commands(**settings):
        runner = loop.Loop(loop.LoopArguments(track="tools", work_dir=str(tmp_path / str(len(settings))), **settings))
        ran = []
        runner.run = ran.append
        for stage in ("sft_data", "pairs"):
            runner.stage = stage
            getattr(runner, stage)()
        return [cmd[1:] for cmd in ran]

    sft_data, pairs = commands(tool_demo_order="oracle", tool_demo_speeds="8,10,12", tool_sources="tool-speed",
                               extra_sft_data_args="--seed 3")
    assert sft_data[3:] == ["--tools", "--tool_demo_order", "oracle", "--tool_demo_speeds", "8,10,12", "--seed", "3"]
    assert pairs[-2:] == ["--tool_sources", "tool-speed"]
    sft_data, pairs = commands()  # '': the builders' own defaults
    assert sft_data[3:] == ["--tools"] and pairs[-2] == "--tool_eval_dir"


def test_the_builders_settings_are_checked_before_the_first_stage(tmp_path, capsys):
    loop = _loop()
    work = tmp_path / "w"
    for argv, words in ((["--track", "tools", "--tool_demo_order", "nearest"],
                         "--tool_demo_order 'nearest': give one of oracle, listed"),
                        (["--track", "tools", "--tool_demo_speeds", "5,13"], "--tool_demo_speeds '5,13': give one"),
                        (["--track", "tools", "--tool_sources", "tool-speeds"],
                         "--tool_sources 'tool-speeds': unknown source(s) ['tool-speeds']"),
                        (["--tool_demo_order", "listed"], "--tool_demo_order is read only with --track tools")):
        assert loop.main([*argv, "--work_dir", str(work)]) == 2
        err = capsys.readouterr().err
        assert words in err and len(err.strip().splitlines()) == 1, err
        assert not work.exists()  # nothing ran


def _headline_commands(argv: list[str], work: Path) -> tuple[list[list[str]], dict[str, str]]:
    """Each stage's command (the interpreter left out) and stamp, as the loop builds them from `argv`; the stages
    record what they would run, and run nothing."""
    import shutil

    from poolbench_data.config import parse

    loop = _loop()
    shutil.rmtree(work, ignore_errors=True)
    runner = loop.Loop(parse(loop.LoopArguments, [*argv, "--work_dir", str(work)]))
    ran = []
    runner.run = ran.append
    for stage in loop.TOOL_STAGES:
        if stage != "results":  # it reads what the stages wrote
            runner.stage = stage
            getattr(runner, stage)()
    stamps = {p.name: json.dumps({k: v for k, v in json.loads(p.read_text()).items() if k != "seconds"})
              for p in (work / "stamps").iterdir()}
    return [cmd[1:] for cmd in ran], stamps


def test_the_headline_recipe_runs_every_stage_as_the_headlines_command_did(tmp_path):
    """training/recipes/loop-tools-headline.yaml hands every stage the arguments of the command that wrote the
    headline's JSON (its `command`, whose builder flags went inside --extra_<stage>_args strings): the same run,
    and a work folder that command left resumes under the recipe."""
    import shlex

    loop = _loop()
    recorded = json.loads((REPO / "docs/results/tool_track_smollm2_135m_cpu.json").read_text())["command"]
    words = shlex.split(recorded)[2:]  # python training/loop.py ...
    for flag in ("--work_dir", "--stages"):  # where it ran, and which stages that last invocation ran
        i = words.index(flag)
        del words[i:i + 2]
    assert any(w.startswith("--extra_") for w in words)
    free_text = words[words.index("--free_text_model") + 1]
    recipe = ["--config", str(REPO / "training/recipes/loop-tools-headline.yaml"), "--free_text_model", free_text]
    work = tmp_path / "W"
    old, new = _headline_commands(words, work), _headline_commands(recipe, work)
    assert len(old[0]) == len(loop.TOOL_STAGES) - 1 and len(old[1]) == len(loop.TOOL_STAGES) - 1
    assert new == old
    # The recipe's free-text model is the one the README's free-text command trains (its default work folder).
    from poolbench_data.config import read_yaml

    settings = read_yaml(str(REPO / "training/recipes/loop-tools-headline.yaml"), loop.LoopArguments)
    assert Path(settings["free_text_model"]).resolve() == loop.Loop(loop.LoopArguments()).sft_dir / "merged"


def test_the_sft_stage_counts_examples_as_batch_times_accumulation(tmp_path):
    """--sft_examples and --sft_eval_every are demonstrations; the trainer counts optimizer steps of
    per_device_train_batch_size x gradient_accumulation_steps rows (the recipe's, or --extra_sft_args')."""
    loop = _loop()

    def sft_command(**arguments):
        runner = loop.Loop(loop.LoopArguments(work_dir=str(tmp_path), sft_examples=120, sft_eval_every=40, **arguments))
        ran = []
        runner.run = ran.append
        runner.stage = "sft"
        runner.sft()
        (cmd,) = ran
        return int(cmd[cmd.index("--max_steps") + 1]), int(cmd[cmd.index("--save_steps") + 1])

    import yaml

    recipe = yaml.safe_load((REPO / "training/recipes/sft-smollm2-135m-cpu.yaml").read_text())
    per_step = recipe["per_device_train_batch_size"] * recipe["gradient_accumulation_steps"]
    assert per_step > 1 and sft_command() == (120 // per_step, 40 // per_step)  # > 1: else nothing is tested
    assert sft_command(extra_sft_args="--per_device_train_batch_size 2") == (120 // (2 * recipe[
        "gradient_accumulation_steps"]), 40 // (2 * recipe["gradient_accumulation_steps"]))
    assert sft_command(extra_sft_args="--per_device_train_batch_size 1 --gradient_accumulation_steps 8") == (15, 5)


def test_examples_are_steps_times_the_batch_record_beside_the_checkpoints(tmp_path):
    from poolbench_data.report.pilot import BATCH_RECORD, examples_seen

    run = tmp_path / "sft"
    ckpt = run / "checkpoint-30"
    ckpt.mkdir(parents=True)
    assert examples_seen(run) == 0  # not trained: no trainer_state.json
    (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": 30}))
    assert examples_seen(ckpt) is None  # steps known, batch unknown: never a guess
    (run / BATCH_RECORD).write_text(json.dumps({"examples_per_step": 4}))
    assert examples_seen(ckpt) == 120
    # 321 rows at 4 a step: 81 steps, the last of one row; the run saw 321, not 324 (the pilot said 324)
    (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": 30, "epoch": 30 / 81}))
    (run / "trainer_state.json").write_text(json.dumps({"global_step": 81, "epoch": 1.0}))
    (run / "train_results.json").write_text(json.dumps({"train_rows_kept": 321}))
    assert examples_seen(ckpt) == 120 and examples_seen(run) == 321
    (run / "trainer_state.json").write_text(json.dumps({"global_step": 100, "epoch": 100 / 81}))
    assert examples_seen(run) == 400  # into a second epoch: steps times the batch again
    # DPO writes its kept rows as train_pairs: 247 pairs at 4 a step are 62 steps, 247 pairs (the pilot said 248)
    dpo = tmp_path / "dpo"
    dpo.mkdir()
    (dpo / BATCH_RECORD).write_text(json.dumps({"examples_per_step": 4}))
    (dpo / "trainer_state.json").write_text(json.dumps({"global_step": 62, "epoch": 1.0}))
    (dpo / "train_results.json").write_text(json.dumps({"train_pairs": 247}))
    assert examples_seen(dpo) == 247


def test_the_script_is_the_librarys_command(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(REPO / "training" / "loop.py"), "--stages", "warmup", "--work_dir",
                           str(tmp_path / "w")], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert "--stages" in done.stderr and not (tmp_path / "w").exists()


def test_a_lora_checkpoint_is_served_merged_in_float32_with_its_update_whole(tiny_model, tmp_path):
    # The loop evaluates SFT checkpoints mid-run; their LoRA update is merged as the recipes merge theirs.
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from poolbench_data.finetune.loop import servable

    base = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32)
    model = get_peft_model(base, LoraConfig(r=4, target_modules=["q_proj"], init_lora_weights=False))
    with torch.no_grad():  # an update as small as a few training steps make: under bf16's spacing of the weights
        model.base_model.model.model.layers[0].self_attn.q_proj.lora_B["default"].weight.mul_(1e-3)
    ckpt = tmp_path / "checkpoint-3"
    model.save_pretrained(ckpt)
    AutoTokenizer.from_pretrained(tiny_model).save_pretrained(ckpt)
    layer = model.base_model.model.model.layers[0].self_attn.q_proj
    update = (layer.lora_B["default"].weight.float() @ layer.lora_A["default"].weight.float()) * layer.scaling["default"]
    want = layer.base_layer.weight.float() + update

    folder = servable(ckpt)
    merged = AutoModelForCausalLM.from_pretrained(folder)
    got = merged.model.layers[0].self_attn.q_proj.weight
    assert folder == ckpt / "merged" and merged.dtype == torch.float32 and merged.config.use_cache
    assert torch.allclose(got, want, rtol=0, atol=1e-7)
    # in bf16 much of it would round away
    bf16 = (layer.base_layer.weight.bfloat16() + update.bfloat16()).float() - layer.base_layer.weight.bfloat16().float()
    assert (bf16 == 0).float().mean() > 0.25 and (got != layer.base_layer.weight).float().mean() > 0.9
    assert servable(tiny_model) == tiny_model  # a full checkpoint is served as it is


def _gone(pid: int) -> bool:
    """No such process, or only its exit status left (a zombie nobody has reaped yet)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status


def test_a_stopped_loop_stops_its_stage_and_what_the_stage_started(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    # The stage starts a process of its own, as `poolbench eval` starts vLLM's engine; a SIGTERM to the loop
    # must end both (an orphaned evaluation would hold both cores for minutes after its loop is killed).
    pidfile, log = tmp_path / "pids", tmp_path / "stage.log"
    stage = [sys.executable, "-c", "import subprocess, sys, time; "
             "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
             f"open({str(pidfile)!r}, 'w').write(f'{{p.pid}}'); time.sleep(600)"]
    driver = ("import sys; from pathlib import Path; from poolbench_data.core.shutdown import terminate_as_exit; "
              "from poolbench_data.finetune.loop import _run\n"
              f"with terminate_as_exit(): _run({stage!r}, Path({str(log)!r}), Path('.'))")
    loop = subprocess.Popen([sys.executable, "-c", driver], cwd=REPO)
    deadline = time.monotonic() + 60
    while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    grandchild = int(pidfile.read_text())
    assert not _gone(grandchild)
    os.kill(loop.pid, signal.SIGTERM)
    assert loop.wait(timeout=60) == 128 + signal.SIGTERM
    deadline = time.monotonic() + 10
    while not _gone(grandchild) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(grandchild)


def test_a_resumed_loop_refuses_outputs_another_command_built(tmp_path, capsys):
    """A stage is skipped where its output exists, but only where the same command built it from the same inputs
    (finetune.stamps): resumed with other pair flags, a loop must not train DPO on the old pairs without a word."""
    from poolbench_data.core.errors import UserError

    loop = _loop()

    def runner(**flags):
        r = loop.Loop(loop.LoopArguments(track="tools", work_dir=str(tmp_path), samples=4, **flags))
        r.ran = []

        def run(cmd):  # the stage's output, as its command would leave it
            r.ran.append(cmd)
            if "builders/build_pairs.py" in cmd:
                (r.data / "data" / "pairs_tools").mkdir(parents=True)
            else:
                (tmp_path / "samples").mkdir()
                (tmp_path / "samples" / "llm_traces.jsonl").touch()

        r.run = run
        return r

    first = runner(extra_pairs_args="--tool_min_level_gap 1")
    first.samples(), first.pairs(), first.pairs(), first.samples()
    assert [c[1] for c in first.ran] == ["-m", "builders/build_pairs.py"]  # each ran once, then skipped
    again = runner(extra_pairs_args="--tool_min_level_gap 1")
    again.samples(), again.pairs()
    assert again.ran == []  # the same command from the same inputs: resumed
    with pytest.raises(UserError, match=r"stage pairs: .*pairs_tools is not what this run would build \(built with "
                                        r"--tool_min_level_gap 1, this run gives --tool_robust\)"):
        runner(extra_pairs_args="--tool_robust").pairs()
    with pytest.raises(UserError, match=r"stage eval_samples: .*temperature was 0\.8, now 1\.0"):
        runner(extra_pairs_args="--tool_min_level_gap 1", temperature=1.0).samples()
    assert "temperature: 1.0" not in (tmp_path / "configs" / "samples.yaml").read_text()  # still what built it
    first.stamps.record("eval_samples", {"rebuilt": True}, ("sft", "dataset"))  # the samples built again
    with pytest.raises(UserError, match=r"stage pairs: .*\(its input\(s\) eval_samples were rebuilt since\)"):
        runner(extra_pairs_args="--tool_min_level_gap 1").pairs()
    for stamp in (tmp_path / "stamps").iterdir():  # unstamped outputs (by hand, or no stamps kept): used
        stamp.unlink()
    unstamped = runner(extra_pairs_args="--tool_robust")
    unstamped.pairs()
    assert unstamped.ran == []
    # Through the command: one line, exit 2, before the stage runs.
    first.stamps.record("pairs", ["builders/build_pairs.py", "--other"], ("eval_samples", "dataset"))
    assert loop.main(["--track", "tools", "--work_dir", str(tmp_path), "--stages", "pairs"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: stage pairs: ") and len(err.splitlines()) == 1 and "Traceback" not in err


def test_a_pilots_time_is_the_sum_of_its_stages_not_the_hours_between(tmp_path):
    """A resumed pilot's minutes are its stages' seconds, which each stamp keeps (report.pilot.stage_minutes),
    not the time from its first stage to its JSON, which counts the hours it lay idle between stages."""
    import os

    from poolbench_data.report.pilot import stage_minutes, timing

    loop = _loop()
    r = loop.Loop(loop.LoopArguments(track="tools", work_dir=str(tmp_path), samples=4))
    ran = []
    r.run = lambda cmd: (ran.append(cmd), (r.data / "data" / "pairs_tools").mkdir(parents=True))
    r.pairs(), r.pairs()
    assert len(ran) == 1  # the time recorded is not part of what built it: resumed, not refused
    assert 0 <= json.loads((tmp_path / "stamps" / "pairs.json").read_text())["seconds"] < 60
    # A stamp without seconds (a version that keeps no times) counts from the stamp before it, or the loop's start.
    t0 = 1_700_000_000
    (tmp_path / ".started").touch()
    os.utime(tmp_path / ".started", (t0, t0))
    r.stamps.record("dataset", ["build"], ())
    os.utime(r.stamps.path("dataset"), (t0 + 120, t0 + 120))
    r.stamps.record("pairs", ["pairs"], ("dataset",), seconds=30)
    os.utime(r.stamps.path("pairs"), (t0 + 3 * 3600, t0 + 3 * 3600))  # resumed three hours later
    assert stage_minutes(tmp_path) == {"dataset": 2.0, "pairs": 0.5}
    assert timing(tmp_path) == {"wall_minutes": 2.5, "stage_minutes": {"dataset": 2.0, "pairs": 0.5}}
    (tmp_path / ".started").unlink()  # stages run by hand: the first one's time is unknown, so is the whole
    assert stage_minutes(tmp_path) == {"dataset": None, "pairs": 0.5} and timing(tmp_path)["wall_minutes"] is None
    assert timing(tmp_path / "nothing") == {"wall_minutes": None, "stage_minutes": {}}


def test_the_machine_names_its_cpu_and_its_bf16(tmp_path):
    from poolbench_data.report.pilot import cpu_name

    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum\nflags\t\t: fpu avx512_bf16 amx_bf16\n\n"
                    "processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Platinum\nflags\t\t: fpu avx512_bf16 amx_bf16\n")
    assert cpu_name(str(info)) == "Intel(R) Xeon(R) Platinum (AMX bf16)"
    info.write_text("model name\t: AMD EPYC\nflags\t\t: fpu avx512f avx512_bf16\n")
    assert cpu_name(str(info)) == "AMD EPYC (AVX-512 bf16)"
    info.write_text("model name\t: AMD EPYC 7B13\nflags\t\t: fpu avx2\n")
    assert cpu_name(str(info)) == "AMD EPYC 7B13 (no native bf16)"


# --- the run-out pilot (--game runout) ---

def test_the_runout_pilot_chains_its_builders_training_and_game_evaluations(tmp_path):
    from poolbench_data.config import read_yaml
    from poolbench_data.evaluation.config import EvalConfig

    loop = _loop()
    runner = loop.Loop(loop.LoopArguments(game="runout", work_dir=str(tmp_path), dpo_steps=0, game_eval_n=7,
                                          runout_demo_starts=30, position_pairs=12))
    ran = []
    runner.run = ran.append
    for stage in ("sft_data", "eval_start", "sft", "eval_sft", "pairs", "dpo", "eval_dpo"):
        runner.stage = stage
        getattr(runner, stage)()
    sft_data, start, sft, eval_sft, pairs, dpo, eval_dpo = ran
    assert sft_data[sft_data.index("--game") + 1] == "runout" and sft_data[sft_data.index("--runout_n") + 1] == "30"
    assert "--position" in pairs and pairs[pairs.index("--position_n") + 1] == "12"
    assert sft[sft.index("--config") + 1] == "training/recipes/sft-runout-smollm2-135m-cpu.yaml"
    assert dpo[dpo.index("--config") + 1] == "training/recipes/dpo-position-smollm2-135m-cpu.yaml"
    assert dpo[dpo.index("--model_name_or_path") + 1] == str(tmp_path / "sft" / "merged")
    configs = [EvalConfig(**read_yaml(c[c.index("--config") + 1], EvalConfig)) for c in (start, eval_sft, eval_dpo)]
    assert [(c.game, c.n, c.seed, c.name) for c in configs] == [("runout", 7, 0, n) for n in ("start", "sft", "dpo")]
    assert configs[0].baselines == loop.RUNOUT_BASELINES and configs[1].baselines == "heuristic"
    assert configs[2].model == str(tmp_path / "dpo" / "merged") and configs[2].out == str(tmp_path / "eval_dpo")


def test_the_runout_pilot_with_the_tool_builds_plays_and_trains_the_tool_configs(tmp_path):
    from poolbench_data.config import read_yaml
    from poolbench_data.evaluation.config import EvalConfig

    loop = _loop()
    runner = loop.Loop(loop.LoopArguments(game="runout", track="tools", tool_lines=True, work_dir=str(tmp_path)))
    ran = []
    runner.run = ran.append
    for stage in ("sft_data", "eval_start", "sft", "pairs", "dpo"):
        runner.stage = stage
        getattr(runner, stage)()
    sft_data, start, sft, pairs, dpo = ran
    assert sft_data[-3:] == ["runout", "--tools", "--tool_lines"]
    assert pairs[-2:] == ["--position_tools", "--tool_lines"] and "--position" in pairs
    assert sft[sft.index("--config") + 1] == "training/recipes/sft-runout-tools-smollm2-135m-cpu.yaml"
    assert dpo[dpo.index("--config") + 1] == "training/recipes/dpo-position-tools-smollm2-135m-cpu.yaml"
    config = EvalConfig(**read_yaml(start[start.index("--config") + 1], EvalConfig))
    assert (config.game, config.tools, config.tool_lines, config.max_model_len) == ("runout", True, True, 8192)
    assert runner.runout_configs() == ("sft_runout_tools", "pairs_position_tools")


def test_the_runout_pilots_json_pairs_each_stage_with_the_one_before_on_the_same_starts(tmp_path):
    """Three 'models' of stored answers on the same 3 starts: the JSON counts their balls and pairs them."""
    from poolbench_data.evaluation import EvalConfig, evaluate
    from poolbench_data.games.players import make_player
    from poolbench_data.games.step import rules_of, start_game
    from poolbench_data.protocol.prompts import format_action

    def oracle(k):
        state = start_game("runout", k)
        return format_action(make_player("runout", "oracle").decide(state).action, rules_of("runout").scenario(state))

    # an Oracle's first shot, then an answer that fouls (the visit ends on turn 2 at the latest)
    answers = {"start": {k: ["no idea"] for k in range(3)}, "sft": {0: [oracle(0), "x"], 1: ["x"], 2: [oracle(2), "x"]},
               "dpo": {k: [oracle(k), "x"] for k in range(3)}}
    for name, texts in answers.items():
        turns = tmp_path / f"{name}.jsonl"
        turns.write_text("".join(json.dumps({"player": name, "game": "runout", "episode": k, "sample": 0, "turn": t,
                                             "start": start_game("runout", k).start, "raw_response": text}) + "\n"
                                 for k, texts_k in texts.items() for t, text in enumerate(texts_k, 1)))
        evaluate(EvalConfig(game="runout", backend="replay", responses=str(turns), name=name, n=3, quiet=True,
                            baselines="heuristic" if name != "start" else "heuristic,oracle",
                            out=str(tmp_path / f"eval_{name}")))
    from poolbench_data.report.pilot import pilot_runout_result, runout_table

    result = pilot_runout_result(tmp_path, {"demonstrations": 30, "pairs": None})
    models = result["models"]
    assert [models[m]["balls"]["n"] for m in ("start", "sft", "dpo")] == [3, 3, 3]
    assert models["start"]["balls"]["mean"] == 0 and models["dpo"]["balls"]["mean"] > models["sft"]["balls"]["mean"]
    assert set(result["baselines"]) == {"heuristic", "oracle"}
    sft_vs_start, dpo_vs_sft = result["paired"]["sft_vs_start"], result["paired"]["dpo_vs_sft"]
    assert sft_vs_start["n"] == 3 and sft_vs_start["balls"]["a_more"] >= 1 and sft_vs_start["balls"]["b_more"] == 0
    assert dpo_vs_sft["balls"]["a_more"] >= 1 and "dpo_vs_oracle" in result["paired"]
    assert result["demonstrations_available"] == 30 and result["dpo_pairs_available"] is None
    assert result["answers"]["start"] == {"no-json": 3} and sum(result["answers"]["dpo"].values()) >= 4
    table = runout_table(result)
    assert "sft vs start" in table and "oracle" in table


def test_runout_pilot_arguments_are_one_line(capsys):
    loop = _loop()
    for argv, flag in ((["--game", "nineball"], "--game 'nineball'"),
                       (["--tool_lines"], "--tool_lines is read only with --game runout --track tools"),
                       (["--game", "runout", "--tool_lines"], "--tool_lines is read only with --game runout --track"),
                       (["--track", "runout"], "--track must be one of free_text, tools"),
                       (["--game", "runout", "--game_eval_n", "0"], "--game_eval_n"),
                       (["--game", "runout", "--stages", "samples"], "unknown stage(s) ['samples'] for --game runout")):
        assert loop.main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and flag in err, err
