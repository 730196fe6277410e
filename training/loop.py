"""The closed loop, one command: evaluate -> SFT -> sample -> pairs -> DPO -> evaluate -> compare.

    .venv/bin/python training/loop.py                       # the CPU pilot: embedded SmolLM2-135M
    .venv/bin/python training/loop.py --stages after,compare --work_dir runs/loop
    .venv/bin/python training/loop.py --model /models/llama --sft_recipe training/recipes/sft-llama-3.1-8b-gpu.yaml \
        --dpo_recipe training/recipes/dpo-llama-3.1-8b-gpu.yaml --train_n 5000 --sft_examples 0

Stages (each a command you can also run by hand; outputs under --work_dir; a
stage whose output exists is skipped, so an interrupted loop resumes, and
--stages runs a subset; an output that another command, or other inputs,
built is refused in one line: WORK_DIR/stamps records what built each):
  before    `poolbench eval` of the starting model on the held-out test boards (seed 0)
  dataset   builders/build_dataset.py: test split + a train split from --train_seed (Oracle traces)
  sft_data  builders/build_sft.py: Oracle demonstrations from the train split
  sft       training/sft.py (warm start), checkpoints every --sft_eval_every examples
  scaling   `poolbench eval` of SFT checkpoints on the test boards: the supervised-budget table
  samples   the SFT model on --sample_n train boards, --samples responses each (free text)
  pairs     builders/build_pairs.py: on-policy (fine physics score) and Oracle-vs-model pairs
  dpo       training/dpo.py from the SFT model (so the reference is the SFT model)
  after     `poolbench eval` of the DPO model on the same test boards
  compare   before/after with exact McNemar; Random and the Heuristic on the same boards;
            writes WORK_DIR/pilot.json (and --results_json, if given)

The tool track (--track tools): the model chooses ball, pocket and
speed and calls the ghost_ball tool for the angle.
    .venv/bin/python training/loop.py --track tools --eval_n 200
    .venv/bin/python training/loop.py --config training/recipes/loop-tools-headline.yaml   # the headline: docs/results.md#tool-track
  dataset    as above (the held-out set: --eval_n boards of seed 0)
  sft_data   builders/build_sft.py --tools: tool-use demonstrations (config sft_tools), with --tool_demo_order and
             --tool_demo_speeds where given
  sft        training/sft.py with --tools_sft_recipe, --sft_examples of them
  eval_sft   `poolbench eval --tools` of the tool-SFT model (with Random and both Heuristics)
  samples    the tool-SFT model on --sample_n train boards, --samples tool-using conversations each
  pairs      builders/build_pairs.py --tool_eval_dir: every two samples that score differently, at the turn
             where their choices part; the action against a call written at the cap; a call for the open shot
             against an answer after a blocked report, and its mirror (config pairs_tools); --tool_sources
             chooses among those and the builder's other sources
  dpo        training/dpo.py with --tools_dpo_recipe from the tool-SFT model
  eval_dpo   `poolbench eval --tools` of the DPO model
  grpo       training/grpo.py --tool_env from the tool-SFT model, --grpo_steps steps (PoolBenchEnv)
  eval_grpo  `poolbench eval --tools` of the GRPO model
  free_text  `poolbench eval` of --free_text_model (a free-text SFT model), if given
  results    the counts, exact McNemar against tool SFT; WORK_DIR/pilot_tools.json (and --results_json)

The run-out pilot (--game runout): the model plays PoolBench run-outs (docs/games.md), learns the position
Oracle's shots, then prefers the shot that leaves the longer run.
    .venv/bin/python training/loop.py --config training/recipes/loop-runout-pilot.yaml   # docs/results.md#run-out-pilot
  dataset     as above
  sft_data    builders/build_sft.py --game runout: the position Oracle's clean pots in run-outs from the train
              boards (config sft_runout; --runout_demo_starts boards)
  eval_start  `poolbench eval --game runout` of --model on --game_eval_n starts of seed 0, with every run-out
              baseline (the Oracle, the position Oracle, both Heuristics, Random)
  sft         training/sft.py with --runout_sft_recipe
  eval_sft    `poolbench eval --game runout` of the SFT model (with the Heuristic)
  pairs       builders/build_pairs.py --position: two clean pots at a run-out turn, the one whose table the
              position Oracle runs further from chosen (config pairs_position; --position_pairs of them)
  dpo         training/dpo.py with --position_dpo_recipe from the SFT model
  eval_dpo    `poolbench eval --game runout` of the DPO model
  results     balls per visit, run-outs and fouls of each model and baseline on the same starts, exact paired
              tests between stages; WORK_DIR/pilot_runout.json (and --results_json)
"""

from __future__ import annotations

import sys
from pathlib import Path

from poolbench_data.finetune.loop import main

if __name__ == "__main__":
    sys.exit(main(root=Path(__file__).resolve().parents[1]))
