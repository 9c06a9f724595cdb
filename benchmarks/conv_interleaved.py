"""The convolution rows of ff-bench (conv2d, conv1d, conv_transpose2d, depthwise conv2d;
forward, f32, 1 thread) timed against PyTorch in one process, the two calls alternated,
so a machine whose load changes between ff-bench's run and baselines.py's (a shared CI
box) cannot tilt the ratio. Prints the medians and ff/torch (below 1: FusionFlow faster).

    FF_NUM_THREADS=1 python3 benchmarks/conv_interleaved.py [--bf16] [filter]

--bf16: both sides on bf16 tensors (cpu_blas: oneDNN's bf16 kernels on AMX/AVX512-BF16),
with FusionFlow's own f32 on the same shape as a third column, timed in the same rounds.
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
    bf16 = "--bf16" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--bf16"]
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
        if args and args[0] not in name:
            continue
        tx, tw, fx, fw = torch.tensor(x), torch.tensor(w), ff.tensor(x, device="cpu"), ff.tensor(w, device="cpu")
        fx32, fw32 = fx, fw
        if bf16:
            tx, tw, fx, fw = tx.bfloat16(), tw.bfloat16(), fx.to(ff.bfloat16), fw.to(ff.bfloat16)
        tf, fff = getattr(torch.nn.functional, fn), getattr(F, fn)
        tt, ft, f32t = [], [], []
        with torch.no_grad(), ff.no_grad():
            try:
                want = tf(tx, tw, **kw)
            except RuntimeError as e:  # PyTorch 1.13 refuses bf16 conv_transpose2d's weight here
                print("%-36s torch: %s" % (name, str(e).splitlines()[0][:80]))
                continue
            got = fff(fx, fw, **kw)
            got, want = np.asarray(got.to(ff.float32).tolist()), want.float().numpy()
            if bf16:  # bf16 rounding of the result, f32 accumulation in either order
                assert abs(got - want).max() <= 2 ** -6 * abs(want).max(), name
            else:
                assert np.allclose(got, want, atol=1e-3), name
            for i in range(18):  # 3 warm-up rounds, then 15 timed
                t0 = time.perf_counter()
                tf(tx, tw, **kw)
                t1 = time.perf_counter()
                fff(fx, fw, **kw)
                t2 = time.perf_counter()
                if bf16:
                    fff(fx32, fw32, **kw)
                t3 = time.perf_counter()
                if i >= 3:
                    tt.append(t1 - t0), ft.append(t2 - t1), f32t.append(t3 - t2)
        mt, mf = statistics.median(tt), statistics.median(ft)
        extra = "  ff f32 %8.2f ms  ff f32/bf16 %.2f" % (statistics.median(f32t) * 1e3, statistics.median(f32t) / mf) \
            if bf16 else ""
        print("%-36s ff %8.2f ms  torch %8.2f ms  ff/torch %.2f%s" % (name, mf * 1e3, mt * 1e3, mf / mt, extra))


if __name__ == "__main__":
    main()
