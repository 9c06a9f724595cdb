#!/usr/bin/python3
"""Per-op overhead of the Python front end (issue 49): µs of process CPU time per call of
small ops, FusionFlow beside PyTorch and NumPy, in one process, 1 thread.

    FUSIONFLOW_LIB=$PWD/build/lib/libfusionflow.so PYTHONPATH=$PWD/python \\
        /usr/bin/python3 benchmarks/bench_overhead.py [--rounds 7] [--filter SUBSTR] [--json FILE]

Set FUSIONFLOW_NO_EXT=1 to time the pure-ctypes path (the C extension not loaded).
Each round times `inner` calls of every side of a row, the order of the sides rotated
every round, after a warm-up; the table gives the medians over rounds and ff / torch
(below 1: FusionFlow is faster). Process CPU time, not wall time: this machine is shared.
"""
import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("FF_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import fusionflow as ff  # noqa: E402

torch.set_num_threads(1)


def rows():
    """(name, inner, {side: thunk}) on the same data; NumPy where it has the op."""
    rng = np.random.default_rng(49)
    a_np = rng.standard_normal(4).astype(np.float32)
    m_np = rng.standard_normal((8, 16)).astype(np.float32)
    x_np = rng.standard_normal((64, 16)).astype(np.float32)
    idx_np = rng.integers(0, 64, 8).astype(np.int64)
    one_np = np.array([1.5], dtype=np.float32)
    small_np = rng.standard_normal((3, 4)).astype(np.float32)
    lst = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    side = {}
    for name, lib in (("ff", ff), ("torch", torch)):
        side[name] = dict(
            lib=lib, a=lib.from_numpy(a_np.copy()), m=lib.from_numpy(m_np.copy()), x=lib.from_numpy(x_np.copy()),
            idx=lib.from_numpy(idx_np.copy()), one=lib.from_numpy(one_np.copy()),
            small=lib.from_numpy(small_np.copy()), emb=lib.nn.Embedding(1000, 32),
            eidx=lib.from_numpy(rng.integers(0, 1000, 16).astype(np.int64)))
    f, t = side["ff"], side["torch"]
    n = dict(a=a_np, m=m_np, x=x_np, idx=idx_np, one=one_np, small=small_np)

    def emb_step(s):
        def run():
            s["emb"](s["eidx"]).sum().backward()
            s["emb"].weight.grad = None
        return run

    def per_lib(fn):
        return {"ff": (lambda s=f: fn(s)), "torch": (lambda s=t: fn(s))}

    out = [
        ("a[1:3]", 20000, dict(per_lib(lambda s: s["a"][1:3]), numpy=lambda: n["a"][1:3])),
        ("m[:, None]", 20000, dict(per_lib(lambda s: s["m"][:, None]), numpy=lambda: n["m"][:, None])),
        ("m[2, 3:9]", 20000, dict(per_lib(lambda s: s["m"][2, 3:9]), numpy=lambda: n["m"][2, 3:9])),
        ("x[idx]", 10000, dict(per_lib(lambda s: s["x"][s["idx"]]), numpy=lambda: n["x"][n["idx"]])),
        ("a.shape", 50000, dict(per_lib(lambda s: s["a"].shape), numpy=lambda: n["a"].shape)),
        ("m.size(1)", 50000, dict(per_lib(lambda s: s["m"].size(1)), numpy=lambda: n["m"].shape[1])),
        ("a.view(2, 2)", 20000, dict(per_lib(lambda s: s["a"].view(2, 2)), numpy=lambda: n["a"].reshape(2, 2))),
        ("cat of 3 [3,4]", 10000, dict(per_lib(lambda s: s["lib"].cat([s["small"], s["small"], s["small"]])),
                                       numpy=lambda: np.concatenate([n["small"]] * 3))),
        ("F.relu [8,16]", 20000, dict(per_lib(lambda s: s["lib"].nn.functional.relu(s["m"])),
                                      numpy=lambda: np.maximum(n["m"], 0))),
        ("a + b [8,16]", 20000, dict(per_lib(lambda s: s["m"] + s["m"]), numpy=lambda: n["m"] + n["m"])),
        ("a * 2 [8,16]", 20000, dict(per_lib(lambda s: s["m"] * 2), numpy=lambda: n["m"] * 2)),
        ("tensor(list 2x3)", 10000, dict(per_lib(lambda s: s["lib"].tensor(lst)), numpy=lambda: np.array(lst))),
        ("from_numpy", 20000, dict(per_lib(lambda s: s["lib"].from_numpy(n["m"])),
                                   numpy=lambda: np.asarray(n["m"]))),
        (".item()", 50000, dict(per_lib(lambda s: s["one"].item()), numpy=lambda: n["one"].item())),
        (".tolist() [3,4]", 20000, dict(per_lib(lambda s: s["small"].tolist()), numpy=lambda: n["small"].tolist())),
        ("Embedding fwd+bwd", 2000, {"ff": emb_step(f), "torch": emb_step(t)}),
    ]
    return out


def time_once(fn, inner):
    c = time.process_time()
    for _ in range(inner):
        fn()
    return (time.process_time() - c) / inner * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--filter", default="")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every row's inner count")
    ap.add_argument("--json", help="also write the medians here")
    args = ap.parse_args()
    _ext_status = getattr(ff, "_ext_status", lambda: "ctypes only")
    print("fusionflow front end: %s; 1 thread, process CPU time, %d rounds, medians" % (_ext_status(), args.rounds))
    print("%-20s %10s %10s %10s %9s" % ("op", "ff µs", "torch µs", "numpy µs", "ff/torch"))
    results = []
    ratios = []
    for name, inner, sides in rows():
        if args.filter not in name:
            continue
        inner = max(1, int(inner * args.scale))
        order = list(sides)
        for fn in sides.values():
            fn()
        times = {k: [] for k in order}
        for r in range(args.rounds):
            rot = order[r % len(order):] + order[:r % len(order)]
            for k in rot:
                times[k].append(time_once(sides[k], inner))
        med = {k: statistics.median(v) for k, v in times.items()}
        ratio = med["ff"] / med["torch"]
        ratios.append(ratio)
        results.append(dict(op=name, **{k + "_us": v for k, v in med.items()}, ff_over_torch=ratio))
        print("%-20s %10.2f %10.2f %10s %8.2fx" % (name, med["ff"], med["torch"],
                                                   "%.2f" % med["numpy"] if "numpy" in med else "-", ratio))
    if ratios:
        print("median ff/torch %.2fx, worst %.2fx" % (statistics.median(ratios), max(ratios)))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(front_end=_ext_status(), rows=results), fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
