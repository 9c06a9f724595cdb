#!/usr/bin/env bash
# Runs every libFuzzer harness of a FF_FUZZ build for SECONDS each, starting from the
# seed corpus in tests/fuzz/corpus/<target> (read only: new inputs go to a scratch
# corpus). A crash, a sanitizer report or a leak fails the run and leaves the input in
# build-fuzz/fuzz-artifacts/. Usage: run.sh BUILD_DIR SECONDS
set -euo pipefail
build=${1:?usage: run.sh BUILD_DIR SECONDS}
seconds=${2:-15}
here=$(cd "$(dirname "$0")" && pwd)
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"
export FF_BACKEND= FF_BACKEND_PATH=
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
status=0
for exe in "$build"/bin/fuzz_*; do
  target=$(basename "$exe" | sed 's/^fuzz_//')
  scratch=$(mktemp -d)
  echo "fuzz $target: ${seconds} s"
  if ! "$exe" "$scratch" "$here/corpus/$target" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=3072 \
       -max_len=4096 -print_final_stats=1 -artifact_prefix="$artifacts/$target-" > "$scratch.log" 2>&1; then
    tail -60 "$scratch.log"
    echo "fuzz $target: FAILED (input saved under $artifacts)"
    status=1
  else
    grep -E "stat::number_of_executed_units|stat::new_units_added" "$scratch.log" | tr '\n' ' '
    echo
    echo "fuzz $target: ok"
  fi
  rm -rf "$scratch" "$scratch.log"
done
exit $status
