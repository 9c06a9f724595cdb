#!/bin/bash
# The Fashion-MNIST demo's eager training time with the optimizers' fused step
# (nn/optim_fused.c) and without it (FF_OPTIM_FUSED=0), f32 and bf16, 1 and 2 threads,
# interleaved, REPS times. Prints one line per run (seconds for --epochs 3, test accuracy,
# every epoch's mean loss: fused and composed must print the same two). Take medians.
#   bash benchmarks/optim_fused_demo.sh [build dir (build)] [data dir] [reps (3)]
build=${1:-build} data=${2:-data} reps=${3:-3}
for rep in $(seq "$reps"); do
  for th in 1 2; do
    for prec in f32 bf16; do
      for fz in 1 0; do
        out=$(FF_OPTIM_FUSED=$fz FF_NUM_THREADS=$th OMP_NUM_THREADS=$th OPENBLAS_NUM_THREADS=$th FF_BACKEND=cpu_blas \
          "$build/bin/fashion_mnist" --data "$data" --epochs 3 --precision "$prec" 2>&1)
        t=$(echo "$out" | sed -n 's/^trained in \([0-9.]*\) s.*/\1/p')
        acc=$(echo "$out" | sed -n 's/^test accuracy: //p')
        loss=$(echo "$out" | grep -o 'mean loss [0-9.]*' | cut -d' ' -f3 | paste -sd/)
        echo "rep=$rep threads=$th precision=$prec fused=$fz trained_s=$t acc=$acc loss=$loss load=$(cut -d' ' -f1 /proc/loadavg)"
      done
    done
  done
done
