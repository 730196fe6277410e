"""`poolbench figures`: the figures of a run from its files (`report.figure_inputs.draw_figures`).

    poolbench figures --eval_dir results/eval --out results/figures   # Table-1 bars, a model-vs-Oracle board
    poolbench figures --pilot_json docs/results/tool_track_smollm2_135m_cpu.json \\
        --trainer_state sft=runs/loop-tools/sft/trainer_state.json,dpo=runs/loop-tools/dpo/trainer_state.json

docs/results.md#figures gives the command that draws docs/figures from the committed JSONs.

Every input is checked before anything is drawn (report/figure_inputs.py says what each must hold).
"""

from __future__ import annotations

from poolbench_data.report.figure_inputs import FiguresConfig as CONFIG


def run(config: CONFIG) -> int:
    from poolbench_data.report.figure_inputs import draw_figures

    draw_figures(config)
    return 0
