#!/usr/bin/python3
"""NumPy and PyTorch baselines for ff-bench: the same workloads, names and thread counts.

    /usr/bin/python3 benchmarks/baselines.py --threads 1,2 --json benchmarks/results/baselines.json

Each thread count runs in a child process whose OMP/OpenBLAS/MKL thread variables are set
before NumPy or PyTorch is imported (torch.set_num_threads too). Missing libraries are
skipped with a message. Output: JSON with a top-level "results" array, one record per
line (workload, backend = "numpy" | "torch", threads, median_s, min_s, runs), which
`ff-bench --baselines-json FILE` merges into its own table.
"""
import argparse
import json
import os
import subprocess
import sys
import time

MM_SIZES = [64, 128, 256, 512, 1024, 2048, 4096]


def measure(fn, budget):
    """Median seconds per call: warm-up, batched tiny calls, 3..200 samples."""
    fn()
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    if first < 0.05:
        fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-9)
    inner = 1 if one >= 1e-3 else int(1e-3 / one) + 1
    samples = int(budget / (one * inner))
    samples = max(3, min(200, samples))
    if one * inner > 2.0:
        samples = 3
    ts = []
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        ts.append((time.perf_counter() - t0) / inner)
    ts.sort()
    mid = len(ts) // 2
    med = ts[mid] if len(ts) % 2 else 0.5 * (ts[mid - 1] + ts[mid])
    return med, ts[0], samples


def numpy_workloads(np, quick, max_mm):
    rng = np.random.default_rng(0)
    w = {}
    for n in MM_SIZES:
        if n > max_mm:
            break
        a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        w["matmul_f32_%d" % n] = (lambda a=a, b=b: a @ b)
    # ff-bench's complex rows (bench_complex.c): a complex64 product and FFT
    n = 128 if quick else 512
    ca, cb = ((rng.uniform(-1, 1, (n, n)) + 1j * rng.uniform(-1, 1, (n, n))).astype(np.complex64) for _ in range(2))
    w["matmul_c64_%d" % n] = (lambda a=ca, b=cb: a @ b)
    m = 1 << (16 if quick else 20)
    sig = (rng.uniform(-1, 1, m) + 1j * rng.uniform(-1, 1, m)).astype(np.complex64)
    w["fft_c64_2^%d" % (16 if quick else 20)] = (lambda s=sig: np.fft.fft(s))  # NumPy's pocketfft: complex128 out
    for tag, n in (("1M", 1 << 20), ("16M", 1 << 24)):
        n = n // 16 if quick else n
        a = rng.uniform(-5, 5, n).astype(np.float32)
        b = rng.uniform(-5, 5, n).astype(np.float32)
        ones = np.ones(n, np.float32)
        out = np.empty(n, np.float32)
        w["add_f32_%s" % tag] = (lambda a=a, b=b: a + b)
        w["add_f32_%s_inplace" % tag] = (lambda a=a, b=b: np.add(a, b, out=a))
        w["mul_f32_%s" % tag] = (lambda a=a, b=b: a * b)
        w["mul_f32_%s_inplace" % tag] = (lambda a=a, o=ones: np.multiply(a, o, out=a))
        e = rng.uniform(-5, 5, n).astype(np.float32)
        w["exp_f32_%s" % tag] = (lambda e=e: np.exp(e))
        w["exp_f32_%s_out" % tag] = (lambda e=e, o=out: np.exp(e, out=o))
        if tag == "16M":
            w["sum_f32_16M"] = (lambda a=e: a.sum())
            ra, rb, rc = (rng.uniform(-5, 5, n).astype(np.float32) for _ in range(3))
            w["relu_mul_add_f32_16M"] = (lambda a=ra, b=rb, c=rc: np.maximum(a * b + c, 0))
            x = rng.uniform(-5, 5, (256 if quick else 4096, 4096)).astype(np.float32)

            def softmax(x=x):
                m = x.max(axis=-1, keepdims=True)
                y = np.exp(x - m)
                return y / y.sum(axis=-1, keepdims=True)

            w["softmax_f32_16M"] = softmax
    t4a = rng.uniform(-1, 1, 4).astype(np.float32)
    t4b = rng.uniform(-1, 1, 4).astype(np.float32)
    w["add_f32_4"] = (lambda: t4a + t4b)
    w.update(numpy_mlp(np, rng))
    return w


def numpy_mlp(np, rng):
    """Hand-written forward/backward/SGD: what a NumPy user would write."""
    def make(i, h, o, batch, ce):
        p = {"w1": rng.uniform(-1, 1, (h, i)).astype(np.float32) / np.sqrt(i),
             "b1": np.zeros(h, np.float32),
             "w2": rng.uniform(-1, 1, (o, h)).astype(np.float32) / np.sqrt(h),
             "b2": np.zeros(o, np.float32)}
        x = rng.uniform(-1, 1, (batch, i)).astype(np.float32)
        y = (np.arange(batch) * 7) % o if ce else rng.uniform(-1, 1, (batch, o)).astype(np.float32)
        return p, x, y

    def forward(p, x):
        z = x @ p["w1"].T + p["b1"]
        h = np.maximum(z, 0)
        return z, h, h @ p["w2"].T + p["b2"]

    def step(p, x, y, ce, lr=0.01):
        z, h, out = forward(p, x)
        n = x.shape[0]
        if ce:
            m = out.max(axis=1, keepdims=True)
            e = np.exp(out - m)
            s = e / e.sum(axis=1, keepdims=True)
            g = s
            g[np.arange(n), y] -= 1
            g /= n
        else:
            g = 2.0 * (out - y) / out.size
        gw2 = g.T @ h
        gb2 = g.sum(axis=0)
        gh = g @ p["w2"]
        gz = gh * (z > 0)
        gw1 = gz.T @ x
        gb1 = gz.sum(axis=0)
        p["w1"] -= lr * gw1
        p["b1"] -= lr * gb1
        p["w2"] -= lr * gw2
        p["b2"] -= lr * gb2

    w = {}
    p, x, y = make(784, 256, 10, 64, True)
    w["mlp_784_256_10_fwd"] = (lambda: forward(p, x))
    w["mlp_784_256_10_step"] = (lambda: step(p, x, y, True))
    q, xq, yq = make(4, 16, 1, 8, False)
    w["mlp_4_16_1_step"] = (lambda: step(q, xq, yq, False))
    return w


def torch_workloads(torch, quick, max_mm):
    g = torch.Generator().manual_seed(0)

    def u(*shape, lo=-1.0, hi=1.0):
        return torch.rand(*shape, generator=g) * (hi - lo) + lo

    w = {}
    for n in MM_SIZES:
        if n > max_mm:
            break
        a, b = u(n, n), u(n, n)
        w["matmul_f32_%d" % n] = (lambda a=a, b=b: torch.mm(a, b))
    n = 128 if quick else 512  # ff-bench's complex rows (bench_complex.c)
    ca, cb = (torch.complex(u(n, n), u(n, n)) for _ in range(2))
    w["matmul_c64_%d" % n] = (lambda a=ca, b=cb: torch.mm(a, b))
    m = 1 << (16 if quick else 20)
    sig = torch.complex(u(m), u(m))
    w["fft_c64_2^%d" % (16 if quick else 20)] = (lambda s=sig: torch.fft.fft(s))
    for n in (256,) if quick else (512, 1024, 2048):  # ff-bench's matmul_bf16_* rows (oneDNN in torch)
        a, b = (u(n, n, lo=-5, hi=5).to(torch.bfloat16) for _ in range(2))
        w["matmul_bf16_%d" % n] = (lambda a=a, b=b: torch.mm(a, b))
    for n in (256,) if quick else (1024, 2048):  # ff-bench's matmul_int8_*: torch's dynamic quantized Linear
        lin = torch.nn.Linear(n, n, bias=False)
        lin.weight.data = u(n, n)
        q = torch.ao.quantization.quantize_dynamic(lin, {torch.nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig},
                                                   dtype=torch.qint8)
        w["matmul_int8_%d" % n] = (lambda q=q, a=u(n, n): q(a))
    for tag, n in (("1M", 1 << 20), ("16M", 1 << 24)):
        n = n // 16 if quick else n
        a, b = u(n, lo=-5, hi=5), u(n, lo=-5, hi=5)
        ones, out = torch.ones(n), torch.empty(n)
        w["add_f32_%s" % tag] = (lambda a=a, b=b: a + b)
        w["add_f32_%s_inplace" % tag] = (lambda a=a, b=b: a.add_(b))
        w["mul_f32_%s" % tag] = (lambda a=a, b=b: a * b)
        w["mul_f32_%s_inplace" % tag] = (lambda a=a, o=ones: a.mul_(o))
        e = u(n, lo=-5, hi=5)
        w["exp_f32_%s" % tag] = (lambda e=e: torch.exp(e))
        w["exp_f32_%s_out" % tag] = (lambda e=e, o=out: torch.exp(e, out=o))
        if tag == "16M":
            w["sum_f32_16M"] = (lambda e=e: torch.sum(e))
            ra, rb, rc = (u(n, lo=-5, hi=5) for _ in range(3))
            w["relu_mul_add_f32_16M"] = (lambda a=ra, b=rb, c=rc: torch.relu(a * b + c))
            x = u(256 if quick else 4096, 4096, lo=-5, hi=5)
            w["softmax_f32_16M"] = (lambda x=x: torch.softmax(x, -1))
    t4a, t4b = u(4), u(4)
    w["add_f32_4"] = (lambda: t4a + t4b)
    nn, F = torch.nn, torch.nn.functional

    def mlp(i, h, o):
        torch.manual_seed(11)
        return nn.Sequential(nn.Linear(i, h), nn.ReLU(), nn.Linear(h, o))

    net = mlp(784, 256, 10)
    x = u(64, 784)
    y = (torch.arange(64) * 7) % 10
    opt = torch.optim.SGD(net.parameters(), lr=0.01)

    def fwd():
        with torch.no_grad():
            return net(x)

    def step_ce():
        loss = F.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    small = mlp(4, 16, 1)
    xs, ys = u(8, 4), u(8, 1)
    opt2 = torch.optim.SGD(small.parameters(), lr=0.01)

    def step_mse():
        loss = F.mse_loss(small(xs), ys)
        opt2.zero_grad()
        loss.backward()
        opt2.step()

    w["mlp_784_256_10_fwd"] = fwd
    w["mlp_784_256_10_step"] = step_ce
    w["mlp_4_16_1_step"] = step_mse
    cx, cw = u(64, 32, 28, 28), u(64, 32, 3, 3)
    cxg, cwg, cg = cx.clone().requires_grad_(), cw.clone().requires_grad_(), torch.ones(64, 64, 28, 28)

    def conv_fwd():
        with torch.no_grad():
            return F.conv2d(cx, cw, padding=1)

    def conv_step():
        F.conv2d(cxg, cwg, padding=1).backward(cg)
        cxg.grad = None
        cwg.grad = None

    w["conv2d_64x32x28x28_k3"] = conv_fwd
    w["conv2d_64x32x28x28_k3_step"] = conv_step
    # lstm_step (issue 34, bench_lstm.c): nn.LSTM(256, 256, 2) over [64, 32, 256], sum, backward
    torch.manual_seed(11)
    lstm, lx = nn.LSTM(256, 256, num_layers=2), u(8 if quick else 64, 32, 256)

    def lstm_step():
        lstm(lx)[0].sum().backward()
        lstm.zero_grad()

    w["lstm_step"] = lstm_step
    # the rest of the convolution family (issue 33), forward, as bench_ff.c's conv_family
    c1x, c1w = u(32, 64, 512), u(128, 64, 5)
    ctx, ctw = u(32, 64, 14, 14), u(64, 32, 4, 4)
    cdx, cdw = u(32, 64, 56, 56), u(64, 1, 3, 3)

    def nograd(f):
        def run():
            with torch.no_grad():
                return f()
        return run

    w["conv1d_32x64x512_k5"] = nograd(lambda: F.conv1d(c1x, c1w, padding=2))
    w["conv_transpose2d_32x64x14x14_k4s2"] = nograd(lambda: F.conv_transpose2d(ctx, ctw, stride=2, padding=1))
    w["conv2d_depthwise_32x64x56x56_k3"] = nograd(lambda: F.conv2d(cdx, cdw, padding=1, groups=64))
    for name, shape, out in [("adaptive_avg_pool2d_64x512x7x7_to1", (64, 512, 7, 7), 1),
                             ("adaptive_avg_pool2d_32x64x30x30_to7", (32, 64, 30, 30), 7)]:
        def pool(x=u(*shape), out=out):
            with torch.no_grad():
                return F.adaptive_avg_pool2d(x, out)
        w[name] = pool
    w.update(torch_attention(torch, quick))
    return w


def torch_attention(torch, quick):
    """bench_attention.c's rows: batch 4, 8 heads, head dim 64, causal, f32. PyTorch 1.13
    has no fused attention on CPU; its fastest composition here: the causal mask as an
    additive -inf matrix folded into torch.baddbmm (scale as alpha), softmax, bmm.
    matmul + masked_fill + softmax + matmul took 1.2-1.4x as long, the same with in-place
    mul_/masked_fill_ 1.15-1.3x (T = 512 and 2048, one thread)."""
    w = {}
    B, H, D = 4, 8, 64
    for T in ((128, 256) if quick else (512, 2048)):
        g = torch.Generator().manual_seed(T)
        q, k, v = ((torch.rand(B * H, T, D, generator=g) * 2 - 1) for _ in range(3))
        causal = torch.full((T, T), float("-inf")).triu(1).expand(B * H, T, T)
        qg, kg, vg = (x.clone().requires_grad_() for x in (q, k, v))
        ones = torch.ones(B * H, T, D)

        def attn(q, k, v, causal=causal):
            s = torch.baddbmm(causal, q, k.transpose(1, 2), alpha=D ** -0.5)
            return torch.bmm(torch.softmax(s, -1), v)

        def fwd(q=q, k=k, v=v, attn=attn):
            with torch.no_grad():
                return attn(q, k, v)

        def step(q=qg, k=kg, v=vg, attn=attn, ones=ones):
            attn(q, k, v).backward(ones)
            q.grad = k.grad = v.grad = None

        w["attention_fwd_T%d" % T] = fwd
        w["attention_step_T%d" % T] = step
    return w


def torch_mnist_epoch(torch, data_dir, cnn=False):
    """One epoch of the demo's model in PyTorch: the MLP 784-256-128-10 with batch 128, or
    (cnn) its CNN, 2 x conv-BN-ReLU-pool then 1568-128-10, with batch 64; AdamW."""
    import gzip
    import numpy as np

    def idx(name):
        with gzip.open(os.path.join(data_dir, name), "rb") as f:
            raw = f.read()
        nd = raw[3]
        dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(nd)]
        return np.frombuffer(raw, np.uint8, offset=4 + 4 * nd).reshape(dims)

    x = torch.from_numpy(idx("train-images-idx3-ubyte.gz").reshape(-1, 784).astype(np.float32) / 255.0)
    x = (x - x.mean()) / x.std()
    y = torch.from_numpy(idx("train-labels-idx1-ubyte.gz").astype(np.int64))
    nn = torch.nn
    torch.manual_seed(42)
    if cnn:
        net = nn.Sequential(nn.Unflatten(1, (1, 28, 28)),
                            nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Conv2d(16, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Flatten(), nn.Linear(32 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
    else:
        net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.AdamW(net.parameters(), lr=2e-3, weight_decay=1e-4)
    perm = torch.randperm(x.shape[0])
    batch = 64 if cnn else 128
    t0 = time.perf_counter()
    for i in range(0, x.shape[0], batch):
        j = perm[i:i + batch]
        loss = nn.functional.cross_entropy(net(x[j]), y[j])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return time.perf_counter() - t0


def child(args):
    results = []
    max_mm = 512 if args.quick else (4096 if args.big else 2048)

    def run(lib, workloads):
        for name, fn in workloads.items():
            if args.filter and args.filter not in name:
                continue
            med, mn, runs = measure(fn, args.budget)
            results.append({"workload": name, "backend": lib, "threads": args.child,
                            "median_s": med, "min_s": mn, "runs": runs})
            print("  %-24s %-6s %dT %12.6f ms" % (name, lib, args.child, med * 1e3), file=sys.stderr)

    try:
        import numpy as np
        run("numpy", numpy_workloads(np, args.quick, max_mm))
    except ImportError as e:
        print("baselines: NumPy missing, skipped (%s)" % e, file=sys.stderr)
    try:
        import torch
        torch.set_num_threads(args.child)
        run("torch", torch_workloads(torch, args.quick, max_mm))
        if args.mnist and os.path.isdir(args.data):
            for cnn, name in ((False, "fashion_mnist_epoch"), (True, "fashion_mnist_cnn_epoch")):
                if args.filter and args.filter not in name:
                    continue
                t = torch_mnist_epoch(torch, args.data, cnn)
                results.append({"workload": name, "backend": "torch", "threads": args.child,
                                "median_s": t, "min_s": t, "runs": 1})
    except ImportError as e:
        print("baselines: PyTorch missing, skipped (%s)" % e, file=sys.stderr)
    json.dump(results, sys.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--json", default=None, help="output file (default: stdout)")
    ap.add_argument("--budget", type=float, default=0.3, help="seconds per measurement")
    ap.add_argument("--filter", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--big", action="store_true", help="include matmul n=4096")
    ap.add_argument("--mnist", action="store_true", help="time one Fashion-MNIST epoch in PyTorch")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return 0
    results = []
    for t in [int(s) for s in args.threads.split(",") if s]:
        env = dict(os.environ)
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = str(t)
        cmd = [sys.executable, os.path.abspath(__file__), "--child", str(t), "--budget", str(args.budget),
               "--data", args.data]
        cmd += ["--quick"] if args.quick else []
        cmd += ["--big"] if args.big else []
        cmd += ["--mnist"] if args.mnist else []
        cmd += ["--filter", args.filter] if args.filter else []
        print("baselines: %d thread(s)" % t, file=sys.stderr)
        out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, check=True).stdout
        results += json.loads(out or b"[]")
    text = '{\n  "tool": "baselines.py",\n  "results": [\n'
    text += ",\n".join("    " + json.dumps(r) for r in results)
    text += "\n  ]\n}\n"
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
