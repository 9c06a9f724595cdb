"""The convolution rows of ff-bench (conv2d, conv1d, conv_transpose2d, depthwise conv2d;
forward, f32, 1 thread) timed against PyTorch in one process, the two calls alternated,
so a machine whose load changes between ff-bench's run and baselines.py's (a shared CI
box) cannot tilt the ratio. Prints the medians and ff/torch (below 1: FusionFlow faster).

    FF_NUM_THREADS=1 python3 benchmarks/conv_interleaved.py [filter]
"""
import statistics
import sys
import time

import numpy as np
import torch

import fusionflow as ff
import fusionflow.nn.functional as F


def main():
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)

    def u(*s):
        return rng.uniform(-1, 1, s).astype(np.float32)
    cases = {  # the shapes of bench_ff.c
        "conv2d_64x32x28x28_k3": (u(64, 32, 28, 28), u(64, 32, 3, 3), "conv2d", dict(padding=1)),
        "conv1d_32x64x512_k5": (u(32, 64, 512), u(128, 64, 5), "conv1d", dict(padding=2)),
        "conv_transpose2d_32x64x14x14_k4s2": (u(32, 64, 14, 14), u(64, 32, 4, 4), "conv_transpose2d",
                                              dict(stride=2, padding=1)),
        "conv2d_depthwise_32x64x56x56_k3": (u(32, 64, 56, 56), u(64, 1, 3, 3), "conv2d", dict(padding=1, groups=64)),
    }
    for name, (x, w, fn, kw) in cases.items():
        if len(sys.argv) > 1 and sys.argv[1] not in name:
            continue
        tx, tw, fx, fw = torch.tensor(x), torch.tensor(w), ff.tensor(x, device="cpu"), ff.tensor(w, device="cpu")
        tf, fff = getattr(torch.nn.functional, fn), getattr(F, fn)
        tt, ft = [], []
        with torch.no_grad(), ff.no_grad():
            got, want = fff(fx, fw, **kw), tf(tx, tw, **kw)
            assert np.allclose(np.asarray(got.tolist()), want.numpy(), atol=1e-3), name
            for i in range(18):  # 3 warm-up rounds, then 15 timed
                t0 = time.perf_counter()
                tf(tx, tw, **kw)
                t1 = time.perf_counter()
                fff(fx, fw, **kw)
                t2 = time.perf_counter()
                if i >= 3:
                    tt.append(t1 - t0), ft.append(t2 - t1)
        mt, mf = statistics.median(tt), statistics.median(ft)
        print("%-36s ff %8.2f ms  torch %8.2f ms  ff/torch %.2f" % (name, mf * 1e3, mt * 1e3, mf / mt))


if __name__ == "__main__":
    main()
