#!/usr/bin/env bash
# Installs einops (PyPI; Debian bookworm has no package of it) for the Python that runs the
# tests, so tests/python/test_einops.py can check einops' patterns on fusionflow tensors.
# einops is pure Python and no dependency of fusionflow: only the tests use it.
# Pinned: the backend in python/fusionflow/_einops.py is written against einops' AbstractBackend.
set -euo pipefail
VERSION=0.8.2
py="${PYTHON:-/usr/bin/python3}"
command -v "$py" >/dev/null || py=python3
if "$py" -c "import einops, sys; sys.exit(einops.__version__ != '$VERSION')" 2>/dev/null; then
  exit 0
fi
if ! "$py" -m pip --version >/dev/null 2>&1; then
  echo "install-einops: $py has no pip: install python3-pip (scripts/setup-deps.sh does)" >&2
  exit 1
fi
# Debian's Python is "externally managed" (PEP 668): a lone pure-Python package beside
# Debian's is what --break-system-packages is for; older pips lack the flag.
flag=()
"$py" -m pip install --help 2>/dev/null | grep -q -- --break-system-packages && flag=(--break-system-packages)
echo "install-einops: pip install einops==$VERSION"
"$py" -m pip install --disable-pip-version-check -q "${flag[@]}" "einops==$VERSION"
