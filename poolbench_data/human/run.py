"""`play(config)`: the human baseline, what `poolbench play` calls. A person sees each board (the prompt's text
and a PNG) and types an action in the protocol's JSON, or, with --web, plays it in a browser page on loopback
(web.py); the answers are then scored exactly like a model's (the replay backend: same parser, same physics,
same report beside the baselines)."""

from __future__ import annotations

from dataclasses import dataclass, field

from poolbench_data.boards.generate import DEFAULT_N, DEFAULT_SEED
from poolbench_data.games.records import GAMES
from poolbench_data.human.answers import ask_until


@dataclass(frozen=True)
class PlayConfig:
    """The human baseline: type an action for each board (--web: in a browser), scored like a model; with --game,
    play a game's episodes shot by shot (`poolbench play`)."""

    n: int = field(default=DEFAULT_N, metadata={"help": "boards to play (default: the paper's 50); with --game, "
                                                        "episodes"})
    seed: int = field(default=DEFAULT_SEED, metadata={"help": "scenario base seed (default: evaluation set)"})
    name: str = field(default="human", metadata={"help": "player name in the report"})
    out: str = field(default="results/human", metadata={"help": "folder for board PNGs, responses and the report"})
    brief: bool = field(default=False, metadata={"help": "do not print the rules (the system prompt) first"})
    web: bool = field(default=False, metadata={"help": "play in a browser: serve a page on 127.0.0.1 (pick, drag the "
                                                        "aim, shoot, see it drawn)"})
    port: int | None = field(default=None, metadata={"help": "with --web: the loopback port (default: one the "
                                                              "system picks, printed at start)"})
    game: str = field(default="shot", metadata={
        "choices": ("shot",) + GAMES,
        "help": "shot (the default): one shot a board; nineball: DeepPHY's nine-ball task (answer its line, "
                "'Speed: Medium, Strikespot: Bottom Spin'); nineball-seeded: a rack per episode; runout: an "
                "eight-ball visit from each board (the protocol's JSON, with optional spin a, b) (docs/games.md)"})
    attempts: int = field(default=15, metadata={"help": "with --game: the most attempts an episode takes "
                                                        "(DeepPHY's 15)"})


def read_line(prompt: str) -> str:
    """input(), but a Ctrl-C is never lost: input() at a terminal waits in readline's select() with no
    timeout, so a SIGINT that lands between the prompt and that wait is noticed only at the next key (under
    load, that can be never). Waiting in half-second steps lets Python run the handler."""
    import select
    import sys

    try:
        fd = sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):  # not a real file (a test's stand-in): nothing to wait on
        return input(prompt)
    sys.stdout.write(prompt)
    sys.stdout.flush()
    while not select.select([fd], [], [], 0.5)[0]:
        pass
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line.rstrip("\n")


def ask(scenario, read=read_line, write=print) -> str:
    """One board's answer: re-asked while it is not an action the protocol's
    parser accepts (people mistype), unless the person types `skip`."""
    from poolbench_data.protocol.parsing import parse_action

    def problem(text: str) -> str | None:
        parsed = parse_action(text, scenario)
        return None if parsed.shot is not None else f"{parsed.status}: {parsed.message}"

    return ask_until(problem, "action JSON (or skip)> ", "type the JSON again", read, write)


def play(config: PlayConfig, read=read_line, write=print):
    """Check the config (before any board is drawn), play the boards not yet answered in `out` (in a terminal:
    `read` gives each line typed, `write` shows each line; with `web`, in a browser page), then score the
    answers like a model's. The scoring's EvalResult, or None (the reason on stderr) when nothing was scored.
    The person stops with Ctrl-D or Ctrl-C (`read` raising EOFError or KeyboardInterrupt): the boards played so
    far are scored, and the same config resumes the rest. With `game`, a game's episodes (human/games.py): the
    result is a GamePlayResult, the game's table over the finished episodes."""
    from poolbench_data.core.errors import UserError, check_at_least, check_seed
    from poolbench_data.human.answers import Session, outcome, verdict
    from poolbench_data.human.games import GameSession, play_game
    from poolbench_data.protocol.prompts import SYSTEM_PROMPT, user_prompt

    if config.game not in ("shot",) + GAMES:
        raise UserError(f"--game {config.game!r} is not a game; choose from shot, {', '.join(GAMES)}")
    check_at_least("--n", config.n, 1)
    check_at_least("--attempts", config.attempts, 1)
    check_seed("--seed", config.seed)
    if config.web:
        from poolbench_data.human.web import check_port, listen, serve
        from poolbench_data.human.web_game import GameTable

        check_port(config.port)  # before the boards are drawn: a bad flag costs nothing
        with listen(config.port or 0) as server:  # bound before the folder is made: a port in use leaves nothing
            if config.game != "shot":
                return serve(GameSession(config), server, GameTable)
            return serve(Session(config), server)
    if config.port is not None:
        raise UserError(f"--port {config.port} is for the browser page; add --web, or drop --port")
    if config.game != "shot":
        return play_game(config, read, write)
    session = Session(config)
    if session.resuming():
        write(session.resuming())
    if not config.brief:
        write(SYSTEM_PROMPT + "\n")
    with session:
        for i, s in session.pending():
            png = session.picture(s)
            write(f"--- board {i + 1}/{config.n}: {s.id} ({s.category}); picture: {png}\n{user_prompt(s)}")
            try:
                text = ask(s, read, write)
            except (EOFError, KeyboardInterrupt):  # the person stopped: score the boards played so far
                write("")
                break
            if text:
                write(f"  -> {verdict(outcome(s, text)[2])}")
            session.record(s, text)
    return session.finish()
