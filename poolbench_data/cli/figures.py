"""`poolbench figures`: the figures of report/figures.py from a run's files.

    poolbench figures --eval_dir results/eval --out docs/figures       # Table-1 bars, a model-vs-Oracle board
    poolbench figures --pilot_json docs/results/pilot_tools_smollm2_cpu.json \\
        --trainer_state sft=runs/loop-tools/sft/trainer_state.json,dpo=runs/loop-tools/dpo/trainer_state.json

Every input is checked before anything is drawn (report/figure_inputs.py says what each must hold).
"""

from __future__ import annotations


def add_arguments(p) -> None:
    p.add_argument("--eval_dir", default="", help="a `poolbench eval` report folder (--out): table1.png from its "
                                                  "summary.json, board_pair.png from its llm_traces.jsonl")
    p.add_argument("--board", default="", help="with --eval_dir: the board of the pair (default: the first)")
    p.add_argument("--pilot_json", default="", help="a training pilot's results JSON: before_after.png")
    p.add_argument("--trainer_state", default="", help="label=trainer_state.json,...: training_curves.png")
    p.add_argument("--out", default="results/figures", help="folder for the PNGs")


def run(args) -> int:
    from poolbench_data.report.figure_inputs import draw_figures, read_inputs

    inputs = read_inputs(args.eval_dir, args.board, args.pilot_json, args.trainer_state)
    for path in draw_figures(inputs, args.out):
        print(path)
    return 0
