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


def median_us(stmt, setup_globals, number=20000, repeat=15):
    t = timeit.Timer(stmt, globals=setup_globals)
    runs = t.repeat(repeat=repeat, number=number)
    return statistics.median(runs) / number * 1e6


def main():
    rows = []
    a, b = ff.ones(4), ff.ones(4)
    g = {"a": a, "b": b, "C": ff._C, "pa": a._ptr, "pb": b._ptr, "rel": ff._C.ff_tensor_release}
    rows.append(("fusionflow a + b", median_us("a + b", g)))
    rows.append(("fusionflow a + 1.0", median_us("a + 1.0", g)))
    rows.append(("fusionflow a.exp()", median_us("a.exp()", g)))
    rows.append(("  raw ctypes ff_add + release", median_us("rel(C.ff_add(pa, pb))", g)))
    ga = ff.ones(4, requires_grad=True)
    rows.append(("fusionflow a + b (a requires grad)", median_us("a + b", {"a": ga, "b": b})))
    try:
        import torch
        torch.set_num_threads(1)
        ta, tb = torch.ones(4), torch.ones(4)
        rows.append(("torch a + b", median_us("a + b", {"a": ta, "b": tb})))
        rows.append(("torch a + 1.0", median_us("a + 1.0", {"a": ta})))
        rows.append(("torch a.exp()", median_us("a.exp()", {"a": ta})))
        rows.append(("torch a + b (a requires grad)",
                     median_us("a + b", {"a": torch.ones(4, requires_grad=True), "b": tb})))
    except ImportError:
        pass
    na, nb = np.ones(4, np.float32), np.ones(4, np.float32)
    rows.append(("numpy a + b", median_us("a + b", {"a": na, "b": nb})))
    for name, us in rows:
        print("%-38s %7.2f us" % (name, us))


if __name__ == "__main__":
    main()
