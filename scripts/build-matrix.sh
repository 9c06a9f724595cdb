#!/usr/bin/env bash
# The documented build options must compile, not only the one configuration `make test`
# builds and runs. Compile-only: each configuration goes into its own directory under
# ROOT, and nothing is run. `make test-build-matrix` (part of `make test`) calls it.
#
#   scripts/build-matrix.sh [ROOT [JOBS]]      ROOT defaults to build-matrix, JOBS to nproc
#
# Which configurations, and why these: an option changes the code in two ways only.
#  - CMake: which targets exist and what they depend on. Each of FF_BUILD_MPI, _OPENCL,
#    _CPU_BLAS and _CUDA is configured OFF on its own, the others as CI has them, and
#    generated (a target that depends on a missing one fails there; ff-bench-dist once
#    needed cpu_blas in a no-cpu_blas build). Seconds each.
#  - the preprocessor: FF_HAVE_MPI (dist/dist.c) and FF_TEST_HAVE_CPU_BLAS (tests); no
#    other option reaches an #if. So the all-OFF build compiles the library, the plugins
#    left, and the tests whose sources name those macros or ff/dist.h, with gcc (CI's
#    compiler, Release, so gcc's optimizer-driven warnings fire) and with clang.
#  - clang warns differently from gcc: clang with CI's options builds everything once,
#    Debug (warnings do not depend on -O in clang, and -O0 is fast). The fuzz build
#    compiles the library with clang too, but not the opencl plugin, tests or tools.
# FF_WERROR stays ON throughout: a warning is a failure, as in CI.
# CMAKE_ARGS (environment) go first, so e.g. a compiler launcher can be added but the
# matrix's own options win.
set -euo pipefail
cd "$(dirname "$0")/.."
root="${1:-build-matrix}"
jobs="${2:-$(nproc 2>/dev/null || echo 2)}"
# CI's options (CUDA: AUTO finds no nvcc in CI), and every option OFF
on=(-DFF_BUILD_MPI=ON -DFF_BUILD_OPENCL=ON -DFF_BUILD_CPU_BLAS=ON -DFF_BUILD_CUDA=AUTO)
off=(-DFF_BUILD_MPI=OFF -DFF_BUILD_OPENCL=OFF -DFF_BUILD_CPU_BLAS=OFF -DFF_BUILD_CUDA=OFF)
read -r -a user_args <<< "${CMAKE_ARGS:-}"
failed=()

configure() { # NAME ARGS...: configure and generate ROOT/NAME; its log on failure
  local name="$1"
  shift
  if ! cmake -S . -B "$root/$name" -G "Unix Makefiles" "${user_args[@]}" -DFF_WERROR=ON "$@" \
      > "$root/$name.log" 2>&1; then
    cat "$root/$name.log" >&2
    return 1
  fi
}

# The test targets whose code an option changes, those that exist in this configuration.
option_tests() {
  local dir="$1" src name
  local have
  have="$(cmake --build "$dir" --target help | sed -n 's/^\.\.\. //p')"
  for src in $(grep -l -E 'FF_HAVE_MPI|FF_TEST_HAVE_CPU_BLAS|ff/dist\.h' tests/unit/*.c tests/dist/*.c); do
    name="$(basename "$src" .c)"
    if grep -qx "$name" <<< "$have"; then echo "$name"; fi
  done
}

step() { # NAME SECONDS-START STATUS
  local t=$((SECONDS - $2))
  if [ "$3" = 0 ]; then
    echo "build-matrix: $1 ok (${t} s)"
  else
    echo "build-matrix: $1 FAILED (${t} s; the log is above, and in $root/)" >&2
    failed+=("$1")
  fi
}

mkdir -p "$root"
for opt in MPI OPENCL CPU_BLAS CUDA; do
  t0=$SECONDS
  args=("${on[@]}" "-DFF_BUILD_${opt}=OFF")
  rc=0; configure "gcc-no-${opt,,}" -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=Release "${args[@]}" || rc=$?
  step "gcc-no-${opt,,} (configure)" "$t0" "$rc"
done

build() { # NAME: build the library, the plugins and the option-dependent tests of ROOT/NAME
  local dir="$root/$1"
  # shellcheck disable=SC2046  # one word per target
  cmake --build "$dir" -j "$jobs" --target fusionflow ff_backend_cpu $(option_tests "$dir") \
    > "$dir.build.log" 2>&1 || { cat "$dir.build.log" >&2; return 1; }
}

t0=$SECONDS; rc=0
{ configure gcc-all-off -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=Release "${off[@]}" && build gcc-all-off; } || rc=$?
step gcc-all-off "$t0" "$rc"

t0=$SECONDS; rc=0
{ configure clang-all-off -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug "${off[@]}" &&
  build clang-all-off; } || rc=$?
step clang-all-off "$t0" "$rc"

t0=$SECONDS; rc=0
# the cuda backend's .cu files are nvcc's, not clang's (scripts/gpu-check.sh builds them)
{ configure clang -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug "${on[@]}" -DFF_BUILD_CUDA=OFF &&
  { cmake --build "$root/clang" -j "$jobs" > "$root/clang.build.log" 2>&1 ||
    { cat "$root/clang.build.log" >&2; false; }; }; } || rc=$?
step clang "$t0" "$rc"

if [ ${#failed[@]} -ne 0 ]; then
  echo "build-matrix: ${#failed[@]} configuration(s) do not build: ${failed[*]}" >&2
  exit 1
fi
echo "build-matrix: every configuration builds (${SECONDS} s)"
