#!/usr/bin/python3
"""Embedding forward / backward, index_add and middle-axis sums (issue 49): FusionFlow's
Python API beside PyTorch on the same shapes, in one process per thread count, rounds
alternating between the two; medians of wall time and of process CPU time per call.

    FUSIONFLOW_LIB=build-h49/lib/libfusionflow.so PYTHONPATH=python \\
        /usr/bin/python3 benchmarks/bench_index_reduce_torch.py [--threads 1,2] [--rounds 15] [--filter SUBSTR]

Each thread count runs in a child process with FF_NUM_THREADS (read once, when the
backend loads), OMP_NUM_THREADS and OPENBLAS_NUM_THREADS set to it, and
torch.set_num_threads(n). A round times `inner` calls of one side, then of the other
(their order swapped every round), after a warm-up call of each. The ratios are
ff time / torch time: below 1 means FusionFlow is faster.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np


def workloads(ff, torch):
    """(name, ff thunk, torch thunk) on the same data."""
    rng = np.random.default_rng(49)
    out = []

    def both(a):
        return ff.from_numpy(a), torch.from_numpy(a)

    for V, D, N in ((1000, 64, 4096), (50000, 256, 8192), (50000, 256, 65536)):
        w_f, w_t = both(rng.uniform(-1, 1, (V, D)).astype(np.float32))
        i_f, i_t = both(rng.integers(0, V, N).astype(np.int64))
        out.append(("embedding_fwd_%dx%d_%d" % (V, D, N),
                    lambda w=w_f, i=i_f: ff.nn.functional.embedding(i, w),
                    lambda w=w_t, i=i_t: torch.nn.functional.embedding(i, w)))
    for V, D, N in ((1000, 64, 4096), (50000, 256, 8192)):
        w_f, w_t = both(rng.uniform(-1, 1, (V, D)).astype(np.float32))
        w_f.requires_grad_(True)
        w_t.requires_grad_(True)
        i_f, i_t = both(rng.integers(0, V, N).astype(np.int64))
        g_f, g_t = both(rng.uniform(-1, 1, (N, D)).astype(np.float32))

        def step(F, w, i, g):
            F.nn.functional.embedding(i, w).backward(g)
            w.grad = None

        out.append(("embedding_fwd_bwd_%dx%d_%d" % (V, D, N),
                    lambda w=w_f, i=i_f, g=g_f: step(ff, w, i, g),
                    lambda w=w_t, i=i_t, g=g_t: step(torch, w, i, g)))
    for V, D, N in ((1000, 256, 65536),):
        x_f, x_t = both(np.zeros((V, D), np.float32))
        i_f, i_t = both(rng.integers(0, V, N).astype(np.int64))
        s_f, s_t = both(rng.uniform(-1, 1, (N, D)).astype(np.float32))
        out.append(("index_add_%dx%d_%d" % (V, D, N),
                    lambda x=x_f, i=i_f, s=s_f: x.index_add(0, i, s),
                    lambda x=x_t, i=i_t, s=s_t: x.index_add(0, i, s)))
    for shape in ((4, 4, 64, 64), (4, 4, 256, 256), (8, 32, 256, 256)):
        x_f, x_t = both(rng.uniform(-1, 1, shape).astype(np.float32))
        out.append(("sum1_%s" % "x".join(map(str, shape)), lambda x=x_f: x.sum(1), lambda x=x_t: x.sum(1)))
    return out


def timed(fn, inner):
    w0, c0 = time.perf_counter(), time.process_time()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - w0) / inner, (time.process_time() - c0) / inner


def child(a):
    import fusionflow as ff
    import torch
    torch.set_num_threads(a.child)
    print("threads %d: fusionflow (%s) vs torch %s" % (a.child, os.environ.get("FUSIONFLOW_LIB", "default lib"),
                                                       torch.__version__))
    print("%-32s %10s %10s %8s %10s %10s %8s" % ("workload", "ff ms", "torch ms", "ff/torch", "ff cpu", "torch cpu",
                                                "ff/torch"))
    for name, f_ff, f_t in workloads(ff, torch):
        if a.filter and a.filter not in name:
            continue
        f_ff(), f_t()  # warm-up: caches, allocator, lazy init
        one, _ = timed(f_t, 1)
        inner = max(1, int(0.02 / max(one, 1e-6)))  # a round side lasts ~20 ms
        res = {"ff": [], "torch": []}
        for r in range(a.rounds):
            order = (("ff", f_ff), ("torch", f_t)) if r % 2 == 0 else (("torch", f_t), ("ff", f_ff))
            for side, fn in order:
                res[side].append(timed(fn, inner))
        med = {s: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for s, v in res.items()}
        (fw, fc), (tw, tc) = med["ff"], med["torch"]
        print("%-32s %10.3f %10.3f %8.2f %10.3f %10.3f %8.2f" % (name, fw * 1e3, tw * 1e3, fw / tw, fc * 1e3,
                                                                 tc * 1e3, fc / tc))
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--filter", default="")
    ap.add_argument("--child", type=int, default=0)
    a = ap.parse_args()
    if a.child:
        return child(a)
    for n in a.threads.split(","):
        env = dict(os.environ)
        for k in ("FF_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[k] = n
        cmd = [sys.executable, os.path.abspath(__file__), "--child", n, "--rounds", str(a.rounds)]
        if a.filter:
            cmd += ["--filter", a.filter]
        subprocess.run(cmd, env=env, check=True)
    print("ff/torch: FusionFlow's median time over PyTorch's (below 1: FusionFlow is faster); "
          "cpu: process CPU time per call")


if __name__ == "__main__":
    main()
