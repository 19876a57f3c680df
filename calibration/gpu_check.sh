#!/usr/bin/env bash
# Full calibration on one CUDA GPU: make a venv, install rlsim with the calibrate extra, run
# `rlsim calibrate --device cuda` and print the path of the profile it wrote.
#
#   OUT=DIR     where the profile goes (default: calibration/profiles in this repository);
#               the file is DIR/profile-$(hostname).json
#   VENV=DIR    the virtual environment to create or reuse (default: .venv-gpu here)
#   PYTHON=EXE  the interpreter that makes the venv (default: python3)
#   RLSIM_SYSTEM_TORCH=1  reuse the torch already installed for PYTHON (a GPU box without
#               network access): the venv sees system site-packages and the extra is skipped
#
# The full GPU grid takes about 3-4 minutes on an H100/H200; the run is cut off at 5 minutes.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-$repo/calibration/profiles}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"  # a relative OUT means relative to where the script was started
venv="${VENV:-$repo/.venv-gpu}"
python="${PYTHON:-python3}"
cd "$repo"

if [[ ! -x "$venv/bin/python" ]]; then
  if [[ "${RLSIM_SYSTEM_TORCH:-0}" == 1 ]]; then
    "$python" -m venv --system-site-packages "$venv"
  else
    "$python" -m venv "$venv"
  fi
fi
# Install only when the venv cannot run the calibration yet, so a rerun needs no network.
if ! "$venv/bin/python" -c 'import torch, rlsim, calibration.run' 2>/dev/null; then
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  if [[ "${RLSIM_SYSTEM_TORCH:-0}" == 1 ]]; then
    "$venv/bin/python" -m pip install --quiet -e .
  else
    "$venv/bin/python" -m pip install --quiet -e '.[calibrate]'
  fi
fi

"$venv/bin/python" - <<'PY'
import sys

import torch

if not torch.cuda.is_available():
    sys.exit(f"gpu_check.sh: torch {torch.__version__} sees no CUDA device")
print(f"gpu_check.sh: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
PY

profile="$out/profile-$(hostname).json"
start=$SECONDS
timeout 300 "$venv/bin/rlsim" calibrate --device cuda --out "$profile"
echo "gpu_check.sh: calibrated in $((SECONDS - start)) s" >&2
echo "$profile"
