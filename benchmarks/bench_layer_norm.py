#!/usr/bin/python3
"""layer_norm forward + backward side by side in one process (issue 35): FusionFlow on
the backend's layer_norm entry (one node; cpu_blas by default), FusionFlow's composition
of the same op (FF_LAYER_NORM=compose: the f64 mean/sub/square/... chain it replaced), and
torch.nn.functional.layer_norm, with weight and bias, one thread each, the three
interleaved round by round so that a loaded machine slows all of them alike; medians.

    FUSIONFLOW_LIB=build/lib/libfusionflow.so PYTHONPATH=python \\
        /usr/bin/python3 benchmarks/bench_layer_norm.py [--device cpu_blas] [--rounds 15]

The shapes are MiniLM's at batch 32 ([32*20, 384]) and a BERT-base-sized one
([64*128, 768]); f32 and bf16.
"""
import argparse
import os
import statistics

for k in ("FF_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(k, "1")

import numpy as np  # noqa: E402

import fusionflow as ff  # noqa: E402
import torch  # noqa: E402

from burst import timed  # noqa: E402

SHAPES = [(32 * 20, 384), (64 * 128, 768)]
DTYPES = {"f32": (ff.float32, torch.float32), "bf16": (ff.bfloat16, torch.bfloat16)}



def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu_blas")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--burst", type=int, default=3, help="back-to-back calls per contender and round")
    a = ap.parse_args()
    torch.set_num_threads(1)
    cpu = open("/proc/cpuinfo").read()
    model = next((l.split(":", 1)[1].strip() for l in cpu.splitlines() if l.startswith("model name")), "?")
    print("CPU: %s; 1 thread; device %s; medians of %d interleaved rounds of %d calls (forward + backward)" % (
        model, a.device, a.rounds, a.burst))
    print("%-16s %-5s %11s %11s %11s %10s %10s" % ("shape", "dtype", "ff entry", "ff compose", "torch",
                                                   "vs compose", "vs torch"))
    rng = np.random.default_rng(0)
    for shape in SHAPES:
        x, g = rng.normal(size=shape).astype(np.float32), rng.normal(size=shape).astype(np.float32)
        w, b = rng.normal(size=shape[1:]).astype(np.float32), rng.normal(size=shape[1:]).astype(np.float32)
        for name, (fdt, tdt) in DTYPES.items():
            fx, fw, fb = (ff.tensor(v, device=a.device).to(fdt).detach().requires_grad_() for v in (x, w, b))
            fg = ff.tensor(g, device=a.device).to(fdt)
            tx, tw, tb = (torch.tensor(v).to(tdt).requires_grad_() for v in (x, w, b))
            tg = torch.tensor(g).to(tdt)

            def ff_step():
                fx.grad = fw.grad = fb.grad = None
                ff.nn.functional.layer_norm(fx, shape[1:], fw, fb).backward(fg)
                fb.grad[0].item()  # one element read back: an asynchronous device (opencl) finishes the step

            def ff_composed():
                os.environ["FF_LAYER_NORM"] = "compose"  # read per call; one thread, no race
                try:
                    ff_step()
                finally:
                    del os.environ["FF_LAYER_NORM"]

            def torch_step():
                tx.grad = tw.grad = tb.grad = None
                torch.nn.functional.layer_norm(tx, shape[1:], tw, tb).backward(tg)

            runs = {"entry": [], "compose": [], "torch": []}
            for fn in (ff_step, ff_composed, torch_step):  # warm-up
                fn()
            for _ in range(a.rounds):
                runs["entry"].append(timed(ff_step, a.burst))
                runs["compose"].append(timed(ff_composed, a.burst))
                runs["torch"].append(timed(torch_step, a.burst))
            m = {k: statistics.median(v) * 1e3 for k, v in runs.items()}
            print("%-16s %-5s %9.3fms %9.3fms %9.3fms %9.2fx %9.2fx" % (
                "x".join(map(str, shape)), name, m["entry"], m["compose"], m["torch"], m["compose"] / m["entry"],
                m["torch"] / m["entry"]))
    print("vs compose / vs torch: their time over the entry's (above 1: the entry is faster)")


if __name__ == "__main__":
    main()
