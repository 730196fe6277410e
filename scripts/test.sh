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
# pooltool's numba functions compiled into their cache once, here (30-40 s on 2 cores in a new venv, about a
# second after), rather than by both test workers at once.
.venv/bin/python -c 'from poolbench_data.boards.generate import generate
from poolbench_data.core.physics import simulate
from poolbench_data.core.records import Shot
simulate(generate(1, base_seed=1)[0], Shot(phi=30.0, V0=3.0))'
# Two workers (pytest-xdist), one a core: the tests on the run's vLLM engine share one worker, as do the Ray tests,
# and each other test file runs on one (tests/conftest.py, work_unit); `-n 0` after the command runs everything in
# one process. The 25 slowest tests and every skip with its reason (beside failures and errors) are printed, so a
# slow or skipped test is seen the run it arrives.
exec .venv/bin/python -m pytest -q -p no:cacheprovider -n 2 --durations=25 -rfEs "$@"
