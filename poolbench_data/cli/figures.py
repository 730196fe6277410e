"""`poolbench figures`: the figures of report/figures.py from a run's files.

    poolbench figures --eval_dir results/eval --out docs/figures       # Table-1 bars, a model-vs-Oracle board
    poolbench figures --pilot_json docs/results/tool_track_smollm2_135m_cpu.json \\
        --trainer_state sft=runs/loop-tools/sft/trainer_state.json,dpo=runs/loop-tools/dpo/trainer_state.json
"""

from __future__ import annotations

import json
from pathlib import Path


def add_arguments(p) -> None:
    p.add_argument("--eval_dir", default="", help="a `poolbench eval` report folder (--out): table1.png from its "
                                                  "summary.json, board_pair.png from its llm_traces.jsonl")
    p.add_argument("--board", default="", help="with --eval_dir: the board of the pair (default: the first)")
    p.add_argument("--pilot_json", default="", help="a training pilot's results JSON: before_after.png")
    p.add_argument("--trainer_state", default="", help="label=trainer_state.json,...: training_curves.png")
    p.add_argument("--out", default="results/figures", help="folder for the PNGs")


def _scenario(scenario_id: str):
    """A generated board from its id, pb<seed>-<index>."""
    from poolbench_data.boards.generate import generate

    head, _, index = scenario_id.rpartition("-")
    return generate(1, int(head.removeprefix("pb")), start=int(index))[0]


def _states(text: str) -> dict[str, Path]:
    from poolbench_data.core.errors import UserError

    states = {}
    for item in filter(None, text.split(",")):
        label, sep, path = item.partition("=")
        if not sep or not label or not Path(path).is_file():
            raise UserError(f"--trainer_state {item!r}: give label=PATH with an existing trainer_state.json")
        states[label] = Path(path)
    return states


def run(args) -> int:
    from poolbench_data.core.errors import UserError, check_output_dir
    from poolbench_data.core.records import Shot
    from poolbench_data.players import oracle
    from poolbench_data.players.traces import load_traces
    from poolbench_data.report import figures

    if not (args.eval_dir or args.pilot_json or args.trainer_state):
        raise UserError("nothing to draw; give --eval_dir, --pilot_json or --trainer_state")
    if args.eval_dir and not (Path(args.eval_dir) / "summary.json").is_file():
        raise UserError(f"--eval_dir {args.eval_dir}: no summary.json there; give a `poolbench eval` --out folder")
    if args.pilot_json and not Path(args.pilot_json).is_file():
        raise UserError(f"--pilot_json {args.pilot_json}: no such file; give a pilot's results JSON")
    states = _states(args.trainer_state)
    rows = []
    if args.eval_dir:
        rows = [r for r in load_traces(Path(args.eval_dir) / "llm_traces.jsonl") if r.get("action")]
        ids = [r["scenario_id"] for r in rows]
        if args.board and args.board not in ids:
            raise UserError(f"--board {args.board!r}: no shot of the model on that board in {args.eval_dir}")
    if args.board and not args.eval_dir:
        raise UserError("--board is read only with --eval_dir; add --eval_dir, or leave --board out")
    out = check_output_dir(args.out, "--out")
    if args.eval_dir:
        summary = json.loads((Path(args.eval_dir) / "summary.json").read_text())["summary"]
        print(figures.table1_figure(summary, out / "table1.png"))
        if rows:
            row = next(r for r in rows if r["scenario_id"] == (args.board or rows[0]["scenario_id"]))
            s, model = _scenario(row["scenario_id"]), Shot.from_row(row["action"])
            figures.board_figure(s, [(row["player"], model), ("oracle", oracle(s).shot)], out / "board_pair.png")
            print(out / "board_pair.png")
    if args.pilot_json:
        print(figures.before_after_figure(json.loads(Path(args.pilot_json).read_text()), out / "before_after.png"))
    if states:
        print(figures.training_curves_figure(states, out / "training_curves.png"))
    return 0
