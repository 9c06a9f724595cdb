#!/usr/bin/env bash
# Which branches of the reference backend (backends/cpu and the shared scalar formulas)
# the conformance suite never takes: builds build-cov with --coverage, runs the suite on
# cpu in one process, merges gcov's reports (`make coverage`; about a minute).
set -euo pipefail
build=${1:-build-cov}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS="--coverage -O0" -DFF_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j2 --target ff_backend_cpu ff-conformance >/dev/null
find "$build" -name '*.gcda' -delete
FF_BACKEND= FF_BACKEND_PATH= "$build/bin/ff-conformance" --backend cpu --no-fork | tail -1
python3 "$(dirname "$0")/coverage_report.py" "$build"
