#!/usr/bin/env bash
# Set up .venv/ and run the whole test suite (real pooltool, vLLM CPU, TRL).
set -euo pipefail
cd "$(dirname "$0")/.."
# Let Python cache bytecode: vLLM workers otherwise recompile its sources at every start.
unset PYTHONDONTWRITEBYTECODE
bash scripts/setup.sh
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
