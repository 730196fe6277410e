"""Games as multi-turn TRL environments (rl.game_trl): the `shoot` tool against GameSession directly (the same
verdict as the evaluator's answer text), the rows GRPO trains on, the reward, and a GRPOTrainer step through
training/grpo.py on the tiny model, its calls forced by a sequence bias on generation so the tiny random model
plays real shots (the Oracle's) through TRL's tool loop."""

from __future__ import annotations

import inspect
import json
import math

import pytest

from poolbench_data.core.vocab import SOLIDS, STRIPES
from poolbench_data.games.players import make_player
from poolbench_data.games.step import rules_of
from poolbench_data.llm.observation import outcome_text
from poolbench_data.protocol.prompts import format_action
from poolbench_data.rl.game_env import GameSession
from poolbench_data.rl.game_trl import (
    GAME_COLUMNS,
    NineballContinuousEnvironment,
    NineballEnvironment,
    RunoutEnvironment,
    game_environment,
    game_prompts,
    game_reward,
    shoot_note,
)


def dealt(game: str, episode: int = 0, seed: int = 1, action: str | None = None, attempts: int = 15, **env):
    """An environment reset to a start, as TRL resets it with the row."""
    environment = game_environment(game, action, attempts, **env)()
    row = {"prompt": [], "game": game, "episode": episode, "seed": seed, "action": environment.session.action,
           "attempts": attempts}
    assert environment.reset(**row) is None  # the prompt already shows the table
    return environment


def session_at(game: str, episode: int = 0, seed: int = 1, action: str | None = None, attempts: int = 15,
               reward: str = "balls") -> GameSession:
    s = GameSession(game, action=action, attempts=attempts, reward=reward)
    s.reset(episode, seed)
    return s


def tool_result(turn) -> str:
    """What shoot answers after a turn: the next table, or the last outcome and the episode's end."""
    if not turn.done:
        return turn.observation
    return outcome_text(turn.state.last)


def oracle_arguments(state) -> dict:
    shot = make_player("runout", "oracle").decide(state).action
    return {"target_ball": shot.target_ball, "target_pocket": shot.target_pocket, "aim_angle_deg": shot.phi,
            "cue_speed": shot.V0, "a": shot.a, "b": shot.b}


def protocol_answer(state, arguments: dict) -> str:
    """The same action as the evaluator's JSON answer is usually written: the pocket as its [x, y] centre (the
    protocol's format_action), the numbers at full precision."""
    from poolbench_data.core.records import Shot

    shot = Shot(arguments["aim_angle_deg"], arguments["cue_speed"], target_ball=arguments["target_ball"],
                target_pocket=arguments["target_pocket"])
    written = json.loads(format_action(shot, rules_of("runout").scenario(state)))
    return json.dumps({**written, **{k: v for k, v in arguments.items() if k not in ("target_ball", "target_pocket")}})


# ------------------------------------------------------------------ shoot against GameSession

@pytest.mark.parametrize("reward", ["balls", "physics"])
def test_shoot_plays_a_runout_as_the_evaluator_reads_the_same_action(reward):
    """The Oracle's shots through `shoot`, and the same actions written as the evaluator's JSON answers through
    GameSession: the same table after every turn, the same results and rewards, until the visit ends."""
    for episode in (0, 1):
        env, s = dealt("runout", episode, reward=reward), session_at("runout", episode, reward=reward)
        while not s.done:
            arguments = oracle_arguments(s.state)
            got = env.shoot(**arguments)
            turn = s.step(protocol_answer(s.state, arguments))
            assert got.startswith(tool_result(turn)) and env.session.state == turn.state
            assert env.calls[-1]["parse_status"] == turn.parse_status and env.calls[-1]["reward"] == turn.reward
        assert env.total_reward == sum(s.rewards) and env.session.rewards == s.rewards
        assert got.endswith("Stop calling shoot.") and f"The episode is over ({s.state.end})" in got


@pytest.mark.parametrize("arguments, status", [
    ({"target_ball": "opponent", "target_pocket": "lb", "aim_angle_deg": 10.0, "cue_speed": 5.0}, "ok"),  # a foul
    ({"target_ball": "own", "target_pocket": "xx", "aim_angle_deg": 10.0, "cue_speed": 5.0}, "unknown-pocket"),
    ({"target_ball": "own", "target_pocket": "lb", "aim_angle_deg": 10.0, "cue_speed": 99.0}, "out-of-range"),
    ({"target_ball": "own", "target_pocket": "lb", "aim_angle_deg": "ten", "cue_speed": 5.0}, "non-numeric"),
    ({"target_ball": "own", "target_pocket": "lb", "aim_angle_deg": 10.0, "cue_speed": 5.0, "a": 0.9},
     "out-of-range"),
    ({"target_ball": "cue", "target_pocket": "lb", "aim_angle_deg": 10.0, "cue_speed": 5.0}, "unknown-ball"),
])
def test_a_runout_call_the_parser_refuses_is_the_evaluator_s_wasted_attempt(arguments, status):
    env, s = dealt("runout", 2), session_at("runout", 2)
    balls = {"own": next(b for b in s.state.object_ids if b in SOLIDS),
             "opponent": next(b for b in s.state.object_ids if b in STRIPES)}
    arguments = {**arguments, "target_ball": balls.get(arguments["target_ball"], arguments["target_ball"])}
    got = env.shoot(**arguments)
    turn = s.step(json.dumps(arguments))
    assert turn.parse_status == status and env.calls[0]["parse_status"] == status
    assert got.startswith(tool_result(turn)) and turn.done  # a run-out's foul, or its wasted attempt, ends the visit
    assert turn.state.end == "foul" and env.total_reward == sum(s.rewards) == 0.0


def test_shoot_plays_nineball_lines_and_continuous_strikes_as_the_evaluator():
    env, s = dealt("nineball-seeded", 3, attempts=4), session_at("nineball-seeded", 3, attempts=4)
    for (speed, spot), line in ((("High", "Middle Spin"), "speed: high, strikespot: middle spin"),
                                (("Fast", "Middle Spin"), "Speed: Fast, Strikespot: Middle Spin"),
                                (("Low", "Bottom Left Spin"), "**Speed: Low, Strikespot: Bottom Left Spin**"),
                                (("Medium", "Top Spin"), "Speed: Medium, Strikespot: Top Spin")):
        if s.done:
            break
        got, turn = env.shoot(speed, spot), s.step(line)
        assert got.startswith(tool_result(turn)) and env.calls[-1]["parse_status"] == turn.parse_status
    assert [c["parse_status"] for c in env.calls][:2] == ["ok", "out-of-range"]
    assert env.session.rewards == s.rewards

    env = dealt("nineball-seeded", 3, action="continuous", reward="physics")
    s = session_at("nineball-seeded", 3, action="continuous", reward="physics")
    for values in ((6.0, 0.1, -0.2), (40.0, 0.0, 0.0), (3.5, -0.3, 0.3)):
        got, turn = env.shoot(*values), s.step('{"cue_speed": %r, "a": %r, "b": %r}' % values)
        assert got.startswith(tool_result(turn)) and env.calls[-1]["reward"] == turn.reward
    assert [c["parse_status"] for c in env.calls] == ["ok", "out-of-range", "ok"] and env.calls[1]["reward"] == 0.0


def test_a_call_after_the_end_or_before_a_reset_plays_nothing_and_says_so():
    env = dealt("runout", 2)
    first = env.shoot("15", "lb", 10.0, 5.0)  # an opponent ball first: a foul ends the visit
    assert "The episode is over (foul) after 1 attempt. Stop calling shoot." in first
    state, rewards = env.session.state, list(env.session.rewards)
    again = env.shoot("1", "lb", 10.0, 5.0)
    assert again == "The episode is over (foul) after 1 attempt: this call played nothing. Stop calling shoot."
    assert env.session.state is state and env.session.rewards == rewards and len(env.calls) == 1
    fresh = game_environment("runout")()
    assert "not reset" in fresh.shoot("1", "lb", 10.0, 5.0) and fresh.calls == []


def test_each_game_s_tool_is_shoot_with_the_action_s_fields():
    from transformers.utils import get_json_schema

    for game, action, cls, required in (("runout", None, RunoutEnvironment,
                                         ["target_ball", "target_pocket", "aim_angle_deg", "cue_speed"]),
                                        ("nineball", "discrete", NineballEnvironment, ["speed", "strikespot"]),
                                        ("nineball-seeded", "continuous", NineballContinuousEnvironment,
                                         ["cue_speed", "a", "b"])):
        env = game_environment(game, action)()
        assert type(env) is cls
        # every public function of the class is a tool to TRL: shoot, and reset, which TRL calls itself
        public = {n for n, _ in inspect.getmembers(cls, predicate=inspect.isfunction) if not n.startswith("_")}
        assert public == {"reset", "shoot"}
        schema = get_json_schema(env.shoot)["function"]
        assert schema["name"] == "shoot" and schema["parameters"]["required"] == required


# ------------------------------------------------------------------ rows, reset, reward

def test_the_rows_are_the_evaluator_s_first_messages_with_the_tool_s_paragraph():
    rows = game_prompts("runout", n=3, seed=2)
    assert set(rows.column_names) == {"prompt", *GAME_COLUMNS}
    for k, row in enumerate(rows):
        system, user = session_at("runout", k, 2).messages()
        assert row["prompt"] == [{**system, "content": system["content"] + shoot_note("runout", "continuous")},
                                 user]
        assert (row["game"], row["episode"], row["seed"], row["action"], row["attempts"]) == \
            ("runout", k, 2, "continuous", 15)
    nine = game_prompts("nineball-seeded", n=1, attempts=4)[0]
    assert (nine["seed"], nine["action"]) == (1, "discrete")  # the training seed, DeepPHY's line by default
    assert "Attempt 1 of 4." in nine["prompt"][1]["content"]
    assert "(speed and strikespot)" in nine["prompt"][0]["content"]


@pytest.mark.parametrize("call, names", [
    (lambda: game_prompts("runout", n=2, seed=0), "seed 0 is the evaluation's seed"),
    (lambda: game_prompts("nineball", n=2), "game 'nineball' deals the evaluation's one rack"),
    (lambda: game_prompts("runout", n=0), "n is 0"),
    (lambda: game_prompts("pool", n=1), "game 'pool' is not a game"),
    (lambda: game_prompts("runout", n=1, action="discrete"), "action 'discrete' is DeepPHY's nine-ball answer line"),
    (lambda: game_environment("runout", reward="style"), "reward 'style': choose from balls, success, physics"),
    (lambda: game_environment("nineball", attempts=0), "attempts is 0"),
])
def test_bad_arguments_are_one_value_error_naming_them(call, names):
    with pytest.raises(ValueError) as err:
        call()
    assert names in str(err.value) and "\n" not in str(err.value)


def test_reset_deals_the_row_s_start_and_refuses_another_game_s_row():
    env = dealt("runout", 4, seed=7)
    assert env.session.state == session_at("runout", 4, 7).state and env.calls == []
    with pytest.raises(ValueError, match=r"missing \['action', 'attempts'\]"):
        env.reset(game="runout", episode=0, seed=1)
    row = game_prompts("nineball-seeded", n=1)[0]
    with pytest.raises(ValueError, match="the row's game is 'nineball-seeded', this environment's 'runout'"):
        env.reset(**row)
    with pytest.raises(ValueError, match="the row's attempts is 15, this environment's 3"):
        game_environment("nineball-seeded", attempts=3)().reset(**row)


def test_the_reward_is_each_episode_s_sum():
    played = dealt("runout", 0)
    played.shoot(**oracle_arguments(played.session.state))
    idle = dealt("runout", 1)
    assert game_reward([[], []], environments=[played, idle]) == [1.0, 0.0]
    assert played.total_reward == sum(played.session.rewards) == 1.0
    with pytest.raises(RuntimeError, match="never reset"):
        game_reward([[]], environments=[game_environment("runout")()])


# ------------------------------------------------------------------ GRPO through training/grpo.py

RECIPE = "training/recipes/grpo-runout-smollm2-135m-cpu.yaml"


@pytest.fixture(scope="module")
def tiny_model_4k(tiny_model, tmp_path_factory):
    """The session's tiny model reading 4,096 positions (rotary positions: the weights do not depend on it): a
    run-out prompt and a table the tool answers with fit, as they would SmolLM2's 8,192."""
    import shutil

    model = shutil.copytree(tiny_model, tmp_path_factory.mktemp("tiny-4k") / "model")
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps({**config, "max_position_embeddings": 4096}))
    return model


def forced_call(tokenizer, arguments: dict) -> list:
    """generate()'s sequence_bias making the model write one `shoot` call and end its turn: each prefix of the
    call's tokens biases its last token, the longer prefix more, so the call comes out whole whatever the weights."""
    text = '<tool_call>{"name": "shoot", "arguments": ' + json.dumps(arguments) + "}</tool_call><|im_end|>"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return [[ids[:j + 1], 100.0 * (j + 1)] for j in range(len(ids))]


@pytest.mark.slow
def test_a_grpo_step_plays_the_rows_episode_through_shoot(tiny_model_4k, tmp_path, monkeypatch):
    pytest.importorskip("trl")
    from test_grpo import grpo
    from transformers import AutoTokenizer

    from poolbench_data.rl.game_trl import GameEnvironment

    arguments = oracle_arguments(session_at("runout", 0, 1).state)
    bias = forced_call(AutoTokenizer.from_pretrained(tiny_model_4k), arguments)
    dealt_rows, scored = [], []
    real_reset = GameEnvironment.reset

    def recording_reset(self, **row):
        dealt_rows.append({c: row[c] for c in GAME_COLUMNS})
        return real_reset(self, **row)

    def recording_reward(completions, environments, **kwargs):
        rewards = game_reward(completions, environments, **kwargs)
        scored.extend((c, list(e.calls), r) for c, e, r in zip(completions, environments, rewards))
        return rewards

    recording_reward.__name__ = "game_reward"
    monkeypatch.setattr(GameEnvironment, "reset", recording_reset)
    argv = ["--config", RECIPE, "--model_name_or_path", str(tiny_model_4k), "--output_dir", str(tmp_path / "run"),
            "--dtype", "float32", "--max_steps", "1", "--lora_r", "4", "--seed", "0", "--disable_tqdm", "true",
            "--game_episodes", "1", "--max_tool_calling_iterations", "2", "--generation_kwargs",
            json.dumps({"sequence_bias": bias})]
    result = grpo.main(argv, reward_funcs=[recording_reward])
    assert result.global_step == 1 and math.isfinite(result.training_loss)
    assert result.metrics["game"] == "runout" and result.metrics["train_episodes"] == 1
    # both rollouts of the step were dealt the row's start
    assert dealt_rows == [{"game": "runout", "episode": 0, "seed": 1, "action": "continuous", "attempts": 15}] * 2
    assert len(scored) == 2
    for completion, calls, reward in scored:
        # every call the model made reached the game with its arguments, written as the evaluator's answer
        assert calls and all(c["arguments"] == arguments for c in calls)
        replayed = session_at("runout", 0, 1)
        turns = [replayed.step(c["answer"]) for c in calls]
        assert [c["parse_status"] for c in calls] == [t.parse_status for t in turns]
        assert reward == sum(replayed.rewards) == 1.0  # the Oracle's pot; the same shot again is a foul
        results = [m["content"] for m in completion if m["role"] == "tool"]
        assert results and results[0] == turns[0].observation  # the tool's answer is the next table
    step = next(e for e in result.log_history if "loss" in e)
    assert step["rewards/game_reward/mean"] == 1.0 and step["tools/call_frequency"] >= 1


def test_game_settings_belong_to_a_game_run_and_its_mistakes_name_the_recipe_key(tmp_path, capsys):
    pytest.importorskip("trl")
    from test_grpo import grpo

    from poolbench_data.finetune.common import command_line

    base = ["--config", RECIPE, "--output_dir", str(tmp_path / "run"), "--model_name_or_path", str(tmp_path / "none")]
    for extra, names in ((["--game_seed", "0"], "error: game_seed 0 is the evaluation's seed"),
                         (["--game", "nineball"], "game 'nineball' deals the evaluation's one rack"),
                         (["--game_action", "discrete"], "game_action 'discrete' is DeepPHY's nine-ball answer"),
                         (["--tool_env", "true"], "tool_env is a setting of the single shot, not read with game: "
                                                  "runout"),
                         (["--game", "shot", "--game_reward", "success"], "game_reward is read only with a game"),
                         (["--eval_strategy", "steps"], "eval_strategy: a game trains on its starts only")):
        assert command_line(lambda: grpo.main(base + extra)) == 2, extra
        assert names in capsys.readouterr().err, extra
