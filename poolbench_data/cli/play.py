"""`poolbench play`: the human baseline. A person sees each board (the
prompt's text and a PNG) and types an action in the protocol's JSON, or,
with --web, plays it in a browser page on loopback (cli/web.py); the answers
are then scored exactly like a model's (the replay backend: same parser,
same physics, same report beside the baselines)."""

from __future__ import annotations

from poolbench_data.cli.human import SKIP  # noqa: F401 - the word a person types to pass a board


def add_arguments(p) -> None:
    from poolbench_data.boards.generate import DEFAULT_N, DEFAULT_SEED

    p.add_argument("--n", type=int, default=DEFAULT_N, help="boards to play (default: the paper's 50)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="scenario base seed (default: evaluation set)")
    p.add_argument("--name", default="human", help="player name in the report")
    p.add_argument("--out", default="results/human", help="folder for board PNGs, responses and the report")
    p.add_argument("--brief", action="store_true", help="do not print the rules (the system prompt) first")
    p.add_argument("--web", action="store_true",
                   help="play in a browser: serve a page on 127.0.0.1 (pick, drag the aim, shoot, see it drawn)")
    p.add_argument("--port", type=int, default=None,
                   help="with --web: the loopback port (default: one the system picks, printed at start)")


def read_line(prompt: str) -> str:
    """input(), but a Ctrl-C is never lost: input() at a terminal waits in readline's select() with no
    timeout, so a SIGINT that lands between the prompt and that wait is only noticed at the next key (seen
    under load: the interrupt test hung). Waiting in half-second steps lets Python run the handler."""
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

    while True:
        text = read("action JSON (or skip)> ").strip()
        if text.lower() == SKIP:
            return ""
        parsed = parse_action(text, scenario)
        if parsed.shot is not None:
            return text
        write(f"  not an action ({parsed.status}: {parsed.message}); type the JSON again")


def run(args) -> int:
    from poolbench_data.cli.human import Session, outcome, verdict
    from poolbench_data.protocol.prompts import SYSTEM_PROMPT, user_prompt

    if args.web:
        from poolbench_data.cli.web import check_port, listen, serve

        check_port(args.port)  # before the boards are drawn: a bad flag costs nothing
        with listen(args.port or 0) as server:  # bound before the folder is made: a port in use leaves nothing
            return serve(Session(args), server)
    if args.port is not None:
        from poolbench_data.core.errors import UserError

        raise UserError(f"--port {args.port} is for the browser page; add --web, or drop --port")
    session = Session(args)
    if session.done:
        print(f"resuming: {len(session.done)} of {args.n} boards already answered in {session.responses}")
    if not args.brief:
        print(SYSTEM_PROMPT, end="\n\n")
    with session:
        for i, s in session.pending():
            png = session.picture(s)
            print(f"--- board {i + 1}/{args.n}: {s.id} ({s.category}); picture: {png}\n{user_prompt(s)}")
            try:
                text = ask(s)
            except (EOFError, KeyboardInterrupt):  # the person stopped: score the boards played so far
                print()
                break
            if text:
                print(f"  -> {verdict(outcome(s, text)[2])}")
            session.record(s, text)
    return session.finish()
