#!/usr/bin/env bash
# ONNX Runtime for benchmarks/bench_embed.py --ort (issue 49's baseline for ff-embed): PyPI's
# onnxruntime in a venv of its own (Debian bookworm has no package of it), over Debian's
# NumPy (--system-site-packages). Benchmarks only: no test and no part of fusionflow uses it.
# Prints the venv's python on stdout.
set -euo pipefail
VERSION=1.17.3
venv="${FF_ORT_VENV:-$HOME/.cache/fusionflow/ort-venv}"
py="${PYTHON:-/usr/bin/python3}"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import onnxruntime, sys; sys.exit(onnxruntime.__version__ != '$VERSION')" 2>/dev/null; then
  echo "$venv/bin/python"
  exit 0
fi
"$py" -m venv --help >/dev/null 2>&1 || { echo "setup-ort: $py has no venv module: install python3-venv" >&2; exit 1; }
"$py" -m venv --system-site-packages "$venv" >&2
"$venv/bin/python" -m pip install --disable-pip-version-check -q "onnxruntime==$VERSION" >&2
echo "$venv/bin/python"
