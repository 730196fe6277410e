#!/usr/bin/env bash
# Set up .venv/ and run the main job on the embedded default.
set -euo pipefail
cd "$(dirname "$0")/.."
# Let Python cache bytecode: vLLM workers otherwise recompile its sources at every start.
unset PYTHONDONTWRITEBYTECODE
bash scripts/setup.sh
.venv/bin/poolbench baseline "$@"
