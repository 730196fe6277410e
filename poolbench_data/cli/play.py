"""`poolbench play`: the human baseline. A person sees each board (the
prompt's text and a PNG) and types an action in the protocol's JSON; the
answers are then scored exactly like a model's (the replay backend: same
parser, same physics, same report beside the baselines)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

SKIP = "skip"  # typed instead of an action: no shot (a foul, as an unparseable answer)


def add_arguments(p) -> None:
    from poolbench_data.boards.generate import DEFAULT_N, DEFAULT_SEED

    p.add_argument("--n", type=int, default=DEFAULT_N, help="boards to play (default: the paper's 50)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="scenario base seed (default: evaluation set)")
    p.add_argument("--name", default="human", help="player name in the report")
    p.add_argument("--out", default="results/human", help="folder for board PNGs, responses and the report")
    p.add_argument("--brief", action="store_true", help="do not print the rules (the system prompt) first")


def ask(scenario, read=input, write=print) -> str:
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
    from poolbench_data.boards.generate import generate
    from poolbench_data.cli import main
    from poolbench_data.core.errors import UserError, check_output_dir
    from poolbench_data.core.physics import simulate
    from poolbench_data.core.scoring import score
    from poolbench_data.players import BASELINES
    from poolbench_data.protocol.parsing import parse_action
    from poolbench_data.protocol.prompts import SYSTEM_PROMPT, user_prompt
    from poolbench_data.report.render import render_board

    if args.name in BASELINES or not args.name.strip():
        raise UserError(f"--name {args.name!r} is {'a baseline name' if args.name in BASELINES else 'empty'}; "
                        "pass --name with your name")
    out = check_output_dir(args.out, "--out")
    boards = generate(args.n, args.seed)
    responses = out / "responses.jsonl"
    # Each answer is appended as it is given, so an interrupt loses nothing and the same command resumes.
    rows = [json.loads(x) for x in responses.read_text().splitlines() if x.strip()] if responses.exists() else []
    ids = {s.id for s in boards}
    foreign = [r["scenario_id"] for r in rows if r.get("scenario_id") not in ids or r.get("player") != args.name]
    if foreign:
        raise UserError(f"--out {args.out} holds answers to other boards or by another player ({foreign[0]!r}, ...); "
                        "give another --out, or the --n, --seed and --name of that session to resume it")
    done = {r["scenario_id"] for r in rows}
    if done:
        print(f"resuming: {len(done)} of {args.n} boards already answered in {responses}")
    if not args.brief:
        print(SYSTEM_PROMPT, end="\n\n")
    with open(responses, "a") as f:
        for i, s in enumerate(boards):
            if s.id in done:
                continue
            png = render_board(s, [(args.name, None, "your shot")], out / f"board_{s.id}.png")
            print(f"--- board {i + 1}/{args.n}: {s.id} ({s.category}); picture: {png}\n{user_prompt(s)}")
            try:
                text = ask(s)
            except (EOFError, KeyboardInterrupt):  # the person stopped: score the boards played so far
                print()
                break
            if text:
                m = score(simulate(s, parse_action(text, s).shot))
                print(f"  -> {'legal contact' if m.legal_contact else 'no legal contact'}"
                      f"{', own ball potted' if m.own_potted else ''}"
                      f"{', foul: ' + ','.join(m.foul_reasons) if m.foul else ''}")
            row = {"player": args.name, "player_kind": "llm", "scenario_id": s.id, "sample": 0,
                   "raw_response": text, "temperature": None}
            f.write(json.dumps(row) + "\n")
            f.flush()
            rows.append(row)
    if not rows:
        print("no board played; nothing to score", file=sys.stderr)
        return 1
    # The replay backend reads answers by board id, for the first len(rows) boards: they must be those, once each.
    if sorted(r["scenario_id"] for r in rows) != sorted(s.id for s in boards[:len(rows)]):
        print(f"the answers in {responses} are not boards 1..{len(rows)} once each; play on in order (or give "
              "another --out) before scoring", file=sys.stderr)
        return 1
    # Scored like any model: the replay backend, the same report and traces.
    return main(["eval", "--backend", "replay", "--responses", str(responses), "--name", args.name,
                 "--n", str(len(rows)), "--seed", str(args.seed), "--out", str(out), "--boards", "0", "--quiet"])
