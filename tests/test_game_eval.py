"""A language model evaluated in a game (issue 65, items 2, 3 and 5): `poolbench eval --game ...` and
`evaluate(EvalConfig(game=...))`. Stored answers (the replay backend) and scripted backends play the turns
without an engine; the embedded model plays on the session's vLLM engine and the loopback server (the vllm group
of tests/conftest.py). Real pooltool, no mocks of the game."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import time

import pytest

from poolbench_data.cli import main
from poolbench_data.core.errors import UserError
from poolbench_data.evaluation import EvalConfig, evaluate
from poolbench_data.games.records import Episode
from poolbench_data.games.step import rules_of, start_game, step
from poolbench_data.llm.backend import GenerationResult
from poolbench_data.llm.game_player import turn_seed
from poolbench_data.llm.observation import observation, read_answer
from poolbench_data.protocol.parsing import PARSE_STATUSES
from poolbench_data.protocol.prompts import format_action

# Stored answers of a nine-ball run: per episode, its three turns. Malformed ones are wasted attempts.
NINEBALL_ANSWERS = {
    0: ["Speed: High, Strikespot: Middle Spin.", "I would hit it hard.", "Speed: Low, Strikespot: Top Spin"],
    1: ["Speed: Medium, Strikespot: Bottom Spin", "Speed: Very High, Strikespot: Top Spin", ""],
}


def _write_turns(path, answers: dict, game: str = "nineball", start=lambda k: "rack-0", player: str = "stored"):
    with open(path, "w") as f:
        for k, texts in answers.items():
            for t, text in enumerate(texts, 1):
                f.write(json.dumps({"player": player, "game": game, "episode": k, "sample": 0, "turn": t,
                                    "start": start(k), "raw_response": text}) + "\n")
    return path


def _rows(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _oracle_answer(k: int) -> str:
    """The greedy Oracle's first shot on run-out board k, as the protocol's JSON action with spin."""
    from poolbench_data.games.players import make_player

    state = start_game("runout", k)
    shot = make_player("runout", "oracle").decide(state).action
    return json.dumps({**json.loads(format_action(shot, rules_of("runout").scenario(state))), "a": 0.0, "b": 0.25})


# --- what the model reads and answers ---------------------------------------------------------------------------

def test_the_nineball_prompt_is_deepphys_with_the_table_as_text():
    from poolbench_data.llm.observation import game_system_prompt

    system = game_system_prompt("nineball", "discrete")
    for words in ("You are an expert AI agent specializing in billiards game strategy.",
                  "In each turn, you will pocket the number 9-ball by hitting the lowest numbered ball.",
                  'Available Speed Options: {"Low", "Medium", "High"}',
                  '"Top Left Spin", "Top Spin", "Top Right Spin", "Middle Left Spin", "Middle Spin"',
                  "Your response must be a single line of text", "Speed: [Speed Name], Strikespot: [Strikespot Name]."):
        assert words in system, words
    assert "coordinates" in system and "Image (Current Table State)" not in system
    assert '{"cue_speed": <float>, "a": <float>, "b": <float>}' in game_system_prompt("nineball", "continuous")
    text = observation(start_game("nineball", 0, 0, 15))
    assert text.startswith("Attempt 1 of 15.") and "Width" not in text and "width=0.9906m" in text
    assert "Target: the lowest-numbered ball" in text and "\nBall 1: x=" in text and "(pot it to win)" in text
    assert text.endswith("Then provide the corresponding action that matches the format.")


def test_once_the_group_is_cleared_the_runout_prompt_names_the_eight_as_the_players_ball():
    from poolbench_data.core.records import Scenario
    from poolbench_data.llm.observation import EIGHT_GROUP, table_text

    from dataclasses import replace

    state = rules_of("runout").from_scenario(Scenario.create("t", "open", 1, {"cue": (0.5, 0.5), "8": (0.5, 1.5),
                                                                          "1": (0.8, 0.3), "12": (0.2, 1.8)}))
    state = replace(state, balls=tuple(b for b in state.balls if b.id != "1"))  # the last solid potted
    text = table_text(state)
    assert EIGHT_GROUP in text and "8-ball: x=0.5000, y=1.5000 (distance from cue = 1.0000m) (YOUR ball" in text
    assert "DO NOT hit first)\n" not in text.split("Opponent balls")[0]
    action, status, _ = read_answer(state, '{"target_ball": "8", "target_pocket": "lt", "aim_angle_deg": 90, '
                                           '"cue_speed": 5, "b": -0.2}', "continuous")
    assert status == "ok" and action.target_ball == "8" and (action.a, action.b) == (0.0, -0.2)


@pytest.mark.parametrize("text, status", [
    ('{"cue_speed": 5, "a": 0.1, "b": -0.3}', "ok"),
    ('{"cue_speed": 5, "a": 0.1}', "missing-field"),
    ('{"cue_speed": "fast", "a": 0, "b": 0}', "non-numeric"),
    ('{"cue_speed": 5, "a": 0, "b": 0} {"cue_speed": 6, "a": 0, "b": 0}', "multiple-json"),
    ("Speed: High, Strikespot: Top Spin", "no-json"),
    ("", "empty"),
])
def test_the_continuous_nineball_answer_is_read_by_the_protocols_json_rules(text, status):
    state = start_game("nineball", 0)
    action, got, _ = read_answer(state, text, "continuous")
    assert got == status and (action is not None) == (status == "ok")
    if action is not None:
        assert (action.V0, action.a, action.b, action.name) == (5.0, 0.1, -0.3, "")
    after, outcome = step(state, read_answer(state, '{"cue_speed": 20, "a": 0, "b": 0}', "continuous")[0])
    assert outcome.parse_status == "out-of-range" and not outcome.fired, "ranges are the step's to judge"


def test_the_exact_paired_tests():
    from poolbench_data.report.stats import sign_test_exact, wilcoxon_exact

    assert wilcoxon_exact([1, 2, 3, 4, 5]) == pytest.approx(2 / 32)  # all 32 sign patterns, the extreme one twice
    assert wilcoxon_exact([1, -2, 0]) == 1.0 and wilcoxon_exact([0, 0]) == 1.0
    assert wilcoxon_exact([1, 1, -1]) == 1.0  # tied ranks: W+ = 4 of doubled {4, 4, 4}
    assert sign_test_exact(5, 0) == pytest.approx(2 / 32) and sign_test_exact(0, 0) == 1.0


# --- stored answers: the replay backend -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def nineball_run(tmp_path_factory):
    """`poolbench eval --game nineball` on stored answers beside MOCK, the 27-action Oracle and the heuristic."""
    root = tmp_path_factory.mktemp("nineball-run")
    responses = _write_turns(root / "turns.jsonl", NINEBALL_ANSWERS)
    out = root / "out"
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["eval", "--game", "nineball", "--baselines", "mock,oracle,heuristic", "--n", "2", "--attempts",
                     "3", "--backend", "replay", "--responses", str(responses), "--name", "stored", "--out", str(out),
                     "--quiet"])
    return code, printed.getvalue(), out


def test_the_command_prints_deepphys_table_with_its_mock_row_and_paired_tests(nineball_run):
    code, text, out = nineball_run
    assert code == 0
    for words in ("Att. 1", "Att. 3", "Avg. Att.", "mock (n=2)", "oracle (n=2)", "heuristic (n=2)", "stored (n=2)",
                  "DeepPHY MOCK (published) (n=300)", "2.33", "10.00", "7.88", "Paired on the same starts",
                  "stored vs oracle", "McNemar", "Wilcoxon"):
        assert words in text, words
    assert "stored answers: 6 turns, empty 1, no-json 1, ok 3, out-of-range 1" in text
    assert (out / "report.txt").read_text().strip() in text
    results = json.loads((out / "results.json").read_text())
    assert results["game"] == "nineball" and not results["incomplete"]
    assert results["settings"]["action"] == "discrete" and results["settings"]["history"] == "current"
    assert "Speed: [Speed Name], Strikespot: [Strikespot Name]." in results["system_prompt"]
    assert [t["b"] for t in results["paired"]] == ["mock", "oracle", "heuristic"]
    oracle = next(t for t in results["paired"] if t["b"] == "oracle")
    assert oracle["n"] == 2 and oracle["success"]["b"] == 2 and oracle["success"]["mcnemar_p"] == 0.5


def test_stored_answers_play_as_wasted_or_fired_attempts(nineball_run):
    """Each turn row holds the answer, its parse status, the action, the events and the table after it; an answer
    that cannot be played spends the attempt and leaves the table as it was."""
    _, _, out = nineball_run
    turns = _rows(out / "llm_turns.jsonl")
    assert [(r["episode"], r["turn"], r["parse_status"]) for r in turns] == [
        (0, 1, "ok"), (1, 1, "ok"), (0, 2, "no-json"), (1, 2, "out-of-range"), (0, 3, "ok"), (1, 3, "empty")]
    for r in turns:
        assert r["raw_response"] == NINEBALL_ANSWERS[r["episode"]][r["turn"] - 1]
        assert r["player"] == "stored" and r["game"] == "nineball" and r["start"] == "rack-0"
        assert len(r["prompt_sha256"]) == 64 and r["messages"] == 2, "history current: system + the table now"
        assert r["after"]["attempts"] == r["turn"]
    fired = turns[0]
    assert fired["action"]["name"] == "High / Middle Spin" and fired["shot"]["V0"] == 8.0
    assert fired["event_text"].startswith("ball-ball-cue-1") and fired["events"]
    wasted = turns[2]
    assert wasted["shot"] is None and wasted["event_text"] == "" and "not-fired" in wasted["foul_reasons"]
    assert wasted["after"]["balls"] == fired["after"]["balls"], "a wasted attempt leaves the table as it was"
    assert "Your last answer (attempt 2) could not be played (no-json" in turns[4]["observation"]
    assert "Your last shot (attempt 1): Speed: High, Strikespot: Middle Spin. Events: ball-ball-cue-1" in \
        turns[2]["observation"]


def test_episode_rows_keep_the_episode_shape_and_replay_to_the_same_digest(nineball_run):
    _, _, out = nineball_run
    rows = _rows(out / "episodes.jsonl")
    assert [(r["player"], r["player_kind"]) for r in rows].count(("stored", "llm")) == 2
    assert sorted({r["player"] for r in rows if r["player_kind"] == "baseline"}) == ["heuristic", "mock", "oracle"]
    shape = set(Episode("p", (start_game("nineball", 0),), ()).to_row())
    for r in rows:
        assert shape <= set(r) and {"episode", "sample", "digest"} <= set(r)
    mine = [r for r in rows if r["player_kind"] == "llm"]
    for r in mine:
        assert r["answers"] == NINEBALL_ANSWERS[r["episode"]] and not r["request_failed"]
        assert r["attempts"] == 3 and r["end"] == "attempts" and len(r["turns"]) == 3
        # the same answers stepped by hand give the same episode, byte for byte
        state = start_game("nineball", r["episode"], 0, 3)
        states = [state]
        for text in r["answers"]:
            action, status, message = read_answer(state, text, "discrete")
            state, _ = step(state, action, parse_status=status, parse_message=message)
            states.append(state)
        assert Episode("stored", tuple(states), (0, 0, 0), tuple(r["hows"])).digest() == r["digest"]


def test_history_full_sends_the_conversation_so_far(tmp_path):
    responses = _write_turns(tmp_path / "turns.jsonl", {0: NINEBALL_ANSWERS[0]})
    result = evaluate(EvalConfig(game="nineball", history="full", backend="replay", responses=str(responses),
                                 n=1, attempts=3, baselines="heuristic", out=str(tmp_path / "out"), quiet=True))
    assert [r["messages"] for r in result.turn_rows] == [2, 4, 6], "system, then user and assistant a turn"
    assert result.results["settings"]["history"] == "full"


def test_a_missing_stored_turn_stops_the_episode_as_a_failed_request(tmp_path, capsys):
    """Run-outs: a malformed answer is a foul that ends the visit; a turn the file does not hold is no answer of
    the model's: the episode stops there, is left out of the rates, and the run is incomplete (exit 1)."""
    answers = {0: [_oracle_answer(0)], 1: ['{"target_ball": "1"}']}
    responses = _write_turns(tmp_path / "turns.jsonl", answers, game="runout", start=lambda k: f"pb0-00000{k}")
    out = tmp_path / "out"
    code = main(["eval", "--game", "runout", "--baselines", "heuristic", "--n", "2", "--backend", "replay",
                 "--responses", str(responses), "--name", "stored", "--out", str(out), "--quiet"])
    captured = capsys.readouterr()
    assert code == 1 and "error: 1 of 2 episodes" in captured.err and "missing" in captured.err
    assert "INCOMPLETE" in captured.out and "Balls per visit" in captured.out
    turns = _rows(out / "llm_turns.jsonl")
    assert [(r["episode"], r["turn"], r["parse_status"]) for r in turns] == [
        (0, 1, "ok"), (1, 1, "missing-field"), (0, 2, "request-failed")]
    assert turns[0]["clean"] and turns[0]["potted"] == ["4"] and turns[0]["action"]["b"] == 0.25
    assert turns[1]["end"] == "foul", "a run-out's unplayable answer is a foul"
    mine = {r["episode"]: r for r in _rows(out / "episodes.jsonl") if r["player_kind"] == "llm"}
    assert mine[0]["request_failed"] and mine[0]["failure"]["kind"] == "missing" and mine[0]["end"] == ""
    assert not mine[1]["request_failed"] and mine[1]["end"] == "foul"
    summary = json.loads((out / "results.json").read_text())["summary"]
    assert summary["stored"]["run_out"]["n"] == 1, "the stopped episode is left out of the model's rates"


# --- scripted backends: the tool loop, SIGTERM ----------------------------------------------------------------

class Scripted:
    """A backend whose answer is `answer(conversation, call index)`; `on_call(i)` runs before call i."""

    name = "scripted"

    def __init__(self, answer, on_call=None):
        self.answer, self.on_call, self.calls, self.seeds = answer, on_call, 0, []

    def generate(self, conversations, *, n=1, seeds=None, **kwargs):
        self.calls += 1
        if self.on_call is not None:
            self.on_call(self.calls)
        self.seeds.append(seeds)
        return GenerationResult([[self.answer(c)] for c in conversations])

    def settings(self):
        return {"backend": "scripted"}

    def close(self):
        pass


@pytest.fixture
def scripted(monkeypatch):
    """`--backend vllm` answered by a Scripted backend instead of an engine."""
    from poolbench_data.llm import registry

    def use(backend):
        monkeypatch.setattr(registry, "_build_vllm", lambda model, **options: backend)
        return backend

    return use


def test_tools_on_a_runout_call_ghost_ball_every_turn_before_the_action(scripted, tmp_path):
    action = _oracle_answer(0)

    def answer(conv):
        if conv[-1]["role"] == "tool":
            return action
        return '<tool_call>{"name": "ghost_ball", "arguments": {"target_ball": "4"}}</tool_call>'

    backend = scripted(Scripted(answer))
    result = evaluate(EvalConfig(game="runout", tools=True, max_tool_calls=1, n=1, attempts=2, baselines="heuristic",
                                 out=str(tmp_path / "out"), quiet=True))
    assert "TOOL. Before you answer you may call ghost_ball" in result.results["system_prompt"]
    first, second = result.turn_rows
    assert len(first["tool_calls"]) == 1 and first["tool_calls"][0]["arguments"] == {"target_ball": "4"}
    assert first["tool_calls"][0]["result"]["target_ball"] == "4" and first["tool_turns"]
    assert first["parse_status"] == "ok" and first["clean"] and first["potted"] == ["4"]
    assert second["tool_calls"][0]["result"]["error"], "the 4 is down: the tool says so"
    assert second["parse_status"] == "unknown-ball" and second["end"] == "foul"
    # each request is seeded by episode, sample, turn and call, never by its place in the batch
    assert backend.seeds[:2] == [[turn_seed(0, 0, 0, 1)], [turn_seed(0, 0, 0, 1, 1)]]


def test_sigterm_mid_run_keeps_every_finished_episode(scripted, tmp_path):
    """Episode 1 fouls on turn 1; SIGTERM lands while episode 0 waits for its second answer: the baselines'
    episodes, episode 1 and every turn played are on disk, and the run exits 143."""
    answers = {_cue_line(0): _oracle_answer(0), _cue_line(1): "no idea"}

    def answer(conv):
        return next((a for line, a in answers.items() if line in conv[-1]["content"]), "late")

    scripted(Scripted(answer, on_call=lambda i: i == 2 and os.kill(os.getpid(), signal.SIGTERM)))
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as stop:
        evaluate(EvalConfig(game="runout", n=2, baselines="heuristic", out=str(out), quiet=True))
    assert stop.value.code == 143
    rows = _rows(out / "episodes.jsonl")
    assert [(r["player_kind"], r["episode"]) for r in rows] == [("baseline", 0), ("baseline", 1), ("llm", 1)]
    assert rows[-1]["end"] == "foul" and rows[-1]["answers"] == ["no idea"]
    assert [(r["episode"], r["turn"]) for r in _rows(out / "llm_turns.jsonl")] == [(0, 1), (1, 1)]

    # The same command resumes: the baselines and episode 1 are kept, episode 0 is played again from its start.
    asked = []

    def again(conv):
        asked.append(conv[-1]["content"])
        return answer(conv)

    scripted(Scripted(again))
    result = evaluate(EvalConfig(game="runout", n=2, baselines="heuristic", out=str(out), quiet=True))
    assert any(_cue_line(0) in a for a in asked) and not any(_cue_line(1) in a for a in asked), \
        "only episode 0 is played"
    rows = _rows(out / "episodes.jsonl")
    assert [(r["player_kind"], r["episode"]) for r in rows] == [("baseline", 0), ("baseline", 1), ("llm", 1),
                                                                ("llm", 0)]
    turns = _rows(out / "llm_turns.jsonl")
    assert [(r["episode"], r["turn"]) for r in turns][:2] == [(1, 1), (0, 1)], "episode 0's cut turn is dropped"
    assert [s["run_out"]["n"] for s in result.summary.values()] == [2, 2]
    fresh = evaluate(EvalConfig(game="runout", n=2, baselines="heuristic", out=str(tmp_path / "fresh"), quiet=True))
    assert fresh.summary == result.summary and fresh.paired == result.paired

    # Another run's settings are refused before any work, naming what differs; nothing on disk changes.
    before = (out / "episodes.jsonl").read_bytes()
    with pytest.raises(UserError, match=r"^--out .* holds the episodes of another run \(n: 2 there, 3 now"):
        evaluate(EvalConfig(game="runout", n=3, baselines="heuristic", out=str(out), quiet=True))
    assert (out / "episodes.jsonl").read_bytes() == before


def _cue_line(k: int) -> str:
    """The cue ball's line of run-out board k's first table (what tells two boards' prompts apart)."""
    return next(line for line in observation(start_game("runout", k)).splitlines() if line.startswith("Cue ball"))


def test_vision_sends_the_games_own_table_as_a_png_with_the_current_observation(monkeypatch, tmp_path):
    """--vision (an OpenAI-compatible server): the last user message is [text, image]; the picture is pooltool's
    default table for nine-ball, and earlier turns stay text (--history full)."""
    import base64
    import io

    from PIL import Image

    from poolbench_data.llm import openai_backend, registry
    from poolbench_data.llm.observation import nineball_geometry
    from poolbench_data.report.render import PAD, PX

    sent = []

    def answer(conv):
        sent.append(conv)
        return "Speed: Low, Strikespot: Top Spin."

    monkeypatch.setattr(openai_backend, "check_server", lambda *a, **k: ["served"])
    monkeypatch.setattr(registry, "_build_openai", lambda url, model, **options: Scripted(answer))
    evaluate(EvalConfig(game="nineball", backend="openai", model="served", vision=True, history="full", n=1,
                        attempts=2, baselines="heuristic", out=str(tmp_path / "out"), quiet=True))
    assert len(sent) == 2
    for conv in sent:
        *earlier, last = conv
        assert all(isinstance(m["content"], str) for m in earlier), "only the current observation has a picture"
        text, image = last["content"]
        assert text["type"] == "text" and text["text"].startswith(("Attempt", "Your last shot"))
        png = base64.b64decode(image["image_url"]["url"].removeprefix("data:image/png;base64,"))
        g = nineball_geometry()
        assert Image.open(io.BytesIO(png)).size == (int(g.width * PX) + 2 * PAD, int(g.length * PX) + 2 * PAD + 16)
    assert "Image (Current Table State)" in sent[0][0]["content"]


# --- mistakes: one line, exit 2, before any work --------------------------------------------------------------

@pytest.mark.parametrize("argv, flag", [
    (["--game", "chess"], "--game"),
    (["--game", "runout", "--action", "discrete"], "--action discrete"),
    (["--game", "nineball", "--attempts", "0"], "--attempts"),
    (["--game", "nineball", "--history", "all"], "--history"),
    (["--attempts", "5"], "--attempts is read only with --game"),
    (["--history", "full"], "--history is read only with --game"),
    (["--game", "nineball", "--tools"], "--tools"),
    (["--game", "nineball", "--structured"], "--structured"),
    (["--game", "nineball", "--few_shot", "1"], "--few_shot"),
    (["--game", "runout", "--baselines", "mock"], "--baselines"),
    (["--game", "nineball", "--name", "mock"], "--name mock"),
])
def test_a_wrong_game_flag_is_one_line_and_exit_2_before_any_work(argv, flag, tmp_path, capsys):
    out = tmp_path / "never"
    started = time.perf_counter()
    try:
        code = main(["eval", *argv, "--backend", "replay", "--responses", str(_write_turns(tmp_path / "t.jsonl", {})),
                     "--out", str(out)])
    except SystemExit as e:  # argparse refuses a choice that is not one
        code = e.code
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and flag in err and "Traceback" not in err, (argv, err)
    assert not out.exists() and time.perf_counter() - started < 30


def test_a_replay_file_of_another_game_or_run_is_refused(tmp_path):
    responses = _write_turns(tmp_path / "t.jsonl", {0: ["Speed: Low, Strikespot: Top Spin"]})
    base = dict(backend="replay", responses=str(responses), n=1, baselines="mock", out=str(tmp_path / "o"))
    with pytest.raises(UserError, match="--game nineball, not runout"):
        evaluate(EvalConfig(game="runout", **{**base, "baselines": "heuristic"}))
    with pytest.raises(UserError, match="no answer of 'stored' for episode 1"):
        evaluate(EvalConfig(game="nineball", **{**base, "n": 2}))
    with pytest.raises(UserError, match="is not a game"):
        evaluate(EvalConfig(game="chess"))
    assert not (tmp_path / "o").exists()


# --- the embedded model: the session's engine and the loopback server -----------------------------------------

class TestOnTheEngine:
    @pytest.mark.slow
    def test_the_embedded_model_plays_two_episodes(self, eval_on_shared_engine, tmp_path):
        """Continuous JSON under structured decoding, so answers parse and get fired (or are out of range)."""
        result = evaluate(EvalConfig(game="nineball", action="continuous", structured=True, n=2, attempts=3,
                                     max_tokens=48, baselines="mock", out=str(tmp_path / "out"), quiet=True))
        assert eval_on_shared_engine and not result.incomplete
        turns = result.turn_rows
        assert 2 <= len(turns) <= 6 and all(r["parse_status"] in PARSE_STATUSES for r in turns)
        assert all(r["seed"] == turn_seed(0, r["episode"], 0, r["turn"]) for r in turns)
        assert any(r["action"] is not None and r["action"]["kind"] == "strike" for r in turns)
        mine = [r for r in result.episode_rows if r["player_kind"] == "llm"]
        assert len(mine) == 2 and all(len(r["answers"]) == r["attempts"] for r in mine)
        assert "DeepPHY MOCK (published)" in result.report and result.name in result.summary


class TestOnTheServer:
    @pytest.mark.slow
    def test_the_served_model_plays_through_the_openai_backend(self, served_model, tmp_path):
        url, served = served_model
        result = evaluate(EvalConfig(game="nineball", backend="openai", base_url=url, model=served, n=1, attempts=2,
                                     max_tokens=16, baselines="heuristic", out=str(tmp_path / "out"), quiet=True))
        assert not result.incomplete and result.results["backend"]["backend"] == "openai"
        assert [r["turn"] for r in result.turn_rows] == [1, 2] or result.turn_rows[0]["end"] == "nine-potted"
        assert all(r["raw_response"] is not None for r in result.turn_rows)


# Every game prompt text shipped, by version: changing any of them changes the digest; bump GAME_PROMPT_VERSION
# and add a line here (never edit old lines).
GAME_PROMPT_DIGESTS = {
    "poolbench-games-v1": "45fea2357a923ee27044426c58746749259a46e064a3f92ac4169390b38c49ec",
}


def game_prompt_digest() -> str:
    from poolbench_data.games.nineball import strike
    from poolbench_data.llm.observation import game_system_prompt

    nine = start_game("nineball", 0, 0, 15)
    after, _ = step(nine, strike("High", "Middle Spin"))
    wasted, _ = step(nine, None, parse_status="no-json", parse_message="no action line")
    variants = [("nineball", "discrete", False), ("nineball", "discrete", True), ("nineball", "continuous", False),
                ("runout", "continuous", False)]
    texts = [game_system_prompt(game, action, vision) for game, action, vision in variants]
    texts += [observation(s) for s in (nine, after, wasted, start_game("runout", 0))]
    return hashlib.sha256("\0".join(texts).encode("utf-8")).hexdigest()


def test_the_game_prompt_version_pins_the_exact_texts():
    from poolbench_data.llm.observation import GAME_PROMPT_VERSION

    assert GAME_PROMPT_VERSION in GAME_PROMPT_DIGESTS, f"add {GAME_PROMPT_VERSION!r} to GAME_PROMPT_DIGESTS"
    assert game_prompt_digest() == GAME_PROMPT_DIGESTS[GAME_PROMPT_VERSION], (
        "a game prompt's text changed: bump GAME_PROMPT_VERSION and record the new digest " + game_prompt_digest())
