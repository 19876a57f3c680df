#!/usr/bin/env bash
# The RL-shaped microbenchmarks (calibration/benchmarks/rl_shapes.py) on one CUDA GPU, as one
# command of at most 10 minutes for a lent machine (the `device` tool).
#
#   OUT=DIR   where rl_shapes.json goes (default: the current directory)
#
# It runs under the machine's own python3 and torch. A machine without network access and
# without pydantic takes it from wheels in .whl/ (pydantic, pydantic_core, annotated-types,
# typing-inspection; docs/calibration.md says how to fetch them), installed to /tmp/site.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-$PWD}"
cd "$repo"
if ! python3 -c 'import pydantic' 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl
  export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONUNBUFFERED=1
python3 - <<'PY'
import torch
print(f"gpu_rl_shapes.sh: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
PY
start=$SECONDS
timeout 480 python3 -m calibration.benchmarks.rl_shapes --device cuda --out "$out/rl_shapes.json"
echo "gpu_rl_shapes.sh: measured in $((SECONDS - start)) s" >&2
