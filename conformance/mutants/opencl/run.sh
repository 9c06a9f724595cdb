#!/usr/bin/env bash
# The opencl mutation run: each *.patch here plants one realistic device-backend fault in
# backends/opencl. For each, a scratch copy of the source tree (under a temporary
# directory; the real tree is never touched) gets the patch, only the opencl plugin is
# built, and BUILD_DIR's ff-conformance runs on it alone. A fault is caught when the run
# exits non-zero with a FAIL or CRASH line. Not part of CI: about a minute per patch on 2
# cores, and up to 10 minutes for a patch to a .cl file while PoCL's kernel cache is cold
# (the first run of all 14 took 43 minutes on a busy machine). Usage:
#   conformance/mutants/opencl/run.sh [BUILD_DIR] [PATCH...]     (`make mutants-opencl`)
# FF_MUTANT_ARGS adds ff-conformance arguments (e.g. "-o device." for a quick look). Each
# run's whole output is kept in BUILD_DIR/mutants-opencl/<patch>.txt.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
build=$(cd "${1:-build}" && pwd) || exit 2
shift || true
conf="$build/bin/ff-conformance"
[ -x "$conf" ] || { echo "mutants-opencl: $conf is not built" >&2; exit 2; }
patches=("$@")
[ ${#patches[@]} -gt 0 ] || patches=("$here"/*.patch)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/ff-mutants-opencl.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
# the working tree as it is (tracked and untracked files, not ignored ones: no build dirs)
mkdir -p "$scratch/src" "$scratch/pristine"
git -C "$root" ls-files -z --cached --others --exclude-standard |
    (cd "$root" && tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -xf - -C "$scratch/src"
cp -a "$scratch/src/backends/opencl" "$scratch/pristine/opencl"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S "$scratch/src" -B "$scratch/build" -DCMAKE_BUILD_TYPE=Release -DFF_BUILD_OPENCL=ON -DFF_BUILD_MPI=OFF \
    -DFF_BUILD_CUDA=OFF -DFF_BUILD_TESTS=OFF "${launcher[@]}" >"$scratch/cmake.log" 2>&1 ||
    { cat "$scratch/cmake.log"; exit 2; }
plugin="$scratch/build/lib/libff_backend_opencl.so"
export FF_BACKEND= FF_BACKEND_PATH= FF_OPENCL_CACHE_DIR="$scratch/clcache"
logs="$build/mutants-opencl"
mkdir -p "$logs"
caught=0 missed=() t0=$SECONDS
for p in "${patches[@]}"; do
    name=$(basename "$p" .patch)
    # a fresh copy with new times: make must rebuild what the last patch changed
    rm -rf "$scratch/src/backends/opencl" && cp -R "$scratch/pristine/opencl" "$scratch/src/backends/opencl"
    if ! patch -s -p1 -d "$scratch/src" <"$p"; then
        missed+=("$name"); printf 'NOPATCH %-36s the patch does not apply\n' "$name"; continue
    fi
    if ! cmake --build "$scratch/build" --target ff_backend_opencl -j2 >"$scratch/build.log" 2>&1; then
        missed+=("$name"); printf 'NOBUILD %-36s\n' "$name"; tail -5 "$scratch/build.log"; continue
    fi
    t1=$SECONDS
    out=$("$conf" --backend "$plugin" --timeout 30 ${FF_MUTANT_ARGS:-} 2>&1)
    rc=$?
    printf '%s\n' "$out" >"$logs/$name.txt"
    nfail=$(grep -c -E '^(FAIL|CRASH) ' <<<"$out")
    ndev=$(grep -c -E '^(FAIL|CRASH) device\.' <<<"$out")
    first=$(grep -m1 -E '^(FAIL|CRASH) ' <<<"$out" | cut -c1-100)
    if [ $rc -ne 0 ] && [ "$nfail" -gt 0 ]; then
        caught=$((caught + 1))
        printf 'caught  %-36s %5d failing (%2d device.*), %3d s  %s\n' "$name" "$nfail" "$ndev" $((SECONDS - t1)) "$first"
    else
        missed+=("$name"); printf 'MISSED  %-36s exit %d, %3d s\n' "$name" "$rc" $((SECONDS - t1))
    fi
done
echo "mutants-opencl: $caught of ${#patches[@]} caught in $((SECONDS - t0)) s${missed:+; missed: ${missed[*]}}"
[ ${#missed[@]} -eq 0 ]
