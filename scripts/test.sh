#!/usr/bin/env bash
# Set up .venv/ and run the checks: the import contracts (lint-imports), then
# the whole test suite (real pooltool, vLLM CPU, TRL). Arguments go to pytest:
#   bash scripts/test.sh -m "not slow"     # the fast tier (a few minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
# Let Python cache bytecode: vLLM workers otherwise recompile its sources at every start.
unset PYTHONDONTWRITEBYTECODE
bash scripts/setup.sh
.venv/bin/lint-imports
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
