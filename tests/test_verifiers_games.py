"""Games as multi-turn verifiers environments (`load_environment(game=...)`, `vf-eval poolbench --env.taskset.game
G`): each rollout is one episode, every answer played through rl.game_env.GameSession, and the verdict turn by
turn is `poolbench eval --game`'s on the same answers (its replay backend). `vf-eval` runs for real: against a
loopback server of scripted answers (good ones, malformed ones and junk, chosen by the table each request shows),
and against the embedded model on the project's loopback vLLM server (the `served_model` fixture), its text forced
to the Oracle's answer by guided decoding so the episode goes past its first turn."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("verifiers")

import verifiers.v1 as vf  # noqa: E402

from poolbench_data.cli.verifiers_env import (  # noqa: E402
    GAME_METRICS,
    RUNOUT_METRICS,
    answer_text,
    game_metrics,
    load_environment,
)
from poolbench_data.core.vocab import SOLIDS  # noqa: E402
from poolbench_data.evaluation import EvalConfig, evaluate  # noqa: E402
from poolbench_data.games.players import make_player  # noqa: E402
from poolbench_data.games.step import rules_of  # noqa: E402
from poolbench_data.protocol.prompts import format_action  # noqa: E402
from poolbench_data.rl.game_env import GameSession  # noqa: E402

VF_EVAL = str(Path(sys.executable).with_name("vf-eval"))
JUNK = "I would hit it hard."
# Per episode, what each turn answers: "oracle" is the greedy Oracle's shot on the table the turn shows.
RUNOUT_PLANS = {0: ["oracle", "oracle", JUNK], 1: ['{"target_ball": "1"}']}
NINEBALL_PLANS = {0: ["Speed: High, Strikespot: Middle Spin.", JUNK, "Speed: Low, Strikespot: Top Spin"],
                  1: ["Speed: Medium, Strikespot: Bottom Spin", "Speed: Very High, Strikespot: Top Spin", ""]}


def oracle_answer(state) -> str:
    """The greedy Oracle's shot on a run-out table, as the protocol's JSON action with its spin."""
    shot = make_player("runout", "oracle").decide(state).action
    return json.dumps({**json.loads(format_action(shot, rules_of("runout").scenario(state))), "a": shot.a,
                       "b": shot.b})


def scripted(game: str, plans: dict, seed: int, attempts: int = 15) -> dict[str, str]:
    """{observation: answer}: each episode's plan played through GameSession, keyed by the table each turn shows
    (a request's last user message), so a server can answer every request of every turn."""
    by_observation = {}
    for k, plan in plans.items():
        session = GameSession(game, attempts=attempts)
        shown = session.reset(k, seed)
        for step in plan:
            answer = oracle_answer(session.state) if step == "oracle" else step
            by_observation[shown] = answer
            turn = session.step(answer)
            if turn.done:
                break
            shown = turn.observation
    return by_observation


def vf_eval(tmp_path: Path, url: str, model: str, *args: str, forced: str | None = None) -> list[dict]:
    """`vf-eval poolbench ...` against the server at `url`; its traces by episode. `forced`: the one text guided
    decoding allows (a TOML config's sampling.structured_outputs, which vf-eval sends with every request)."""
    import tomli_w

    extra = []
    if forced is not None:
        config = tmp_path / "forced.toml"
        config.write_text(tomli_w.dumps({"sampling": {"structured_outputs": {"choice": [forced]}}}))
        extra = ["@", str(config)]
    out = tmp_path / "vf"
    done = subprocess.run([VF_EVAL, "poolbench", "-m", model, "--client.base-url", url, "--no-push", "--no-rich",
                           "-o", str(out), *args, *extra], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    (traces_file,) = out.glob("*/traces.jsonl")
    traces = [t for line in traces_file.read_text().splitlines() for t in json.loads(line)["traces"]]
    assert traces and all(t["ok"] for t in traces), [t.get("errors") for t in traces]
    return sorted(traces, key=lambda t: t["task"]["data"]["episode"])


def answers_of(trace: dict) -> list[str]:
    """The model's answers, turn by turn, as the evaluator reads each."""
    return [answer_text(m) for m in vf.Trace.model_validate(trace).assistant_messages]


def sent_observations(trace: dict) -> list[str]:
    """The user message of each turn's request: the table the answer was given to."""
    return [n["message"]["content"] for n in trace["nodes"] if n["message"]["role"] == "user"]


def replay(tmp_path: Path, game: str, traces: list[dict], seed: int, **settings) -> dict:
    """`poolbench eval --game G --backend replay` on the traces' answers: its turn rows by (episode, turn) and its
    episode rows by episode."""
    stored = tmp_path / "turns.jsonl"
    with open(stored, "w") as f:
        for t in traces:
            k = t["task"]["data"]["episode"]
            start = _state(game, k, seed).start
            for turn, text in enumerate(answers_of(t), 1):
                f.write(json.dumps({"player": "stored", "game": game, "episode": k, "sample": 0, "turn": turn,
                                    "start": start, "raw_response": text}) + "\n")
    result = evaluate(EvalConfig(game=game, backend="replay", responses=str(stored), name="stored", n=len(traces),
                                 seed=seed, baselines="random" if game == "runout" else "mock",
                                 out=str(tmp_path / "replay"), quiet=True, **settings))
    turns = {(r["episode"], r["turn"]): r for r in result.turn_rows}
    episodes = {r["episode"]: r for r in result.episode_rows if r["player"] == "stored"}
    return {"turns": turns, "episodes": episodes}


def _state(game: str, episode: int, seed: int):
    session = GameSession(game)
    session.reset(episode, seed)
    return session.state


def expected_reward(reward: str, row: dict) -> float:
    """A turn's reward (balls or physics) from the evaluator's row, by the definitions in rl.game_env's
    docstring."""
    potted, clean, end = row["potted"], row["clean"], row["end"]
    if reward == "physics":
        return 0.0 if row["shot"] is None else 1.0 if row["foul_reasons"] else 3.0 if clean else 2.0
    if not clean:
        return 0.0
    if row["game"] == "runout":
        return float(sum(b in SOLIDS or (b == "8" and end == "won") for b in potted))
    return float(len(potted))


def assert_played_as_poolbench_eval(tmp_path: Path, game: str, traces: list[dict], seed: int, reward: str,
                                    history: str = "full", **settings) -> dict:
    """Turn by turn, the trace's verdicts are the evaluator's on the same answers: the table each answer was given
    (the observation the evaluator sends), its parse status, the balls potted, the fouls, the end and the reward;
    the rollout's reward is their sum and its metrics the episode's."""
    rows = replay(tmp_path, game, traces, seed, **settings)
    for t in traces:
        k, record = t["task"]["data"]["episode"], t["info"]["game"]
        turns, answers, sent = record["turns"], answers_of(t), sent_observations(t)
        assert len(turns) == len(answers) == len(sent) and record["done"], k
        for i, (turn, answer, shown) in enumerate(zip(turns, answers, sent), 1):
            row = rows["turns"][(k, i)]
            assert row["raw_response"] == answer and row["observation"] == shown, (k, i)
            assert {f: turn[f] for f in ("attempt", "parse_status", "potted", "foul_reasons", "clean", "end")} == \
                {f: row[f] for f in ("attempt", "parse_status", "potted", "foul_reasons", "clean", "end")}, (k, i)
            assert turn["fired"] == (row["shot"] is not None)
            assert turn["reward"] == expected_reward(reward, row), (k, i)
        assert (k, len(turns) + 1) not in rows["turns"]  # the evaluator's episode ended on the same turn
        episode = rows["episodes"][k]
        assert (record["success"], record["attempts"], record["end"]) == \
            (episode["success"], episode["attempts"], episode["end"])
        assert t["rewards"] == {reward: {"score": sum(expected_reward(reward, rows["turns"][(k, i)])
                                                      for i in range(1, len(turns) + 1)), "weight": 1.0}}
        metrics = game_metrics(game, record)
        assert {m: t["metrics"][m] for m in metrics} == metrics
        assert metrics["attempts"] == len(turns) and metrics["success"] == float(episode["success"])
        if history == "full":  # the conversation so far: every earlier answer and table in the last request
            last = [n["message"] for n in t["nodes"] if n["message"]["role"] in ("user", "assistant")]
            assert [m["role"] for m in last] == ["user", "assistant"] * len(turns)
    return rows


# ------------------------------------------------------------------ no model

@pytest.mark.parametrize("game, action", [("runout", "continuous"), ("nineball", "discrete"),
                                          ("nineball-seeded", "continuous")])
def test_each_task_is_an_episode_s_start_with_the_evaluator_s_first_messages(game, action):
    args = {"action": action} if game != "runout" else {}
    env = load_environment(game=game, n=3, seed=4, attempts=5, **args)
    tasks = list(env.taskset)
    assert env.config.taskset.reward == "balls"  # a game's default reward, recorded with the run's config
    session = GameSession(game, action=action, attempts=5)
    for k, task in enumerate(tasks):
        session.reset(k, 4)
        system, user = session.messages()
        assert (task.data.system_prompt, task.data.prompt) == (system["content"], user["content"])
        assert (task.data.episode, task.data.seed, task.data.game, task.data.action, task.data.attempts) == \
            (k, 4, game, action, 5)
    assert len({t.key for t in tasks}) == 3  # nineball's one rack in every episode: still three tasks
    assert load_environment(n=1).config.taskset.reward == "clean_pot"  # the single shot's default is unchanged


def test_a_training_environment_defaults_to_the_train_seed():
    (task,) = list(load_environment(game="runout", n=1, train=True).taskset)
    assert task.data.seed == 1 and task.data.name == "runout episode 0 (pb1-000000)"


@pytest.mark.parametrize("kwargs, names", [
    ({"game": "chess"}, "game 'chess' is unknown; choose shot or a game"),
    ({"game": 3}, "game is 3; give shot or a game"),
    ({"game": "runout", "reward": "clean_pot"}, "reward 'clean_pot' scores a single shot; a game takes balls"),
    ({"game": "runout", "reward": "style"}, "reward 'style': choose from balls, success, physics"),
    ({"reward": "balls"}, "reward 'balls' is a game's reward; add game"),
    ({"action": "continuous"}, "action is read only with a game"),
    ({"attempts": 3}, "attempts is read only with a game"),
    ({"history": "current"}, "history is read only with a game"),
    ({"game": "runout", "track": "tools"}, "track is a setting of the single shot (game='shot'), not read with "
                                           "game='runout'"),
    ({"game": "runout", "dataset_dir": "/tmp"}, "dataset_dir is a setting of the single shot"),
    ({"game": "runout", "max_calls": 2}, "max_calls is a setting of the single shot"),
    ({"game": "runout", "action": "discrete"}, "action 'discrete' is DeepPHY's nine-ball answer line"),
    ({"game": "nineball", "action": "line"}, "action 'line': choose from discrete, continuous"),
    ({"game": "nineball", "action": 2}, "action is 2; give discrete or continuous"),
    ({"game": "runout", "attempts": 0}, "attempts is 0; give a whole number from 1 to 100"),
    ({"game": "runout", "attempts": True}, "attempts is True; give a whole number from 1 to 100"),
    ({"game": "runout", "history": "all"}, "history 'all' is unknown; choose current or full"),
    ({"game": "runout", "n": 0}, "n is 0; give a whole number of episodes"),
    ({"game": "runout", "seed": 2**40}, "seed is 1099511627776; give a whole number from 0 to 2**32 - 1"),
    ({"game": "runout", "train": True, "seed": 0}, "seed 0 is the evaluation's seed"),
    ({"game": "nineball", "train": True}, "game 'nineball' deals the evaluation's one rack in every episode"),
])
def test_bad_arguments_are_one_value_error_naming_them(kwargs, names):
    with pytest.raises(ValueError) as err:
        load_environment(**kwargs)
    assert names in str(err.value) and "\n" not in str(err.value)


def test_vf_eval_refuses_a_bad_game_before_any_rollout(tmp_path):
    # No server at this URL: a run that got past the arguments would fail on the connection instead.
    done = subprocess.run([VF_EVAL, "poolbench", "--env.taskset.game", "runout", "--env.taskset.seed", "0",
                           "--env.taskset.train", "true", "-m", "m", "--client.base-url", "http://127.0.0.1:9/v1",
                           "--no-push", "--no-rich", "-o", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "seed 0 is the evaluation's seed" in done.stdout + done.stderr
    assert not list(tmp_path.glob("out/*/traces.jsonl"))


def test_the_metrics_are_the_episode_s():
    record = {"turns": [{"balls": 2, "foul_reasons": [], "fired": True},
                        {"balls": 0, "foul_reasons": ["not-fired", "no-json"], "fired": False}],
              "attempts": 2, "success": False, "end": "foul", "done": True}
    assert game_metrics("runout", record) == {"balls": 2.0, "success": 0.0, "attempts": 2.0, "fouls": 1.0,
                                              "unplayable": 1.0, "run_out": 0.0, "eight_early": 0.0}
    assert set(game_metrics("nineball", record)) == set(GAME_METRICS)
    assert set(game_metrics("runout", record)) == set(GAME_METRICS + RUNOUT_METRICS)


# ----------------------------------------- vf-eval against a server of scripted answers

@pytest.fixture
def scripted_server():
    """A loopback server answering each request by the table it shows (`server.answers`: observation -> answer);
    a table the script does not know is answered "unknown table" and recorded."""
    from test_experiments import recording_server

    unknown = []

    def reply(messages):
        shown = messages[-1]["content"]
        if shown not in server.answers:
            unknown.append(shown)
        return server.answers.get(shown, "unknown table")

    with recording_server(reply) as (url, server):
        server.answers = {}
        yield url, server
    assert not unknown, f"{len(unknown)} requests showed a table the script did not play to"


@pytest.mark.slow
def test_vf_eval_plays_runouts_turn_by_turn_as_poolbench_eval(scripted_server, tmp_path):
    url, server = scripted_server
    server.answers = scripted("runout", RUNOUT_PLANS, seed=0)
    traces = vf_eval(tmp_path, url, "m", "--env.taskset.game", "runout", "--env.taskset.n", "2")
    assert [len(t["info"]["game"]["turns"]) for t in traces] == [len(p) for p in RUNOUT_PLANS.values()]
    rows = assert_played_as_poolbench_eval(tmp_path, "runout", traces, 0, "balls")
    first = traces[0]["info"]["game"]["turns"]
    # the Oracle's shots potted cleanly, the junk ended the visit as a foul; the malformed action too
    assert [t["parse_status"] for t in first] == ["ok", "ok", "no-json"] and first[-1]["end"] == "foul"
    assert traces[0]["metrics"]["balls"] == traces[0]["rewards"]["balls"]["score"] >= 2
    assert rows["turns"][(1, 1)]["parse_status"] == "missing-field" and traces[1]["metrics"]["unplayable"] == 1.0
    # each request of the first episode's turns holds the conversation so far (history full)
    assert [len(r["messages"]) for r in server.requests if r["messages"][1]["content"] ==
            traces[0]["task"]["data"]["prompt"]] == [2, 4, 6]


@pytest.mark.slow
def test_vf_eval_plays_nineball_with_the_current_table_and_the_physics_reward(scripted_server, tmp_path):
    url, server = scripted_server
    server.answers = scripted("nineball-seeded", NINEBALL_PLANS, seed=3, attempts=3)
    traces = vf_eval(tmp_path, url, "m", "--env.taskset.game", "nineball-seeded", "--env.taskset.n", "2",
                     "--env.taskset.seed", "3", "--env.taskset.attempts", "3", "--env.taskset.history", "current",
                     "--env.taskset.reward", "physics")
    assert_played_as_poolbench_eval(tmp_path, "nineball-seeded", traces, 3, "physics", history="current",
                                    attempts=3)
    statuses = [t["parse_status"] for tr in traces for t in tr["info"]["game"]["turns"]]
    assert {"ok", "no-json", "out-of-range", "empty"} <= set(statuses)  # wasted attempts, each as the evaluator's
    assert all(len(r["messages"]) == 2 for r in server.requests)  # the system prompt and the table now


# ------------------------------------------------- vf-eval against the served model

@pytest.mark.slow
class TestOnTheServer:
    """`vf-eval poolbench --env.taskset.game runout` against the run's loopback server (the `served_model`
    fixture)."""

    def test_the_served_model_plays_runouts_to_their_end(self, served_model, tmp_path):
        url, name = served_model
        answer = oracle_answer(_state("runout", 0, 0))
        traces = vf_eval(tmp_path, url, name, "--env.taskset.game", "runout", "-n", "2", forced=answer)
        assert len(traces) == 2
        for t in traces:
            assert answers_of(t) and set(answers_of(t)) == {answer} and t["info"]["game"]["done"]
        assert_played_as_poolbench_eval(tmp_path, "runout", traces, 0, "balls")
        # the Oracle's first shot pots on its own board, so that visit went on to a second turn
        assert traces[0]["info"]["game"]["turns"][0]["clean"] and len(traces[0]["info"]["game"]["turns"]) >= 2

