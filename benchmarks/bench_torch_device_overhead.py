#!/usr/bin/python3
"""Dispatch overhead of fusionflow.torch_device (issue 51): µs of process CPU time per call
of small ATen ops on ffd.device(BACKEND) beside the same ops on PyTorch's CPU, one process,
1 thread. On tensors this small a call is all overhead: PyTorch's dispatcher and autograd
layers on both sides, then on the device the wrap into FusionFlow views, FusionFlow's op
(shape work, the backend call) and the result's TensorImpl.

    FUSIONFLOW_LIB=$PWD/build/lib/libfusionflow.so PYTHONPATH=$PWD/python \\
        /usr/bin/python3 benchmarks/bench_torch_device_overhead.py [--backend cpu_blas] [--rounds 7] [--json FILE]

Each round times `inner` calls of both sides of a row, the sides' order swapped every
round, after a warm-up; the table gives medians over rounds and device / cpu.
"""
import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("FF_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import fusionflow.torch_device as ffd  # noqa: E402

torch.set_num_threads(1)


def rows(dev):
    torch.manual_seed(0)
    a, b = torch.randn(8, 16), torch.randn(8, 16)
    w = torch.randn(16, 16)
    x = torch.randn(64, 16)
    idx = torch.randint(0, 64, (8,))
    lin = torch.nn.Linear(16, 16)
    sides = {}
    for name, d in (("cpu", "cpu"), ("device", dev)):
        A, B, W, X, I = (t.to(d) for t in (a, b, w, x, idx))
        L = torch.nn.Linear(16, 16).to(d)
        L.load_state_dict(lin.state_dict())
        P = A.clone().requires_grad_()
        sides[name] = [
            ("a + b", 2000, lambda A=A, B=B: A + B),
            ("a * 2.0", 2000, lambda A=A: A * 2.0),
            ("F.relu", 2000, lambda A=A: F.relu(A)),
            ("a.sum()", 2000, lambda A=A: A.sum()),
            ("a @ w", 1000, lambda A=A, W=W: A @ W),
            ("x[idx]", 1000, lambda X=X, I=I: X[I]),
            ("a[1:3] (view)", 4000, lambda A=A: A[1:3]),
            ("Linear fwd", 1000, lambda A=A, L=L: L(A)),
            ("Linear fwd+bwd", 300, lambda P=P, L=L: L(P).sum().backward()),
        ]
    return [(cpu[0], cpu[1], {"cpu": cpu[2], "device": dv[2]}) for cpu, dv in zip(sides["cpu"], sides["device"])]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="cpu_blas")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json")
    a = ap.parse_args()
    dev = ffd.device(a.backend)
    table = {}
    print("%-18s %10s %10s %9s   (µs per call, process CPU time, %s)" % ("op", "torch cpu", "device", "dev/cpu",
                                                                        a.backend))
    for name, inner, side in rows(dev):
        times = {k: [] for k in side}
        for fn in side.values():
            for _ in range(inner // 10):
                fn()
        for r in range(a.rounds):
            for k in (("cpu", "device") if r % 2 == 0 else ("device", "cpu")):
                fn = side[k]
                t0 = time.process_time()
                for _ in range(inner):
                    fn()
                times[k].append((time.process_time() - t0) / inner * 1e6)
        c, d = statistics.median(times["cpu"]), statistics.median(times["device"])
        table[name] = {"cpu_us": c, "device_us": d, "ratio": d / c}
        print("%-18s %10.2f %10.2f %8.2fx" % (name, c, d, d / c))
    if ffd.fallback_counts():
        print("fallbacks (these rows measured PyTorch's CPU kernel through copies):", ffd.fallback_counts())
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"backend": a.backend, "rows": table, "rounds": a.rounds}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
