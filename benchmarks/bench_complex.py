#!/usr/bin/python3
"""Issue 45's complex rows side by side, in one process: matmul_c64_512 and fft_c64_2^20 on
fusionflow (the default backend, cpu_blas: cgemm and FFTW), PyTorch 1.13 and NumPy, one
thread each, the three sides alternated in every round (the order rotated), process CPU
time per call; prints each side's median and the ratios of medians (fusionflow's speed
over the other's: above 1 is faster). ff-bench has the same rows (bench_complex.c).

    FUSIONFLOW_LIB=build/lib/libfusionflow.so PYTHONPATH=python /usr/bin/python3 benchmarks/bench_complex.py
"""
import argparse
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("FF_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import fusionflow as ff  # noqa: E402


def cpu_per_call(fn, reps):
    fn()
    t0 = time.process_time()
    for _ in range(reps):
        fn()
    return (time.process_time() - t0) / reps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--log2", type=int, default=20)
    a = ap.parse_args()
    torch.set_num_threads(1)
    ff.set_num_threads(1)
    rng = np.random.default_rng(0)
    n, m = a.n, 1 << a.log2
    A, B = ((rng.uniform(-1, 1, (n, n)) + 1j * rng.uniform(-1, 1, (n, n))).astype(np.complex64) for _ in range(2))
    S = (rng.uniform(-1, 1, m) + 1j * rng.uniform(-1, 1, m)).astype(np.complex64)
    fa, fb, fs = ff.tensor(A), ff.tensor(B), ff.tensor(S)
    ta, tb, ts = torch.tensor(A), torch.tensor(B), torch.tensor(S)
    np.testing.assert_allclose((fa @ fb).numpy(), (ta @ tb).numpy(), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(ff.fft.fft(fs).numpy(), torch.fft.fft(ts).numpy(), rtol=1e-3, atol=1e-2)
    rows = {
        "matmul_c64_%d" % n: {"fusionflow": lambda: fa @ fb, "torch": lambda: ta @ tb, "numpy": lambda: A @ B},
        "fft_c64_2^%d" % a.log2: {"fusionflow": lambda: ff.fft.fft(fs), "torch": lambda: torch.fft.fft(ts),
                                   "numpy": lambda: np.fft.fft(S)},
    }
    for name, sides in rows.items():
        times = {k: [] for k in sides}
        order = list(sides)
        reps = 5
        for r in range(a.rounds):
            for k in order[r % 3:] + order[:r % 3]:
                times[k].append(cpu_per_call(sides[k], reps))
        med = {k: statistics.median(v) for k, v in times.items()}
        print("%-16s " % name + "  ".join("%s %.3f ms" % (k, 1e3 * v) for k, v in med.items()) +
              "  | fusionflow speed / torch %.2fx, / numpy %.2fx" % (med["torch"] / med["fusionflow"],
                                                                     med["numpy"] / med["fusionflow"]))


if __name__ == "__main__":
    main()
