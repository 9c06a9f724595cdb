#!/usr/bin/env python3
"""PyTorch's side of the GPU rows (scripts/gpu-check.sh): one training step of the MLP
784-256-10 (batch 64, ReLU, cross-entropy, SGD lr 0.01), as ff-bench's
mlp_784_256_10_step and benchmarks/baselines.py time it on the CPU, here on CUDA with a
torch.cuda.synchronize() ending every sample; and torch.matmul of two n x n bf16 and f16
matrices, n = 4096 and 8192 (ff-bench-cuda's matmul_bf16_<n> / matmul_f16_<n>, issue
52), with PyTorch's default reduced-precision reductions turned off as the cuda backend
has them; and a ResNet-50 conv2d layer set, forward and both gradients, f32 and bf16
(ff-bench-cuda's conv_resnet50_set_<dt>); and F.linear in bf16 with a bias, alone and
followed by the tanh GELU (ff-bench-cuda's linear_<bias|gelu>_bf16_4096); and causal
F.scaled_dot_product_attention, bf16 and f32, forward and forward + backward, T = 2048
(B 4) and 8192 (B 1), H 8, D 64 (ff-bench-cuda's sdpa_<dt>_causal_<fwd|fwdbwd>_T<t>).
Writes the JSON result rows.

    python3 benchmarks/bench_cuda_torch.py --json out.json
Exit status 3 when PyTorch or a CUDA device is missing (the row is then skipped)."""
import argparse
import json
import os
import statistics
import sys
import time


def median_per_call(torch, fn, calls, warm=1):
    """Median seconds per call of fn over 7 samples of `calls` calls, each sample ending
    in torch.cuda.synchronize(), after `warm` untimed calls."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - t0) / calls)
    return statistics.median(samples)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("bench_cuda_torch: PyTorch is not installed", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("bench_cuda_torch: torch.cuda.is_available() is False", file=sys.stderr)
        return 3
    dev = torch.device("cuda")
    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(11)
    net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)).to(dev)
    x = torch.rand(64, 784, device=dev)
    y = ((torch.arange(64) * 7) % 10).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)

    def step():
        loss = F.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    row = {"workload": "mlp_784_256_10_step", "backend": "torch_cuda",
           "median_s": median_per_call(torch, step, args.calls, warm=20),
           "device": torch.cuda.get_device_name(0), "torch": torch.__version__}
    rows = [row]
    print("torch %s on %s: mlp_784_256_10_step %.3f ms" % (torch.__version__, row["device"], row["median_s"] * 1e3))
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    if hasattr(torch.backends.cuda.matmul, "allow_bf16_reduced_precision_reduction"):
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    for n in (4096, 8192):
        for name, dt in (("bf16", torch.bfloat16), ("f16", torch.float16)):
            a = torch.rand(n, n, device=dev).to(dt)
            b = torch.rand(n, n, device=dev).to(dt)
            t = median_per_call(torch, lambda: torch.matmul(a, b), 10 if n >= 8192 else 40)
            r = {"workload": "matmul_%s_%d" % (name, n), "backend": "torch_cuda", "median_s": t}
            rows.append(r)
            print("torch matmul_%s_%d %.3f ms (%.1f TFLOP/s)" % (name, n, r["median_s"] * 1e3,
                                                                 2.0 * n ** 3 / r["median_s"] / 1e12))
    # conv2d: the ResNet-50 layer set of ff-bench-cuda's conv_resnet50_set_<dt> (batch 32,
    # forward and the gradients of x and w, cuDNN's three passes), TF32 off as the cuda
    # backend has it unless FF_CUDA_TF32=1; cudnn.benchmark stays off (heuristics, as ours)
    torch.backends.cudnn.allow_tf32 = os.environ.get("FF_CUDA_TF32") == "1"
    conv_set = [(3, 224, 64, 7, 2, 3), (64, 56, 64, 3, 1, 1), (64, 56, 256, 1, 1, 0),
                (128, 56, 128, 3, 2, 1), (256, 14, 256, 3, 1, 1), (512, 7, 2048, 1, 1, 0)]
    for name, dt in (("f32", torch.float32), ("bf16", torch.bfloat16)):
        layers = []
        for c, h, o, k, st, pad in conv_set:
            x = torch.rand(32, c, h, h, device=dev).to(dt).requires_grad_()
            w = torch.rand(o, c, k, k, device=dev).to(dt).requires_grad_()
            oh = (h + 2 * pad - k) // st + 1
            layers.append((x, w, torch.rand(32, o, oh, oh, device=dev).to(dt), st, pad))

        def conv_call():
            for x, w, gy, st, pad in layers:
                y = F.conv2d(x, w, None, st, pad)
                torch.autograd.grad(y, (x, w), gy)

        r = {"workload": "conv_resnet50_set_%s" % name, "backend": "torch_cuda",
             "median_s": median_per_call(torch, conv_call, 5)}
        rows.append(r)
        print("torch conv_resnet50_set_%s %.3f ms" % (name, r["median_s"] * 1e3))
    # linear: ff-bench-cuda's linear_<bias|gelu>_bf16_4096 (x [8192, 4096], W [4096, 4096],
    # a bias; GELU in its tanh form), no autograd, the reductions in f32 as ours (set above)
    with torch.no_grad():
        x = torch.rand(8192, 4096, device=dev).to(torch.bfloat16)
        w = torch.rand(4096, 4096, device=dev).to(torch.bfloat16)
        b = torch.rand(4096, device=dev).to(torch.bfloat16)
        for name, fn in (("bias", lambda: F.linear(x, w, b)),
                         ("gelu", lambda: F.gelu(F.linear(x, w, b), approximate="tanh"))):
            r = {"workload": "linear_%s_bf16_4096" % name, "backend": "torch_cuda",
                 "median_s": median_per_call(torch, fn, 20)}
            rows.append(r)
            print("torch linear_%s_bf16_4096 %.3f ms" % (name, r["median_s"] * 1e3))
    # causal attention: PyTorch picks its own kernel (FlashAttention for bf16, the
    # memory-efficient one for f32); the backward's grads are dropped each call, as ours
    for t in (2048, 8192):
        b = 1 if t >= 8192 else 4
        for dt, name in ((torch.bfloat16, "bf16"), (torch.float32, "f32")):
            q, k, v, go = (torch.rand(b, 8, t, 64, device=dev).to(dt) for _ in range(4))
            for bwd in (False, True):
                for x in (q, k, v):
                    x.requires_grad_(bwd)

                def call():
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    if bwd:
                        o.backward(go)
                        for x in (q, k, v):
                            x.grad = None
                w = "sdpa_%s_causal_%s_T%d" % (name, "fwdbwd" if bwd else "fwd", t)
                if bwd:
                    r = median_per_call(torch, call, 3)
                else:
                    with torch.no_grad():
                        r = median_per_call(torch, call, 5)
                rows.append({"workload": w, "backend": "torch_cuda", "median_s": r})
                print("torch %s %.3f ms" % (w, r * 1e3))
    with open(args.json, "w") as f:
        json.dump({"tool": "bench_cuda_torch.py", "results": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
