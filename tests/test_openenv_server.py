"""The OpenEnv server (`poolbench serve-env`, rl.server) as a real process on a loopback port the system picks,
played with OpenEnv's own client (openenv's EnvClient over the WebSocket /ws: PoolEnvClient) and over HTTP
(OpenEnv's stateless /reset, /step, /state, and OpenEnv's own validator of a running server). Every verdict is
compared with GameSession's (ShotSession's, and score_completion's, for the single shot) on the same answers:
the evaluator's. Bad input is refused with a reason and changes nothing; a server is always stopped.
"""

from __future__ import annotations

import json
import math
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("openenv")

from poolbench_data.rl.game_env import GameSession  # noqa: E402
from poolbench_data.rl.shot_env import ShotSession  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
ENV_DIR = REPO / "envs" / "poolbench_env"
URL = re.compile(r"at (http://127\.0\.0\.1:\d+) ")
NINE = ["Speed: High, Strikespot: Middle Spin", "Speed: Low, Strikespot: Top Spin", "no idea",
        "Speed: Medium, Strikespot: Bottom Left Spin"]


# ------------------------------------------------------------------ servers


def _lines(proc) -> queue.Queue:
    q: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [q.put(x) for x in iter(proc.stdout.readline, "")], daemon=True).start()
    return q


def _wait_for(q: queue.Queue, pattern: re.Pattern, timeout: float = 180.0):
    end, seen = time.monotonic() + timeout, ""
    while True:
        try:
            seen += q.get(timeout=max(0.01, end - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"waited {timeout:.0f} s for {pattern.pattern!r}; the server printed:\n{seen}")
        if m := pattern.search(seen):
            return m


def _stop(proc) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)


@contextmanager
def serving(*flags: str):
    """`poolbench serve-env --port 0 [flags]` as a process: its URL; stopped on exit, whatever happened."""
    proc = subprocess.Popen([sys.executable, "-m", "poolbench_data.cli", "serve-env", "--port", "0", *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO)
    try:
        yield proc, _wait_for(_lines(proc), URL).group(1)
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def server():
    with serving("--max_sessions", "16") as (proc, url):
        yield proc, url
    assert proc.returncode is not None  # stopped


@pytest.fixture
def client(server):
    from poolbench_data.rl.openenv_client import PoolEnvClient

    env = PoolEnvClient(base_url=server[1]).sync()
    with env:
        yield env


# ------------------------------------------------------------------ solo runs: the evaluator's verdicts


def solo(game: str, episode: int, seed: int, answers=None, **kw) -> dict:
    """GameSession (ShotSession) alone on the start: its first observation and each turn. `answers` None: the
    greedy Oracle's answers (runout: written as a model answers, demos.runout.answer; shot: the protocol's JSON)."""
    session = ShotSession() if game == "shot" else GameSession(game, **kw)
    first = session.reset(episode, seed)
    turns, given = [], []
    while not session.done and (answers is None or len(given) < len(answers)):
        text = answers[len(given)] if answers is not None else _oracle_answer(session)
        given.append(text)
        t = session.step(text)
        turns.append({"text": t.observation, "reward": t.reward, "done": t.done, "parse_status": t.parse_status,
                      "outcome": t.outcome})
    return {"first": first, "system": session.system_prompt, "answers": given, "turns": turns,
            "rewards": list(session.rewards)}


def _oracle_answer(session) -> str:
    from poolbench_data.demos.runout import answer
    from poolbench_data.games.players import make_player
    from poolbench_data.players.baselines import oracle
    from poolbench_data.protocol.prompts import format_action

    if isinstance(session, ShotSession):
        return format_action(oracle(session.scenario).shot, session.scenario)
    return answer(session.state, make_player("runout", "oracle").decide(session.state).action)


def played(env, game: str, episode: int, seed: int, answers, **kw) -> dict:
    """The same start and answers through the server: what solo() returns, and the final state."""
    from poolbench_data.rl.server import PoolAction

    first = env.reset(game=game, episode=episode, seed=seed, **kw)
    assert first.reward is None and not first.done
    turns = []
    for text in answers:
        r = env.step(PoolAction(answer=text))
        o = r.observation
        turns.append({"text": o.text, "reward": r.reward, "done": r.done, "parse_status": o.parse_status,
                      "outcome": o.outcome})
    return {"first": first.observation.text, "system": first.observation.system_prompt, "answers": list(answers),
            "turns": turns, "state": env.state()}


def same(served: dict, alone: dict) -> None:
    assert {k: served[k] for k in ("first", "system", "answers", "turns")} == \
           {k: alone[k] for k in ("first", "system", "answers", "turns")}
    state = served["state"]
    assert state.rewards == alone["rewards"] and state.played == len(alone["rewards"])
    assert state.total == sum(alone["rewards"]) and state.done == alone["turns"][-1]["done"]


# ------------------------------------------------------------------ episodes


def test_episodes_over_the_websocket_get_the_evaluators_rewards(client):
    from poolbench_data.rl.reward import score_completion

    starts = [("runout", 0, 0, None, {}), ("runout", 4, 3, None, {"reward": "physics"}),
              ("nineball", 0, 0, NINE, {"attempts": 4}), ("nineball-seeded", 2, 5, NINE[:2], {"reward": "physics"}),
              ("shot", 1, 0, None, {}), ("shot", 2, 0, ["not an action"], {})]
    for game, episode, seed, answers, kw in starts:
        alone = solo(game, episode, seed, answers, **kw)
        served = played(client, game, episode, seed, alone["answers"], **kw)
        same(served, alone)
        assert served["state"].game == game and (served["state"].episode, served["state"].seed) == (episode, seed)
        if game == "shot":  # the single shot's reward is the evaluator's physics score of the answer
            board = ShotSession()
            board.reset(episode, seed)
            assert served["state"].rewards == [score_completion(board.scenario, alone["answers"][0])]
    # The Oracle's run-out from board 0 pots balls over several turns: a real multi-turn episode.
    assert len(solo("runout", 0, 0)["turns"]) > 1


def test_http_endpoints_are_openenvs_and_score_one_answer(server):
    import requests
    from openenv.cli._validation import validate_running_environment

    from poolbench_data.rl.reward import score_completion

    url = server[1]
    report = validate_running_environment(url)
    assert report["passed"], report["criteria"]
    assert requests.get(f"{url}/metadata", timeout=30).json()["name"] == "poolbench"
    schema = requests.get(f"{url}/schema", timeout=30).json()
    assert {"answer", "game"} <= set(schema["action"]["properties"]) and "rewards" in schema["state"]["properties"]
    # /reset: a fresh environment deals the start and answers its first observation.
    alone = solo("nineball-seeded", 3, 2, NINE[:1])
    first = requests.post(f"{url}/reset", json={"game": "nineball-seeded", "episode": 3, "seed": 2}, timeout=60)
    assert first.status_code == 200 and first.json()["observation"]["text"] == alone["first"]
    # /step with its start: that start's first attempt, the evaluator's verdict.
    r = requests.post(f"{url}/step", json={"action": {"answer": NINE[0]}, "start": {"game": "nineball-seeded",
                                                                                  "episode": 3, "seed": 2}}, timeout=60)
    assert r.status_code == 200 and r.json()["reward"] == alone["rewards"][0]
    assert r.json()["observation"]["text"] == alone["turns"][0]["text"]
    shot = solo("shot", 5, 0)
    r = requests.post(f"{url}/step", json={"action": {"answer": shot["answers"][0]}, "start": {"game": "shot",
                                                                                             "episode": 5}}, timeout=60)
    board = ShotSession()
    board.reset(5, 0)
    assert r.json()["reward"] == shot["rewards"][0] == score_completion(board.scenario, shot["answers"][0])
    assert r.json()["done"] is True
    # /step without a start: no session to play in, said so (409), nothing played.
    r = requests.post(f"{url}/step", json={"action": {"answer": NINE[0]}}, timeout=30)
    assert r.status_code == 409 and "/ws" in r.json()["detail"]
    assert requests.get(f"{url}/state", timeout=30).json()["game"] is None


# ------------------------------------------------------------------ sessions at once


def test_eight_sessions_at_once_mix_nothing(server):
    from poolbench_data.rl.openenv_client import PoolEnvClient

    starts = [("shot", 0, 0, None, {}), ("shot", 3, 1, ["{}"], {}), ("nineball", 0, 0, NINE[:3], {"attempts": 3}),
              ("nineball", 0, 0, NINE[1:], {"attempts": 3, "reward": "physics"}),
              ("nineball-seeded", 1, 0, NINE[:3], {"attempts": 3}), ("nineball-seeded", 4, 9, NINE[2:], {}),
              ("runout", 0, 0, None, {}), ("runout", 7, 2, None, {"reward": "physics"})]
    alone = [solo(g, e, s, a, **kw) for g, e, s, a, kw in starts]
    barrier = threading.Barrier(len(starts), timeout=120)
    results: list = [None] * len(starts)

    def play(i):
        try:
            game, episode, seed, _, kw = starts[i]
            with PoolEnvClient(base_url=server[1]).sync() as env:
                env.connect()
                barrier.wait()  # every session open before any plays
                results[i] = played(env, game, episode, seed, alone[i]["answers"], **kw)
        except BaseException as e:  # noqa: BLE001 - reported below, with the session it came from
            results[i] = e

    threads = [threading.Thread(target=play, args=(i,)) for i in range(len(starts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not any(t.is_alive() for t in threads), "a session never finished"
    for i, (served, solo_run) in enumerate(zip(results, alone)):
        assert not isinstance(served, BaseException), (starts[i], served)
        same(served, solo_run)


def test_sessions_beyond_the_cap_are_refused():
    from poolbench_data.rl.openenv_client import PoolEnvClient

    with serving("--max_sessions", "2") as (_, url):
        first, second = PoolEnvClient(base_url=url).sync(), PoolEnvClient(base_url=url).sync()
        with first, second:
            first.reset(game="shot")
            second.reset(game="shot")
            with PoolEnvClient(base_url=url).sync() as third, pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
                third.reset(game="shot")
            assert first.state().game == second.state().game == "shot"  # the open ones go on


# ------------------------------------------------------------------ bad input


def _ws(url: str, path: str = "/ws", **kw):
    from websockets.sync.client import connect

    return connect(url.replace("http://", "ws://") + path, open_timeout=30, close_timeout=5, **kw)


def _ask(ws, message) -> dict:
    ws.send(message if isinstance(message, (str, bytes)) else json.dumps(message))
    return json.loads(ws.recv(timeout=60))


def _state(ws) -> dict:
    return _ask(ws, {"type": "state"})["data"]


def step(answer: str, **extra) -> dict:
    return {"type": "step", "data": {"answer": answer, **extra}}


def test_bad_reset_arguments_are_one_error_naming_each_and_keep_the_episode(client):
    client.reset(game="nineball", attempts=4)
    before = client.state()
    for kwargs, name in [({"game": "eightball"}, "game"), ({"episode": -1}, "episode"), ({"episode": True}, "episode"),
                         ({"seed": "0"}, "seed"), ({"seed": 2**32}, "seed"), ({"attempts": 0}, "attempts"),
                         ({"attempts": 2.0}, "attempts"), ({"game": "runout", "action": "discrete"}, "action"),
                         ({"game": "nineball", "action": "analog"}, "action"), ({"reward": "points"}, "reward"),
                         ({"game": "shot", "attempts": 3}, "attempts"), ({"game": "shot", "reward": "balls"}, "reward"),
                         ({"atempts": 3}, "'atempts'"), ({"episode_id": "x" * 300}, "episode_id")]:
        with pytest.raises(RuntimeError) as e:
            client.reset(**kwargs)
        assert name in str(e.value).split("(code")[0], (kwargs, str(e.value))
        assert client.state() == before, kwargs  # nothing replaced, nothing recorded


def test_bad_steps_play_nothing_and_the_session_goes_on(server):
    """An answer for another game, malformed and oversized messages, a step after the end, two steps at once."""
    from poolbench_data.rl.asgi_guard import MAX_BODY
    from poolbench_data.rl.server import MAX_ANSWER
    from poolbench_data.rl.serving import WS_MAX_SIZE

    runout_json = '{"target_ball": "1", "target_pocket": [0.0, 0.0], "aim_angle_deg": 90, "cue_speed": 3}'
    answers = [runout_json, NINE[0], NINE[1], NINE[3]]  # a run-out's answer on nine-ball: a wasted attempt
    alone = solo("nineball-seeded", 6, 0, answers, attempts=4)
    assert alone["turns"][0]["parse_status"] != "ok" and not alone["turns"][0]["done"]
    with _ws(server[1]) as ws:
        assert _ask(ws, {"type": "reset", "data": {"game": "nineball-seeded", "episode": 6, "attempts": 4}})[
            "type"] == "observation"
        got = [_ask(ws, step(answers[0]))["data"]]
        refusals = [
            (step(NINE[1], game="runout"), "is for game 'runout'"),  # declared for another game
            ("{not json", "Invalid JSON"), ({"type": "leap"}, "Unknown message type"),
            ({"type": "step", "data": {}}, "Invalid message"), (step(7), "Invalid message"),
            (step("x", tip=1), "Invalid message"), (step("x" * (MAX_ANSWER + 1)), "Invalid message"),
            (json.dumps(step("y" * (MAX_BODY + 10))), f"over {MAX_BODY} bytes"),
            ("[" * 5000 + "]" * 5000, "nests deeper"), (b"\x00\x01", "text frames"),
        ]
        for message, why in refusals:
            reply = _ask(ws, message)
            assert reply["type"] == "error" and why in reply["data"]["message"], (why, reply)
            assert _state(ws)["played"] == 1  # nothing recorded, the session kept
        # Two steps sent at once are played one after the other, in order.
        ws.send(json.dumps(step(answers[1])))
        ws.send(json.dumps(step(answers[2])))
        got += [json.loads(ws.recv(timeout=120))["data"], json.loads(ws.recv(timeout=120))["data"]]
        got.append(_ask(ws, step(answers[3]))["data"])
        after = _ask(ws, step(NINE[0]))  # the cap was reached: the episode ended
        assert after["type"] == "error" and "ended" in after["data"]["message"]
        state = _state(ws)
        assert [g["observation"]["text"] for g in got] == [t["text"] for t in alone["turns"]]
        assert [g["reward"] for g in got] == state["rewards"] == alone["rewards"] and state["played"] == 4
        # A frame over the server's WebSocket limit closes that socket (uvicorn); the server goes on.
        from websockets.exceptions import ConnectionClosed

        with pytest.raises(ConnectionClosed) as closed:
            _ask(ws, "z" * (WS_MAX_SIZE + 1))
        assert closed.value.rcvd is None or closed.value.rcvd.code == 1009
    # An unknown session is refused by name.
    with _ws(server[1], "/ws?session_id=nope") as ws:
        reply = json.loads(ws.recv(timeout=60))
        assert reply["type"] == "error" and "Unknown session_id: nope" in reply["data"]["message"]


def test_bad_http_requests_are_refused_with_a_reason(server):
    import requests

    from poolbench_data.rl.asgi_guard import MAX_BODY

    url, port = server[1], server[1].rsplit(":", 1)[1]
    post = lambda path, **kw: requests.post(f"{url}{path}", timeout=60, **kw)  # noqa: E731
    cases = [
        (post("/reset", data="{not json", headers={"content-type": "application/json"}), 422, "json"),
        (post("/reset", json={"game": "eightball"}), 400, "game 'eightball' is not a game"),
        (post("/reset", json={"seed": True}), 400, "seed is True"),
        (post("/reset", json={"seed": 1.5}), 400, "seed is 1.5"),
        (post("/reset", json={"seed": -1}), 422, "seed"),
        (post("/mcp", json={"jsonrpc": "2.0", "method": "openenv/session/create", "params": {}, "id": 1}), 400,
         "no MCP tools"),
        (post("/reset", json={"atempts": 3}), 400, "'atempts'"),
        (post("/step", json={"action": {"answer": "x"}, "start": {"game": "nineball", "atempts": 3}}), 400,
         "'atempts'"),
        (post("/step", json={"action": {"answer": "x"}, "start": "nineball"}), 400, "start is 'nineball'"),
        (post("/step", json={"action": {"answer": 3}}), 422, "answer"),
        (post("/step", json={"action": {"answer": "x", "game": "runout"}, "start": {"game": "shot"}}), 400,
         "is for game 'runout'"),
        (post("/reset", data=b"{" + b" " * (MAX_BODY + 1) + b"}", headers={"content-type": "application/json"}),
         413, f"over {MAX_BODY} bytes"),
        (post("/reset", data="[" * 3000 + "]" * 3000, headers={"content-type": "application/json"}), 400,
         "nests deeper"),
        (requests.get(f"{url}/health", headers={"Host": f"attacker.example:{port}"}, timeout=30), 403, "Host"),
        (post("/reset", json={}, headers={"Origin": "http://attacker.example"}), 403, "Origin"),
    ]
    for response, status, why in cases:
        assert response.status_code == status and why in response.text, (status, why, response.text[:300])
    # A page elsewhere cannot open a session either.
    from websockets.exceptions import InvalidStatus

    with pytest.raises(InvalidStatus) as refused:
        _ws(url, origin="http://attacker.example")
    assert refused.value.response.status_code == 403


def test_ten_thousand_steps_record_the_episode_and_nothing_more(server):
    proc, url = server
    with _ws(url) as ws:
        _ask(ws, {"type": "reset", "data": {"game": "nineball", "attempts": 3}})
        rss_before = _rss_kb(proc.pid)
        replies = []
        for _ in range(40):  # 40 x 250 steps, each batch sent at once, then read
            for _ in range(250):
                ws.send(json.dumps(step("not an action")))
            replies += [json.loads(ws.recv(timeout=120)) for _ in range(250)]
        state = _state(ws)
    assert len(replies) == 10_000
    assert [r["type"] for r in replies[:3]] == ["observation"] * 3 and replies[2]["data"]["done"]
    assert all(r["type"] == "error" and "ended" in r["data"]["message"] for r in replies[3:])
    assert state["played"] == 3 and state["rewards"] == [0.0, 0.0, 0.0]  # the cap, then nothing recorded
    assert _rss_kb(proc.pid) - rss_before < 64 * 1024  # refused steps keep nothing


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


# ------------------------------------------------------------------ the command line


def test_serve_env_refuses_a_bad_flag_in_one_line(capsys):
    from poolbench_data.cli import main

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    with taken:
        port = str(taken.getsockname()[1])
        for argv, why in [(["--port", "70000"], "--port is 70000"), (["--port", port], f"--port {port}: cannot "
                          "listen on 127.0.0.1"), (["--host", "not a host"], "--host 'not a host' is not an IP"),
                          (["--max_sessions", "0"], "--max_sessions is 0")]:
            assert main(["serve-env", *argv]) == 2, argv
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and why in err and "Traceback" not in err, err


# ------------------------------------------------------------------ the OpenEnv package: manifest and Dockerfile


def test_manifest_names_the_app_and_the_dockerfiles_command_starts_it(tmp_path):
    import requests
    from openenv.cli._validation import validate_multi_mode_deployment
    from openenv.validation.parsers.openenv_yaml import OpenEnvYamlParser

    import yaml

    manifest = yaml.safe_load((ENV_DIR / "openenv.yaml").read_text())
    assert OpenEnvYamlParser().parse(ENV_DIR).name == manifest["name"] == "poolbench"  # OpenEnv's own parser
    module, attribute = manifest["app"].split(":")
    assert (ENV_DIR / (module.replace(".", "/") + ".py")).is_file()
    # OpenEnv's layout check: only the uv.lock it asks for is missing (the image uses the repository's lock).
    assert validate_multi_mode_deployment(ENV_DIR)[1] == ["Missing uv.lock - run 'uv lock' to generate it"]
    cmd = next(line for line in (ENV_DIR / "server" / "Dockerfile").read_text().splitlines()
               if line.startswith("CMD "))
    argv = json.loads(cmd[4:])
    assert argv[:2] == ["uvicorn", manifest["app"]] and argv[argv.index("--port") + 1] == str(manifest["port"])
    # The command itself, in the folder the image runs it in, on a socket this test holds instead of 0.0.0.0:8000.
    i = argv.index("--host")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port = sock.getsockname()[1]
    run = [str(Path(sys.executable).with_name("uvicorn")), *argv[1:i], "--fd", str(sock.fileno()),
           *argv[i + 4:]]
    proc = subprocess.Popen(run, cwd=ENV_DIR, pass_fds=(sock.fileno(),), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        sock.close()  # the server holds it now
        lines = _lines(proc)
        _wait_for(lines, re.compile(r"Application startup complete"))
        r = requests.post(f"http://127.0.0.1:{port}/reset", json={"game": "shot", "episode": 0}, timeout=60)
        assert r.status_code == 200 and r.json()["observation"]["text"] == solo("shot", 0, 0, [])["first"]
    finally:
        _stop(proc)


# ------------------------------------------------------------------ TRL


@pytest.mark.slow
def test_two_grpo_steps_through_trls_openenv_integration(server, tiny_model, tmp_path):
    """GRPOTrainer's environment_factory (TRL's OpenEnv path) with PoolOpenEnv: every rollout's start dealt by the
    server, its answer played there, its reward the server's, which is GameSession's on the same answer."""
    pytest.importorskip("trl")
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from poolbench_data.finetune.templates import use_tool_template
    from poolbench_data.rl.env import ends_on_call, final_answer
    from poolbench_data.rl.openenv_trl import PoolOpenEnv, openenv_prompts, openenv_reward

    url = server[1]
    starts = [{"game": "nineball-seeded", "episode": k, "seed": 7, "attempts": 3, "reward": "physics"}
              for k in range(2)]
    dataset = openenv_prompts(url, starts)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    use_tool_template(tokenizer, str(REPO / "training" / "templates" / "smollm2-chatml-tools.jinja"))
    seen = []

    def reward(completions, environments, **kw):
        out = openenv_reward(completions, environments, **kw)
        seen.extend((c, e.start, list(e.rewards), r) for c, e, r in zip(completions, environments, out))
        return out

    reward.__name__ = "openenv_reward"
    env = PoolOpenEnv.for_server(url)
    args = GRPOConfig(output_dir=str(tmp_path / "run"), use_cpu=True, bf16=False, use_vllm=False, max_steps=2,
                      num_generations=2, max_completion_length=8, per_device_train_batch_size=2,
                      gradient_accumulation_steps=1, learning_rate=1e-3, logging_steps=1, save_strategy="no",
                      report_to="none", seed=0, disable_tqdm=True, max_tool_calling_iterations=2)
    try:
        trainer = GRPOTrainer(model=str(tiny_model), reward_funcs=[reward], args=args, train_dataset=dataset,
                              processing_class=tokenizer, environment_factory=env)
        result = trainer.train()
    finally:
        PoolOpenEnv.close_all()
    assert result.global_step == 2 and math.isfinite(result.training_loss)
    logged = [e["rewards/openenv_reward/mean"] for e in trainer.state.log_history if "loss" in e]
    assert len(logged) == 2 and len(seen) == 4
    for completion, start, rewards, total in seen:
        # The tiny model never calls the tool: its one text answer was the episode's one attempt on the server.
        assert not ends_on_call(completion) and len(rewards) == 1
        kw = {k: start[k] for k in ("attempts", "reward")}
        assert rewards == solo(start["game"], start["episode"], start["seed"], [final_answer(completion)],
                               **kw)["rewards"] and total == sum(rewards)
    assert logged == [sum(t for *_, t in seen[:2]) / 2, sum(t for *_, t in seen[2:]) / 2]
