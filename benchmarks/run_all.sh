#!/bin/sh
# The full benchmark: NumPy/PyTorch baselines, ff-bench (merging them), then the plot
# and the results section of benchmarks/README.md. Run from the repository root:
#     benchmarks/run_all.sh [path/to/ff-bench] [extra ff-bench options...]
# (`cmake --build build --target bench` does the same). OPENBLAS_CORETYPE is left as
# the environment sets it: it decides which OpenBLAS kernel both sides use.
set -eu
BENCH=${1:-build/bin/ff-bench}
[ $# -gt 0 ] && shift
OUT=benchmarks/results
mkdir -p "$OUT"
PY=/usr/bin/python3
"$PY" benchmarks/baselines.py --threads 1,2 --mnist --json "$OUT/baselines.json"
"$BENCH" --threads 1,2 --mnist --baselines-json "$OUT/baselines.json" --json "$OUT/latest.json" "$@" | tee "$OUT/latest.txt"
"$PY" benchmarks/report.py "$OUT/latest.json" --readme benchmarks/README.md --plot-dir "$OUT"
