"""One DataLoader epoch over FashionMNIST through fusionflow.vision and through torchvision 0.14
(issue 50): datasets.FashionMNIST from torchvision's on-disk layout, ToTensor + Normalize,
batch 64, shuffled, num_workers 0 (and 2 with --workers 0,2); the loop body does nothing, so an
epoch is the dataset's __getitem__ (a PIL image from the uint8 array, the two transforms), the
sampler and the collate.

The layout (root/FashionMNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte) is written once
into a temporary folder from Debian's dataset-fashion-mnist, the first --samples images of the
training split, and both libraries read those same files. The two sides alternate, the order
reversed every round, over --rounds rounds after a warm-up epoch each; the time is CPU seconds
of this process (with workers, plus theirs, counted once they have joined at the end of the
epoch), so neighbours on a shared machine weigh less than on wall time, which is given too.
Both sides run at one intra-op thread. Before timing, the first batch of an unshuffled loader
is compared between the two (same pixels to 1e-6, same labels): the epochs measured do the
same work.

    /usr/bin/python3 benchmarks/bench_vision_dataloader.py [--rounds 5] [--samples 60000] [--workers 0,2] [--json out.json]

(from the repository root, with FUSIONFLOW_LIB and PYTHONPATH=python set as for the tests)."""
import argparse
import gzip
import json
import os
import resource
import statistics
import struct
import tempfile
import time

os.environ.setdefault("FF_NUM_THREADS", "1")  # read once, when cpu_blas loads

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torchvision  # noqa: E402

import fusionflow as ff  # noqa: E402
import fusionflow.vision  # noqa: E402

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"
MEAN, STD = (0.2860,), (0.3530,)  # Fashion-MNIST's training-set pixel mean and std
LIBS = {"fusionflow": (ff, fusionflow.vision), "torch": (torch, torchvision)}


def write_layout(root, samples):
    """torchvision's FashionMNIST layout under root: each split's first `samples` items, as
    uncompressed IDX files whose header says so (read only that far out of the .gz)."""
    raw = os.path.join(root, "FashionMNIST", "raw")
    os.makedirs(raw)
    for split in ("train", "t10k"):
        for kind in ("images-idx3", "labels-idx1"):
            name = "%s-%s-ubyte" % (split, kind)
            with gzip.open(os.path.join(FASHION_MNIST, name + ".gz"), "rb") as f:
                magic = f.read(4)
                dims = struct.unpack(">%dI" % magic[3], f.read(4 * magic[3]))
                n = min(samples, dims[0])
                body = f.read(n * int(np.prod(dims[1:], dtype=np.int64)))
            with open(os.path.join(raw, name), "wb") as f:
                f.write(magic + struct.pack(">%dI" % len(dims), n, *dims[1:]) + body)


def make_dataset(name, root):
    _, vision = LIBS[name]
    t = vision.transforms
    return vision.datasets.FashionMNIST(root, train=True, download=False,
                                        transform=t.Compose([t.ToTensor(), t.Normalize(MEAN, STD)]))


def _children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def epoch(name, dataset, workers, batch_size):
    """(CPU s of this process + its workers, wall s) of one epoch."""
    lib, _ = LIBS[name]
    loader = lib.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=workers)
    cpu, kids, start = time.process_time(), _children_cpu(), time.perf_counter()
    seen = 0
    for x, _ in loader:
        seen += x.shape[0]
    wall = time.perf_counter() - start
    assert seen == len(dataset), (seen, len(dataset))
    return time.process_time() - cpu + _children_cpu() - kids, wall


def check_same_batch(datasets, batch_size):
    first = {}
    for name, ds in datasets.items():
        lib, _ = LIBS[name]
        x, y = next(iter(lib.utils.data.DataLoader(ds, batch_size=batch_size, shuffle=False)))
        first[name] = (np.asarray(x.numpy()), np.asarray(y.numpy()))
    (xa, ya), (xb, yb) = first["fusionflow"], first["torch"]
    if xa.shape != xb.shape or xa.dtype != xb.dtype or not np.allclose(xa, xb, rtol=0, atol=1e-6) \
            or not np.array_equal(ya, yb):
        raise SystemExit("the two sides load different batches: %s %s vs %s %s, max |diff| %s"
                         % (xa.shape, xa.dtype, xb.shape, xb.dtype,
                            np.abs(xa - xb).max() if xa.shape == xb.shape else "-"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--samples", type=int, default=60000, help="training images an epoch (at most 60000)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--workers", default="0", help="comma-separated num_workers values, e.g. 0,2")
    ap.add_argument("--json", help="write the medians and every run here")
    args = ap.parse_args()
    torch.set_num_threads(1)
    workers = [int(w) for w in args.workers.split(",")]
    with tempfile.TemporaryDirectory() as root:
        write_layout(root, args.samples)
        datasets = {name: make_dataset(name, root) for name in LIBS}
        n = len(datasets["torch"])
        check_same_batch(datasets, args.batch_size)
        configs = [(name, w) for w in workers for name in LIBS]
        runs = {c: [] for c in configs}
        for name in LIBS:  # warm-up: first-call costs, page cache
            epoch(name, datasets[name], 0, args.batch_size)
        for r in range(args.rounds):
            for name, w in (configs if r % 2 == 0 else configs[::-1]):
                runs[(name, w)].append(epoch(name, datasets[name], w, args.batch_size))
    cpu = {c: statistics.median(t[0] for t in ts) for c, ts in runs.items()}
    wall = {c: statistics.median(t[1] for t in ts) for c, ts in runs.items()}
    print("FashionMNIST epoch of %d images, ToTensor + Normalize, batch %d, shuffled; medians of %d rounds; "
          "%d cores, load average %.1f" % (n, args.batch_size, args.rounds, len(os.sched_getaffinity(0)),
                                           os.getloadavg()[0]))
    print("  %-22s %9s %13s %9s %13s" % ("", "CPU s", "samples/s CPU", "wall s", "samples/s wall"))
    for name, w in configs:
        c = (name, w)
        print("  %-22s %9.3f %13.0f %9.3f %13.0f" % ("%s, workers=%d" % (name, w), cpu[c], n / cpu[c], wall[c],
                                                      n / wall[c]))
    for w in workers:
        print("  workers=%d: fusionflow.vision / torchvision samples/s (CPU) %.2fx, (wall) %.2fx"
              % (w, cpu[("torch", w)] / cpu[("fusionflow", w)], wall[("torch", w)] / wall[("fusionflow", w)]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"%s_w%d" % c: {"samples": n, "median_cpu_s": cpu[c], "median_wall_s": wall[c],
                                      "runs_cpu_wall_s": runs[c]} for c in configs}, f, indent=1)


if __name__ == "__main__":
    main()
