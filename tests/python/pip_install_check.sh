#!/usr/bin/env bash
# `pip install .` (the repository root's pyproject.toml, scikit-build-core) into a fresh
# virtual environment, then use the package from / with no PYTHONPATH or build tree: it
# must load its bundled library and plugins, compute, and default to cpu_blas, with cpu
# still selectable and a bad FF_BACKEND still an error. Then `pip wheel .` must give a
# wheel holding the library and the plugins (RUNPATH $ORIGIN only), and the sdist must
# hold the C sources a wheel is built from. FF_EXPECT_DEFAULT=cpu (what ctest passes in a
# -DFF_BUILD_CPU_BLAS=OFF build) builds the package without cpu_blas too and expects the
# fall back to cpu. Needs PyPI (scikit-build-core, numpy) and python3-venv. Ends with
# "pip install check passed"; any failure stops it before that.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
py=${FF_SYSTEM_PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset PYTHONPATH FUSIONFLOW_LIB FF_BACKEND FF_BACKEND_PATH PYTHONHOME
export FF_WANT=${FF_EXPECT_DEFAULT:-cpu_blas}
case $FF_WANT in cpu_blas | cpu) ;; *) echo "FF_EXPECT_DEFAULT must be cpu_blas or cpu"; exit 2 ;; esac
t0=$SECONDS
touch "$tmp/stamp"

"$py" -m venv "$tmp/venv"
vpy=$tmp/venv/bin/python
pip=("$vpy" -m pip -q --disable-pip-version-check)
# The install and the wheel share one build directory outside the tree (the second build
# is incremental); two test runs at once never share one.
cfg=(--config-settings=build-dir="$tmp/skbuild")
if [ "$FF_WANT" = cpu ]; then cfg+=(--config-settings=cmake.define.FF_BUILD_CPU_BLAS=OFF); fi

# 1. the documented command, from the repository root
(cd "$repo" && "${pip[@]}" install "${cfg[@]}" .)
echo "pip install .: $((SECONDS - t0)) s"
litter=$(find "$repo" -maxdepth 2 -newer "$tmp/stamp" \( -name '*.egg-info' -o -name _skbuild \
         -o -path "$repo/python/build" -o -path "$repo/dist" \) -print)
[ -z "$litter" ] || { echo "FAIL: the build left files in the source tree: $litter"; exit 1; }

# 2. used from elsewhere: the bundled library first (a FUSIONFLOW_LIB that points nowhere
# is not even looked at), plugins beside it, cpu_blas (FF_WANT) the default
cd /
FUSIONFLOW_LIB=/nonexistent/libfusionflow.so "$vpy" - <<'PY'
import importlib.metadata, os
import fusionflow as ff
from fusionflow._lib import C
from fusionflow._backend import backend_handle
pkg = os.path.dirname(ff.__file__)
assert "/venv/" in pkg and "site-packages" in pkg, "not the installed package: %s" % pkg
assert ff.library_path == os.path.join(pkg, "libfusionflow.so"), ff.library_path
assert importlib.metadata.version("fusionflow") == ff.__version__, ff.__version__
want = os.environ["FF_WANT"]
assert ff.default_backend() == want, ff.default_backend()
for name in {want, "cpu"}:
    where = C.ff_backend_path(backend_handle(name)).decode()
    assert where == os.path.join(pkg, "libff_backend_%s.so" % name), (name, where)
x = ff.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
y = (x @ x).sum()
y.backward()
assert y.item() == 54.0 and x.grad.tolist() == [[7.0, 11.0], [9.0, 13.0]], (y.item(), x.grad.tolist())
# Python's 'cpu' is the fast backend the wheel has (want); the reference is 'cpu_ref'
assert x.device == ff.device("cpu") and x.to("cpu_ref").to("cpu").device == ff.device("cpu")
assert ff._device.backend_name("cpu") == want and ff._device.backend_name("cpu_ref") == "cpu"
assert ff._ext_status().startswith("C extension (%s/_ffext" % pkg), ff._ext_status()  # the bundled fast paths
assert "__getitem__" in ff._fastpath.taken() and x[0].tolist() == [1.0, 2.0]
print("import from / ok:", ff.library_path, "|", ff._ext_status())
PY
FF_BACKEND=cpu "$vpy" -c "import fusionflow as ff; assert ff.default_backend() == 'cpu'; \
assert ff.ones(3).sum().item() == 3.0 and str(ff.ones(3).device) == ('cpu' if '$FF_WANT' == 'cpu' else 'cpu_ref'); \
assert ff.ones(3, device='cpu').device == ff.device('cpu'); print('FF_BACKEND=cpu ok')"
FF_BACKEND=nope "$vpy" -c "import fusionflow as ff
try:
    ff.zeros(2)
except ff.FusionFlowError as e:
    assert 'nope' in str(e), e
    print('FF_BACKEND=nope fails loudly:', str(e)[:60], '...')
else:
    raise SystemExit('FF_BACKEND=nope did not fail')"

# 3. python -m fusionflow and the fusionflow-info script
"$vpy" -m fusionflow | tee "$tmp/info.txt"
grep -q "^default backend: $FF_WANT " "$tmp/info.txt"
grep -Eq "^  $FF_WANT +/.*/site-packages/fusionflow/libff_backend_$FF_WANT.so  \[version" "$tmp/info.txt"
grep -Eq "^  cpu +/.*/site-packages/fusionflow/libff_backend_cpu.so  \[version" "$tmp/info.txt"
"$tmp/venv/bin/fusionflow-info" > /dev/null
if FF_BACKEND=nope "$vpy" -m fusionflow > "$tmp/bad.txt"; then
    echo "FAIL: python -m fusionflow exited 0 with FF_BACKEND=nope"; exit 1
fi
grep -q "^default backend: error: .*nope" "$tmp/bad.txt"

# 4. pip wheel: the library and every plugin inside the package, found through $ORIGIN
cd "$repo"
"${pip[@]}" wheel "${cfg[@]}" --no-deps -w "$tmp/wheels" .
whl=$(ls "$tmp"/wheels/fusionflow-*-cp3*-*.whl)  # with the C extension: tagged for this Python
mkdir "$tmp/unzipped"
"$vpy" - "$whl" "$tmp/unzipped" <<'PY'
import os, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = set(z.namelist())
need = {"fusionflow/__init__.py", "fusionflow/__main__.py", "fusionflow/nn/__init__.py",
        "fusionflow/optim/lr_scheduler/__init__.py", "fusionflow/utils/data/__init__.py", "fusionflow/cuda/amp.py",
        "fusionflow/libfusionflow.so", "fusionflow/libff_backend_cpu.so",
        "fusionflow/libff_backend_cuda_stub.so", "fusionflow/libff_backend_%s.so" % os.environ["FF_WANT"]}
assert any(n.startswith("fusionflow/_ffext.cpython-") and n.endswith(".so") for n in names), sorted(names)[:20]
assert need <= names, sorted(need - names)
assert os.environ["FF_WANT"] == "cpu_blas" or "fusionflow/libff_backend_cpu_blas.so" not in names
stray = [n for n in names if not n.startswith(("fusionflow/", "fusionflow-"))]
assert not stray, stray  # no tools, tests, headers or CMake files
z.extractall(sys.argv[2], [n for n in names if n.endswith(".so")])
print("wheel ok:", sys.argv[1].rsplit("/", 1)[1])
PY
if command -v readelf > /dev/null; then
    for so in "$tmp"/unzipped/fusionflow/*.so; do
        rp=$(readelf -d "$so" | sed -n 's/.*(R[UN]*PATH).*\[\(.*\)\]/\1/p')
        [ -z "$rp" ] || [ "$rp" = '$ORIGIN' ] || { echo "FAIL: $so has RUNPATH '$rp'"; exit 1; }
    done
fi

# 5. the sdist holds what a wheel is built from (CMake project, C sources, the package)
"${pip[@]}" install scikit-build-core
"$vpy" -c "import sys; from scikit_build_core.build import build_sdist; print(build_sdist(sys.argv[1]))" \
    "$tmp/sdist" > "$tmp/sdist.txt"
"$vpy" - "$tmp/sdist/$(tail -n1 "$tmp/sdist.txt")" <<'PY'
import sys, tarfile
names = {n.split("/", 1)[1] for n in tarfile.open(sys.argv[1]).getnames() if "/" in n}
need = {"pyproject.toml", "CMakeLists.txt", "core/loader.c", "include/ff/backend_abi.h",
        "backends/cpu/CMakeLists.txt", "backends/cpu_blas/CMakeLists.txt",
        "python/fusionflow/__init__.py", "python/fusionflow/_lib.py"}
assert need <= names, sorted(need - names)
stray = [n for n in names if n.split("/")[0].startswith("build") or n.endswith(".so")]
assert not stray, stray[:10]
print("sdist ok:", sys.argv[1].rsplit("/", 1)[1], "(%d files)" % len(names))
PY
echo "pip install check passed ($((SECONDS - t0)) s)"
