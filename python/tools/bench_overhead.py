#!/usr/bin/env python3
"""Per-op overhead of the Python layer: a tiny (4-element) add through fusionflow vs
PyTorch and NumPy, timeit medians.

    FUSIONFLOW_LIB=build/lib/libfusionflow.so python3 python/tools/bench_overhead.py
"""
import os
import statistics
import sys
import timeit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import numpy as np  # noqa: E402

import fusionflow as ff  # noqa: E402


def main(rounds=21, number=20000):
    a, b = ff.ones(4), ff.ones(4)
    ga = ff.ones(4, requires_grad=True)
    cases = [
        ("fusionflow a + b", "a + b", {"a": a, "b": b}),
        ("fusionflow a + 1.0", "a + 1.0", {"a": a}),
        ("fusionflow a.exp()", "a.exp()", {"a": a}),
        ("fusionflow a + b (a requires grad)", "a + b", {"a": ga, "b": b}),
        ("  C ff_add + ff_tensor_release via ctypes", "rel(add(pa, pb))",
         {"add": ff._C.ff_add, "rel": ff._C.ff_tensor_release, "pa": a._ptr, "pb": b._ptr}),
    ]
    try:
        import torch
        torch.set_num_threads(1)
        ta, tb = torch.ones(4), torch.ones(4)
        cases += [
            ("torch a + b", "a + b", {"a": ta, "b": tb}),
            ("torch a + 1.0", "a + 1.0", {"a": ta}),
            ("torch a.exp()", "a.exp()", {"a": ta}),
            ("torch a + b (a requires grad)", "a + b", {"a": torch.ones(4, requires_grad=True), "b": tb}),
        ]
    except ImportError:
        pass
    na, nb = np.ones(4, np.float32), np.ones(4, np.float32)
    cases.append(("numpy a + b", "a + b", {"a": na, "b": nb}))
    timers = [(name, timeit.Timer(stmt, globals=g)) for name, stmt, g in cases]
    samples = {name: [] for name, _ in timers}
    for _ in range(rounds):  # interleaved, so every case sees the same machine load
        for name, t in timers:
            samples[name].append(t.timeit(number) / number * 1e6)
    for name, _ in timers:
        print("%-42s %6.2f us (median of %d x %d)" % (name, statistics.median(samples[name]), rounds, number))


if __name__ == "__main__":
    main()
