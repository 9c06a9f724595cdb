#!/usr/bin/env python3
"""Fashion-MNIST with the Python front end: an MLP 784-256-128-10 (or, with --model cnn,
two conv-BN-ReLU-pool blocks and a 1568-128-10 head) trained with AdamW.

    PYTHONPATH=python FUSIONFLOW_LIB=build/lib/libfusionflow.so python3 examples/fashion_mnist.py --epochs 3
    ... examples/fashion_mnist.py --model cnn

Reads the IDX files of Debian's dataset-fashion-mnist package (or --data DIR). The last
line printed is "test accuracy: 0.XXXX".
"""
import argparse
import gzip
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import fusionflow as ff  # noqa: E402
from fusionflow import nn, optim  # noqa: E402


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, ndim = int.from_bytes(data[:4], "big"), data[3]
    if magic >> 8 != 0x08:  # unsigned bytes
        raise ValueError("%s: not an IDX file of unsigned bytes" % path)
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(data_dir, split, limit=None):
    x = read_idx(os.path.join(data_dir, "%s-images-idx3-ubyte.gz" % split))
    y = read_idx(os.path.join(data_dir, "%s-labels-idx1-ubyte.gz" % split))
    if limit:
        x, y = x[:limit], y[:limit]
    return x.reshape(len(x), -1).astype(np.float32) / 255.0, y.astype(np.int64)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    ap.add_argument("--epochs", type=int, default=None, help="default 5 (mlp), 4 (cnn)")
    ap.add_argument("--limit", type=int, default=None, help="train on the first N samples")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--save", default=None, help="write the trained weights as safetensors")
    args = ap.parse_args()

    xtr, ytr = load(args.data, "train", args.limit)
    xte, yte = load(args.data, "t10k")
    mean, std = xtr.mean(), xtr.std()
    xtr, xte = (xtr - mean) / std, (xte - mean) / std

    if args.epochs is None:
        args.epochs = 4 if args.model == "cnn" else 5
    ff.manual_seed(args.seed)
    if args.model == "cnn":
        xtr, xte = xtr.reshape(-1, 1, 28, 28), xte.reshape(-1, 1, 28, 28)
        model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                              nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32),
                              nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 7 * 7, 128), nn.ReLU(),
                              nn.Linear(128, 10))
    else:
        model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(args.seed)
    steps = (len(xtr) + args.batch - 1) // args.batch
    for epoch in range(args.epochs):
        t0, total = time.time(), 0.0
        perm = rng.permutation(len(xtr))
        for s in range(steps):
            idx = perm[s * args.batch:(s + 1) * args.batch]
            xb, yb = ff.from_numpy(np.ascontiguousarray(xtr[idx])), ff.from_numpy(ytr[idx])  # zero-copy
            loss = loss_fn(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
        print("epoch %d: loss %.4f (%.1fs)" % (epoch + 1, total / steps, time.time() - t0), flush=True)

    model.eval()
    correct = 0
    with ff.no_grad():
        for s in range(0, len(xte), 1000):
            pred = model(ff.from_numpy(xte[s:s + 1000])).argmax(1).numpy()
            correct += int((pred == yte[s:s + 1000]).sum())
    if args.save:
        arch = "mlp-784-256-128-10" if args.model == "mlp" else "cnn"
        ff.save(model.state_dict(), args.save, metadata={"arch": arch})
    print("test accuracy: %.4f" % (correct / len(xte)))


if __name__ == "__main__":
    main()
