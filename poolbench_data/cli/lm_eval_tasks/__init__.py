"""PoolBench as an lm-evaluation-harness task (extra `lm-eval`). The task folder is PATH:

    lm_eval --model hf --model_args pretrained=DIR --tasks poolbench --apply_chat_template \
        --include_path "$(python -c 'import poolbench_data.cli.lm_eval_tasks as t; print(t.PATH)')"

`poolbench` is a group of one subtask per category (`poolbench_open`, ...); each board is the protocol's
system and user messages verbatim, generated with its settings (T = 0.2, 300 tokens), scored by this
package's parser and physics (`poolbench/utils.py:process_results`).
"""

from pathlib import Path

PATH = Path(__file__).parent / "poolbench"
