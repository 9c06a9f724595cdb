#!/usr/bin/env bash
# `pip install ./python` into a fresh virtual environment, then use the package from
# another directory with no PYTHONPATH or build tree: it must find its bundled library
# and plugins, compute, and default to cpu_blas. Then `pip wheel` must produce a wheel
# holding the library. Needs PyPI (scikit-build-core, numpy) and python3-venv.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
py=${FF_SYSTEM_PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset PYTHONPATH FUSIONFLOW_LIB FF_BACKEND FF_BACKEND_PATH

"$py" -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install -q --disable-pip-version-check "$repo/python"
cd /
"$tmp/venv/bin/python" - <<'PY'
import os
import fusionflow as ff
lib = ff.library_path
assert lib.startswith(os.path.dirname(ff.__file__)), "not the bundled library: %s" % lib
assert ff.default_backend() == "cpu_blas", ff.default_backend()
x = ff.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
y = (x @ x).sum()
y.backward()
assert y.item() == 54.0 and x.grad.tolist() == [[7.0, 11.0], [9.0, 13.0]], (y.item(), x.grad.tolist())
assert x.device == "cpu_blas"
print("import from / ok:", lib)
PY
"$tmp/venv/bin/python" -m fusionflow | tee "$tmp/info.txt"
grep -q "default backend: cpu_blas" "$tmp/info.txt"
grep -q "cpu_blas .*fusionflow/libff_backend_cpu_blas.so" "$tmp/info.txt"
"$tmp/venv/bin/fusionflow-info" > /dev/null

"$tmp/venv/bin/pip" wheel -q --disable-pip-version-check --no-deps -w "$tmp/wheels" "$repo/python"
whl=$(ls "$tmp"/wheels/fusionflow-*.whl)
"$py" -c "import sys, zipfile; n = zipfile.ZipFile(sys.argv[1]).namelist(); \
assert 'fusionflow/libfusionflow.so' in n and 'fusionflow/libff_backend_cpu_blas.so' in n, n; print('wheel ok:', sys.argv[1].rsplit('/', 1)[1])" "$whl"
echo "pip install check passed"
