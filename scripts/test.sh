#!/usr/bin/env bash
# Set up .venv/ and run the checks: the import contracts (lint-imports), then
# the whole test suite (real pooltool, vLLM CPU, TRL). Arguments go to pytest:
#   bash scripts/test.sh -m "not slow"     # the fast tier (a few minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
# Let Python cache bytecode: vLLM workers otherwise recompile its sources at every start.
unset PYTHONDONTWRITEBYTECODE
bash scripts/setup.sh
# The browser test of `poolbench play --web` (tests/test_play_web.py) drives the system's Chromium: Selenium is
# pointed at it and never downloads a browser (nothing outside the package registries can be fetched). Installed
# from the distribution's packages when missing and we may (root with apt, as CI); apt's output only on failure.
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "scripts/test.sh: installing chromium and chromium-driver (apt) for the browser test" >&2
    if ! log=$( (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver) 2>&1); then
      echo "$log" | tail -20 >&2
      echo "scripts/test.sh: the apt install failed; the browser test will say so" >&2
    fi
  else
    echo "scripts/test.sh: chromium or chromedriver missing (apt: chromium chromium-driver, as root); the browser test is skipped" >&2
  fi
fi
.venv/bin/lint-imports
# pooltool's numba functions compile into their cache once (30-40 s on one core in a new venv, about a second
# after), in the background; pytest's processes wait for it before their first test (tests/conftest.py,
# POOLBENCH_TEST_WARM_UP) rather than compiling them too. On the other core meanwhile the heavy packages the tests
# import are imported once, so a new venv's bytecode is cached before both workers import them at the same time.
warm_up="$PWD/.venv/test-warm-up"
rm -rf "$warm_up" && mkdir -p "$warm_up"
( status=0
  .venv/bin/python tests/one_shot.py >"$warm_up/log" 2>&1 || status=$?
  echo "$status" >"$warm_up/exit_code.part" && mv "$warm_up/exit_code.part" "$warm_up/exit_code" ) &
export POOLBENCH_TEST_WARM_UP="$warm_up"
.venv/bin/python -c 'import torch, transformers, trl, peft, datasets, vllm, verifiers.v1, inspect_ai' >/dev/null 2>&1 || true
# Two workers (pytest-xdist), one a core: the tests on the run's vLLM engine share one worker, as do the Ray tests,
# and each other test file runs on one (tests/conftest.py, work_unit); `-n 0` after the command runs everything in
# one process. The 25 slowest tests and every skip with its reason (beside failures and errors) are printed, so a
# slow or skipped test is seen the run it arrives.
exec .venv/bin/python -m pytest -q -p no:cacheprovider -n 2 --durations=25 -rfEs "$@"
