#!/usr/bin/env bash
# The cuda backend's acceptance run, for a machine with an NVIDIA GPU, driver and the CUDA
# toolkit (nvcc on PATH or in /usr/local/cuda/bin):
#
#     bash scripts/gpu-check.sh [BUILD_DIR]        (default build-gpu)
#
# 1. configure and build with -DFF_BUILD_CUDA=ON (a missing nvcc fails the configure);
# 2. ff-conformance --backend cuda: must report 0 failures;
# 3. the demo on the GPU, FF_BACKEND=cuda fashion_mnist: test accuracy must be >= 0.88
#    (data: /usr/share/datasets/fashion-mnist, Debian's dataset-fashion-mnist, else
#    downloaded once into $FF_DATA_DIR, default ~/.cache/fusionflow/fashion-mnist);
# 4. ff-bench-cuda: matmul f32 n = 1024..8192 against cuBLAS on the same buffers (>= 0.95),
#    add and exp on 64M floats against the measured device bandwidth (>= 0.8);
# 5. the MLP 784-256-10 training step through FusionFlow (ff-bench, when the cpu_blas
#    build made it) and through PyTorch on the same GPU (when torch.cuda.is_available()).
# Reports land in BUILD_DIR/gpu-check/: gpu-check.json and gpu-check.md (the table), plus
# each step's log. Exit status 0 only when every step ran and met its target; every miss
# is named at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-gpu}
OUT=$BUILD/gpu-check
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
failures=()
fail() {
    echo "gpu-check: FAILED: $*" >&2
    failures+=("$*")
}

if command -v nvidia-smi >/dev/null; then
    nvidia-smi -L || fail "nvidia-smi lists no GPU"
else
    echo "gpu-check: nvidia-smi not found (no driver?); continuing, init will say what is missing" >&2
fi

echo "== configure and build ($BUILD, -DFF_BUILD_CUDA=ON)"
mkdir -p "$BUILD"
if ! cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DFF_BUILD_CUDA=ON >"$BUILD/configure.log" 2>&1; then
    cat "$BUILD/configure.log" >&2
    echo "gpu-check: FAILED: configure (see above)" >&2
    exit 1
fi
build_start=$(date +%s)
if ! cmake --build "$BUILD" -j "$JOBS"; then
    echo "gpu-check: FAILED: build" >&2
    exit 1
fi
echo "build took $(($(date +%s) - build_start)) s"
mkdir -p "$OUT"
FF_BACKEND=cuda "$BUILD/bin/ff-info" -v --default-only | tee "$OUT/ff-info.txt" || fail "ff-info: the cuda backend does not load"

echo "== conformance"
"$BUILD/bin/ff-conformance" --backend cuda 2>&1 | tee "$OUT/conformance.txt"
conf_rc=${PIPESTATUS[0]}
conf_summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$OUT/conformance.txt" | tail -1)
if [ "$conf_rc" -ne 0 ] || ! grep -qE '^[1-9][0-9]* passed, 0 failed' <<<"$conf_summary"; then
    fail "conformance: ${conf_summary:-no summary line} (exit $conf_rc)"
fi

echo "== demo: Fashion-MNIST MLP on cuda"
data=/usr/share/datasets/fashion-mnist
if [ ! -e "$data/train-images-idx3-ubyte.gz" ] && [ ! -e "$data/train-images-idx3-ubyte" ]; then
    data=${FF_DATA_DIR:-$HOME/.cache/fusionflow/fashion-mnist}
    mkdir -p "$data"
    for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
        [ -e "$data/$f.gz" ] || curl -fsSL -o "$data/$f.gz" \
            "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/$f.gz" || fail "download of $f.gz"
    done
fi
FF_BACKEND=cuda "$BUILD/bin/fashion_mnist" --data "$data" 2>&1 | tr '\r' '\n' | tee "$OUT/demo.txt"
acc=$(grep -oE 'test accuracy: [0-9.]+' "$OUT/demo.txt" | tail -1 | awk '{print $3}')
if [ -z "$acc" ] || ! awk -v a="$acc" 'BEGIN { exit !(a >= 0.88) }'; then
    fail "demo: test accuracy ${acc:-missing}, target >= 0.88"
fi

echo "== benchmarks"
"$BUILD/bin/ff-bench-cuda" --json "$OUT/bench_cuda.json" --md "$OUT/bench_cuda.md" || fail "ff-bench-cuda: a row missed its target (or it failed)"
mlp_ff="" mlp_torch=""
if [ -x "$BUILD/bin/ff-bench" ]; then
    "$BUILD/bin/ff-bench" --backends cuda --threads 1 --filter mlp_784_256_10_step --json "$OUT/mlp_ff.json" \
        >"$OUT/mlp_ff.txt" 2>&1 && mlp_ff=$OUT/mlp_ff.json || fail "ff-bench (MLP step on cuda), see $OUT/mlp_ff.txt"
else
    echo "gpu-check: ff-bench was not built (it needs the cpu_blas build, OpenBLAS): no FusionFlow MLP row" >&2
fi
if python3 -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    python3 benchmarks/bench_cuda_torch.py --json "$OUT/mlp_torch.json" && mlp_torch=$OUT/mlp_torch.json ||
        fail "bench_cuda_torch.py"
else
    echo "gpu-check: PyTorch with CUDA not available: no PyTorch MLP row" >&2
fi

# One report: the benchmark rows, the MLP comparison, conformance and the demo.
python3 - "$OUT" "$conf_summary" "${acc:-}" "$mlp_ff" "$mlp_torch" <<'EOF' || fail "report: a row is missing (above)"
import json, os, sys
out, conf, acc, mlp_ff, mlp_torch = sys.argv[1:6]
missing = []
path = os.path.join(out, "bench_cuda.json")
bench = json.load(open(path)) if os.path.exists(path) else {}
if not bench:
    missing.append("ff-bench-cuda wrote no results")
rows = bench.get("results", [])
ff_s = torch_s = None
if mlp_ff:
    for r in json.load(open(mlp_ff)).get("results", []):
        if r.get("workload") == "mlp_784_256_10_step" and r.get("backend") == "cuda":
            ff_s = r["median_s"]
if mlp_torch:
    torch_s = json.load(open(mlp_torch))["results"][0]["median_s"]
if mlp_ff and ff_s is None:
    missing.append("ff-bench gave no cuda row for mlp_784_256_10_step (see mlp_ff.txt)")
mlp = {"workload": "mlp_784_256_10_step", "ff_s": ff_s, "torch_s": torch_s,
       "torch_over_ff": (torch_s / ff_s) if ff_s and torch_s else None}
report = {"device": bench.get("device"), "measured_bandwidth_gbs": bench.get("measured_bandwidth_gbs"),
          "conformance": conf, "demo_test_accuracy": float(acc) if acc else None, "results": rows, "mlp": mlp}
json.dump(report, open(os.path.join(out, "gpu-check.json"), "w"), indent=2)
with open(os.path.join(out, "gpu-check.md"), "w") as f:
    f.write("# gpu-check\n\nDevice: %s\n\nConformance: %s\n\nDemo (Fashion-MNIST MLP on cuda): test accuracy %s "
            "(target >= 0.88)\n\n" % (report["device"], conf or "missing", acc or "missing"))
    md = os.path.join(out, "bench_cuda.md")
    f.write(open(md).read() if os.path.exists(md) else "(no ff-bench-cuda table)\n")
    ms = lambda s: "%.3f" % (s * 1e3) if s else "n/a"
    f.write("\n| MLP 784-256-10 step (batch 64) | FusionFlow ms | PyTorch ms | PyTorch/FusionFlow |\n|---|---|---|---|\n")
    f.write("| cuda | %s | %s | %s |\n" % (ms(ff_s), ms(torch_s),
            "%.2f" % mlp["torch_over_ff"] if mlp["torch_over_ff"] else "n/a"))
print(open(os.path.join(out, "gpu-check.md")).read())
for m in missing:
    print("gpu-check report: " + m, file=sys.stderr)
sys.exit(1 if missing else 0)
EOF

if [ ${#failures[@]} -ne 0 ]; then
    echo "gpu-check: ${#failures[@]} failure(s):" >&2
    for f in "${failures[@]}"; do echo "  - $f" >&2; done
    exit 1
fi
echo "gpu-check: all targets met; reports in $OUT/"
