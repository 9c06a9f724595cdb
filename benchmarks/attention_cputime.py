#!/usr/bin/python3
"""ff-bench's attention rows (bench_attention.c, baselines.py) timed by CPU time instead of
wall time, FusionFlow and PyTorch 1.13 in one process, one thread each: on a shared box
whose load average is several times its core count, wall-clock medians taken minutes
apart move by 2-4x, while the CPU time a single-threaded run consumes moves by a few
percent. Median of 7 calls (3 at T = 2048); ratio = ff time / torch time.

  FF_NUM_THREADS=1 OMP_NUM_THREADS=1 FUSIONFLOW_LIB=build/lib/libfusionflow.so \\
      PYTHONPATH=python /usr/bin/python3 benchmarks/attention_cputime.py
"""
import time

import torch

import fusionflow as ff
import fusionflow.nn.functional as F

B, H, D = 4, 8, 64


def median_cpu(fn, n):
    ts = []
    for _ in range(n):
        t0 = time.process_time()
        fn()
        ts.append(time.process_time() - t0)
    return sorted(ts)[len(ts) // 2]


def main():
    torch.set_num_threads(1)
    for T in (512, 2048):
        q, k, v = (torch.rand(B * H, T, D) for _ in range(3))
        causal = torch.full((T, T), float("-inf")).triu(1).expand(B * H, T, T)
        qg, kg, vg = (x.clone().requires_grad_() for x in (q, k, v))
        g = torch.ones(B * H, T, D)

        def torch_fwd():
            with torch.no_grad():
                torch.bmm(torch.softmax(torch.baddbmm(causal, q, k.transpose(1, 2), alpha=D ** -0.5), -1), v)

        def torch_step():
            torch.bmm(torch.softmax(torch.baddbmm(causal, qg, kg.transpose(1, 2), alpha=D ** -0.5), -1), vg).backward(g)
            qg.grad = kg.grad = vg.grad = None

        fq, fk, fv = (ff.rand(B, H, T, D) for _ in range(3))
        gq, gk, gv = (ff.rand(B, H, T, D, requires_grad=True) for _ in range(3))
        fg = ff.ones(B, H, T, D)

        def ff_fwd():
            with ff.no_grad():
                F.scaled_dot_product_attention(fq, fk, fv, is_causal=True)

        def ff_step():
            F.scaled_dot_product_attention(gq, gk, gv, is_causal=True).backward(fg)
            gq.grad = gk.grad = gv.grad = None

        for name, a, b in (("fwd", ff_fwd, torch_fwd), ("step", ff_step, torch_step)):
            a(), b()  # warm-up
            n = 7 if T == 512 else 3
            x, y = median_cpu(a, n), median_cpu(b, n)
            print("attention_%s_T%-5d ff %8.4f s   torch %8.4f s   ff/torch %.3f" % (name, T, x, y, x / y), flush=True)


if __name__ == "__main__":
    main()
