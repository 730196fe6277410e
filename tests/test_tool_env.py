"""PoolBench as a TRL environment (`rl.env.PoolBenchEnv`): the tool a GRPO
rollout calls, the reward on its final action, and two GRPO steps through
TRL's `environment_factory` on the tiny model.

The tiny random model never writes a `<tool_call>`, so its rollouts end at
their first turn: the GRPO run proves the plumbing (a board dealt per rollout
from the dataset row, the template and parser TRL checks, the reward from the
environment), and the reward tests below feed the exact message shapes TRL's
tool loop produces (a turn with structured `tool_calls`, a `tool` turn, the
final answer).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from poolbench_data.core.records import Scenario, Shot
from poolbench_data.llm.tools import OVER_CAP, TOOL_NOTE, run_call, turn_result
from poolbench_data.rl.env import BOARD_COLUMNS, PoolBenchEnv, final_answer, tool_physics_reward, tool_prompts
from poolbench_data.demos.tools import find_pot

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = REPO / "training" / "templates" / "smollm2-chatml-tools.jinja"


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    from poolbench_data.hub.build import build_benchmark

    root = tmp_path_factory.mktemp("pbenv") / "poolbench"
    build_benchmark(root, eval_n=1, train_n=6, train_seed=5, players=("oracle",), progress=False)
    return root


@pytest.fixture(scope="module")
def tiny_model_4k(tiny_model, tmp_path_factory) -> Path:
    """The session's tiny model reading 4,096 positions (the weights do not depend on it: rotary positions).
    SmolLM2 reads 8,192; the tool paragraph with v3's kick puts the longest prompt here at ~2,040."""
    import json
    import shutil

    model = Path(shutil.copytree(tiny_model, tmp_path_factory.mktemp("tiny-4k") / "model"))
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps({**config, "max_position_embeddings": 4096}, indent=2))
    return model


@pytest.fixture(scope="module")
def boards(folder):
    from datasets import load_dataset

    return load_dataset(str(folder), "scenarios", split="train")


def dealt(row) -> PoolBenchEnv:
    env = PoolBenchEnv()
    assert env.reset(**row) is None  # the prompt already shows the board
    return env


def test_reset_deals_the_rows_board_and_the_tool_answers_as_the_evaluator(boards):
    for row in boards:
        env = dealt(row)
        s = Scenario.from_row({c: row[c] for c in BOARD_COLUMNS})
        assert env.scenario == s
        # calls_left counts down from the cap, a bad call counting too; past it a call is refused, not run, as
        # the evaluator refuses it (TRL's cap counts turns, and a turn may hold several calls)
        for ball, pocket, left in (("1", "rt", 2), ("12", "lb", 1), ("99", "rt", 0)):
            got = json.loads(env.ghost_ball(target_ball=ball, pocket=pocket))
            call = {"name": "ghost_ball", "arguments": {"target_ball": ball, "pocket": pocket}}
            assert got == turn_result(s, call, left) == {"calls_left": left, **run_call(s, call)}
        assert json.loads(env.ghost_ball(target_ball="1", pocket="rt")) == {"calls_left": 0, "error": OVER_CAP}
        assert len(env.calls) == 4 and "error" in env.calls[2]["result"]
        env.reset(**row)  # the pocket left out: the ball's report, as the evaluator answers that call
        got = json.loads(env.ghost_ball(target_ball="1"))
        assert got == turn_result(s, {"name": "ghost_ball", "arguments": {"target_ball": "1"}}, 2)
        assert env.calls[-1]["arguments"] == {"target_ball": "1"}
    env = PoolBenchEnv(max_calls=5)
    env.reset(**boards[0])
    assert json.loads(env.ghost_ball("1", "rt"))["calls_left"] == 4


def test_reset_without_a_board_names_the_columns():
    with pytest.raises(ValueError, match=r"missing \['cue_ball', 'balls'\]"):
        PoolBenchEnv().reset(id="pb1-000000", category="open", seed=1, prompt=[])
    with pytest.raises(RuntimeError, match="before reset"):
        PoolBenchEnv().ghost_ball("1", "rt")


def rollout(call: dict, result: str, answer: str) -> list[dict]:
    """A completion as TRL's tool loop leaves it: the parsed call turn, the tool's turn, the final answer."""
    return [{"role": "assistant", "tool_calls": [{"type": "function", "function": call}]},
            {"role": "tool", "name": "ghost_ball", "content": result},
            {"role": "assistant", "content": answer}]


def test_reward_is_the_physics_of_the_final_action(boards):
    completions, envs, want = [], [], []
    for row in boards:
        env = dealt(row)
        found = find_pot(env.scenario, Shot.from_row(row["oracle_shot"]))
        if found is None:
            continue
        ball, pocket, answer, _, _ = found
        call = {"name": "ghost_ball", "arguments": {"target_ball": ball, "pocket": pocket}}
        result = env.ghost_ball(**call["arguments"])
        completions += [rollout(call, result, answer),  # a legal pot: 3
                        rollout(call, result, "I would pot the " + ball),  # no action: 0
                        [{"role": "assistant", "content": answer.replace('"cue_speed": ', '"cue_speed": 0.1+')}],
                        rollout(call, result, '<tool_call>' + json.dumps(call) + '</tool_call>')]  # still calling
        envs += [env] * 4
        want += [3.0, 0.0, 0.0, 0.0]
    assert len(want) >= 8
    assert tool_physics_reward(completions, environments=envs) == want


def test_weighted_reward_scores_each_level_as_asked(boards):
    from poolbench_data.rl.env import weighted_reward

    completions, envs = [], []
    for row in boards:
        env = dealt(row)
        found = find_pot(env.scenario, Shot.from_row(row["oracle_shot"]))
        if found is not None:
            ball, pocket, answer, _, _ = found
            call = {"name": "ghost_ball", "arguments": {"target_ball": ball, "pocket": pocket}}
            completions += [rollout(call, env.ghost_ball(**call["arguments"]), answer), "I would pot the " + ball]
            envs += [env, env]
    reward = weighted_reward((0.5, 1.0, 2.0, 8.0))
    assert reward.__name__ == "tool_physics_reward"  # logged as the plain levels are
    assert completions and reward(completions, environments=envs) == [8.0, 0.5] * (len(completions) // 2)
    # A rollout that ends on a call: the unparseable level, or with unscored_calls None (TRL: no advantage).
    call = {"name": "ghost_ball", "arguments": {"target_ball": "1"}}
    calling = rollout(call, envs[0].ghost_ball("1"), "<tool_call>" + json.dumps(call) + "</tool_call>")
    assert reward([calling], environments=[envs[0]]) == [0.5]
    unscored = weighted_reward((0.5, 1.0, 2.0, 8.0), unscored_calls=True)
    assert unscored.__name__ == "tool_physics_reward"
    want = [8.0, 0.5] * (len(completions) // 2) + [None]
    assert unscored(completions + [calling], environments=envs + [envs[0]]) == want


def test_a_rollout_ending_on_a_call_as_trl_parses_it(boards):
    """TRL's parser takes the call out of the turn's text (`tool_calls`, content empty): the reward must see it
    there. Read from the text alone it would score as an empty answer, and `unscored_calls` would never
    apply."""
    pytest.importorskip("trl")
    from test_grpo import grpo
    from tiny_model import build_tokenizer
    from trl.chat_template_utils import parse_response

    from poolbench_data.rl.env import ends_on_call, weighted_reward

    tok = build_tokenizer()
    grpo.use_tool_template(tok, str(TEMPLATE))
    call = {"name": "ghost_ball", "arguments": {"target_ball": "1"}}
    head = [{"role": "user", "content": "shoot"}]
    turn = [{"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": call}]}]
    prefix = tok.apply_chat_template(head, tokenize=False, add_generation_prompt=True)
    text = tok.apply_chat_template(head + turn, tokenize=False)[len(prefix):]
    ids = tok(text, add_special_tokens=False)["input_ids"]
    parsed = parse_response(tok, ids, prefix=tok(prefix, add_special_tokens=False)["input_ids"])
    assert parsed["tool_calls"][0]["function"] == call and not parsed["content"]  # the shape the reward gets

    env = dealt(boards[0])
    ending = rollout(call, env.ghost_ball("1"), "x")[:2] + [parsed]  # answered once, then a call at the cap
    answered = rollout(call, env.ghost_ball("1"), '{"target_ball": "1"}')
    assert ends_on_call(ending) and not ends_on_call(answered) and not ends_on_call([parsed | {"tool_calls": []}])
    assert tool_physics_reward([ending], environments=[env]) == [0.0]
    assert weighted_reward((0.5, 1.0, 2.0, 8.0))([ending], environments=[env]) == [0.5]
    unscored = weighted_reward((0.5, 1.0, 2.0, 8.0), unscored_calls=True)
    assert unscored([ending, answered], environments=[env] * 2)[0] is None


def test_reward_levels_are_four_numbers_and_need_the_tool_env():
    pytest.importorskip("trl")
    from types import SimpleNamespace

    from test_grpo import grpo

    def levels(text, tool_env, unscored_calls=False):
        return grpo.reward_levels(SimpleNamespace(reward_levels=text, tool_env=tool_env,
                                                  unscored_calls=unscored_calls))

    assert levels("0,1,2,8", tool_env=True) == (0, 1, 2, 8)
    for text in ("0,1,2", "0,1,2,x", "0,1,2,nan", ""):
        with pytest.raises(ValueError, match=r"reward_levels=.*give 4 comma-separated numbers"):
            levels(text, tool_env=True)
    with pytest.raises(ValueError, match="reward_levels applies to tool_env: true only"):
        levels("0,1,2,8", tool_env=False)
    assert levels("0,1,2,3", tool_env=False) == (0, 1, 2, 3)
    with pytest.raises(ValueError, match="unscored_calls applies to tool_env: true only"):
        levels("0,1,2,3", tool_env=False, unscored_calls=True)


def test_final_answer_is_the_last_model_turn():
    assert final_answer([{"role": "assistant", "content": "a"}, {"role": "tool", "content": "t"},
                         {"role": "assistant", "content": "b"}]) == "b"
    assert final_answer("plain") == "plain" and final_answer([]) == ""


def test_tool_prompts_are_the_evaluators_tool_conversations(boards):
    rows = tool_prompts(boards)
    assert set(rows.column_names) == {"prompt", *BOARD_COLUMNS}
    for before, after in zip(boards, rows):
        assert after["prompt"][0]["content"] == before["prompt"][0]["content"] + TOOL_NOTE
        assert after["prompt"][1:] == before["prompt"][1:]


@pytest.mark.slow
def test_two_grpo_steps_through_environment_factory(folder, tiny_model_4k, tmp_path):
    pytest.importorskip("trl")
    from test_grpo import SMOKE_RECIPE, grpo

    model = tiny_model_4k
    argv = ["--config", str(SMOKE_RECIPE), "--model_name_or_path", str(model), "--dataset_name", str(folder),
            "--output_dir", str(tmp_path / "run"), "--dtype", "float32", "--max_completion_length", "8",
            "--max_steps", "2", "--learning_rate", "1e-3", "--lora_r", "4", "--seed", "0", "--disable_tqdm", "true",
            "--tool_env", "true", "--tool_chat_template", str(TEMPLATE), "--max_tool_calling_iterations", "2"]
    result = grpo.main(argv)
    assert result.global_step == 2 and math.isfinite(result.training_loss)
    steps = [e for e in result.log_history if "loss" in e]
    assert len(steps) == 2
    # The reward column is named after the function TRL was given: the environment's physics.
    assert all(e["rewards/tool_physics_reward/mean"] == 0.0 for e in steps)  # 8 random tokens never parse
    assert (result.merged_dir / "config.json").is_file()


def trace(board: str, level: str, status: str = "ok") -> dict:
    """An llm_traces.jsonl row's metric columns for one physics level."""
    pot, contact, foul = {"pot": (1, 1, 0), "contact": (0, 1, 0), "foul": (0, 0, 1), "none": (0, 0, 1)}[level]
    return {"scenario_id": board, "parse_status": status, "legal_contact": contact, "own_potted": pot, "foul": foul,
            "opp_or_8_potted": 0, "foul_reasons": ["not-fired"] if level == "none" else []}


def test_boards_with_spread_are_those_whose_samples_score_differently():
    from poolbench_data.rl.boards import boards_with_spread

    rows = [trace("a", "pot"), trace("a", "pot"), trace("b", "pot"), trace("b", "foul"), trace("c", "foul"),
            trace("c", "foul"), trace("d", "none"), trace("d", "contact")]
    assert boards_with_spread(rows, ["d", "c", "b", "a", "e"]) == {"d": [0.0, 2.0], "b": [3.0, 1.0]}
    with pytest.raises(ValueError, match=r"1 sampled boards are not train boards of this dataset \(e.g. 'a'\)"):
        boards_with_spread(rows, ["b", "c", "d"])
    with pytest.raises(ValueError, match=r"trace 2 \(board 'a'\): the request failed"):
        boards_with_spread([trace("a", "pot"), trace("a", "pot", "request-failed")], ["a"])
    with pytest.raises(ValueError, match=r"1 boards were sampled once \(e.g. 'b'\)"):
        boards_with_spread(rows[:3], ["a", "b"])


@pytest.mark.slow
def test_grpo_trains_on_the_boards_with_spread_only(folder, boards, tiny_model_4k, tmp_path, capsys, monkeypatch):
    pytest.importorskip("trl")
    from test_grpo import SMOKE_RECIPE, grpo

    from poolbench_data.finetune.common import command_line

    ids = boards["id"]
    samples = tmp_path / "samples"
    samples.mkdir()
    rows = [trace(ids[0], "pot"), trace(ids[0], "foul"), *(trace(b, "pot") for b in ids[1:] for _ in range(2))]
    (samples / "llm_traces.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    model = tiny_model_4k
    argv = ["--config", str(SMOKE_RECIPE), "--model_name_or_path", str(model), "--dataset_name", str(folder),
            "--output_dir", str(tmp_path / "run"), "--dtype", "float32", "--max_completion_length", "8",
            "--max_steps", "1", "--lora_r", "4", "--seed", "0", "--disable_tqdm", "true", "--tool_env", "true",
            "--tool_chat_template", str(TEMPLATE), "--max_tool_calling_iterations", "2"]
    dealt_ids = []
    real_reset = PoolBenchEnv.reset

    def recording_reset(self, **row):
        dealt_ids.append(row["id"])
        return real_reset(self, **row)

    monkeypatch.setattr(PoolBenchEnv, "reset", recording_reset)
    result = grpo.main(argv + ["--spread_from", str(samples), "--reward_levels", "0.5,1,2,3",
                               "--unscored_calls", "true"])
    assert result.metrics["train_boards"] == 1 and result.metrics["spread_from"] == str(samples)
    assert result.metrics["unscored_calls"] is True
    assert dealt_ids and set(dealt_ids) == {ids[0]}  # every rollout on the one board whose samples differed
    # The tiny model's 8 tokens never parse: level 0, rewarded as --reward_levels says.
    assert [e["rewards/tool_physics_reward/mean"] for e in result.log_history if "loss" in e] == [0.5]
    # Mistakes in the selection are one line and exit 2, before the model loads.
    (samples / "llm_traces.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[2:]))
    assert command_line(lambda: grpo.main(argv + ["--spread_from", str(samples)])) == 2
    assert "no board's samples scored differently" in capsys.readouterr().err
    assert command_line(lambda: grpo.main(argv + ["--spread_from", str(tmp_path / "nowhere")])) == 2
    err = capsys.readouterr().err
    assert "error: spread_from " in err and "nowhere/llm_traces.jsonl does not exist" in err


def test_a_template_that_drops_tool_calls_is_refused(tmp_path):
    pytest.importorskip("trl")
    from test_grpo import grpo
    from tiny_model import build_tokenizer

    plain = tmp_path / "plain.jinja"
    plain.write_text("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}")
    with pytest.raises(ValueError, match="does not render a tool call"):
        grpo.use_tool_template(build_tokenizer(), str(plain))
    with pytest.raises(FileNotFoundError, match="tool_chat_template"):
        grpo.use_tool_template(build_tokenizer(), str(tmp_path / "missing.jinja"))
    tok = build_tokenizer()
    grpo.use_tool_template(tok, str(TEMPLATE))
    assert tok.response_template is not None


def test_tool_recipes_parse_with_known_keys():
    pytest.importorskip("trl")
    from test_grpo import grpo

    recipe = REPO / "training" / "recipes" / "grpo-tools-smollm2-135m-cpu.yaml"
    script, training, model = grpo.make_parser().parse_args_and_config(args=["--config", str(recipe)])
    assert script.tool_env and (REPO / script.tool_chat_template).is_file()
    from poolbench_data.llm.tools import MAX_CALLS

    # The environment's calls_left counts down from this cap: the evaluator's, or GRPO's rollouts see other reports.
    assert training.max_tool_calling_iterations == MAX_CALLS and training.num_generations == 4
    # One board's rollouts are generated together and make one optimizer step, in passes of 2 (memory).
    assert training.generation_batch_size == training.num_generations == 4 and not model.use_peft
    assert training.per_device_train_batch_size * training.gradient_accumulation_steps == 4
