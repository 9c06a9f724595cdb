"""Per-call cost of the small ops autograd's bookkeeping touches (issue 44: edges, input
snapshots, view tracking, the storage version), in µs of process CPU time, 1 thread.
Run it once per library build, alternating the builds, and compare the medians:

    for i in 1 2 3 4 5; do
      FF_NUM_THREADS=1 FUSIONFLOW_LIB=old/lib/libfusionflow.so PYTHONPATH=python /usr/bin/python3 benchmarks/bench_autograd_overhead.py
      FF_NUM_THREADS=1 FUSIONFLOW_LIB=build/lib/libfusionflow.so PYTHONPATH=python /usr/bin/python3 benchmarks/bench_autograd_overhead.py
    done
"""
import time

import fusionflow as ff
import fusionflow.nn as nn


def per_call_us(f, n):
    c = time.process_time()
    for _ in range(n):
        f()
    return (time.process_time() - c) / n * 1e6


def main():
    a, b = ff.randn(8, 16), ff.randn(8, 16)
    w = ff.randn(16, 16, requires_grad=True)
    m = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = ff.optim.SGD(m.parameters(), lr=0.01)
    x, tgt = ff.randn(16, 32), ff.randint(0, 10, (16,))

    def fwd_bwd():
        (a @ w).relu()[1:5].sum().backward()

    def mlp_step():
        loss = nn.functional.cross_entropy(m(x), tgt)
        opt.zero_grad()
        loss.backward()
        opt.step()

    def inplace_no_grad():
        with ff.no_grad():
            a.add_(b)

    rows = [("view a[1:3]", lambda: a[1:3], 20000), ("a + b", lambda: a + b, 20000),
            ("matmul-relu-slice-sum fwd+bwd", fwd_bwd, 3000), ("MLP 32-64-10 SGD step", mlp_step, 2000),
            ("no_grad a.add_(b)", inplace_no_grad, 20000)]
    print(" ".join("%s=%.2f" % (name, per_call_us(f, n)) for name, f, n in rows))


if __name__ == "__main__":
    main()
