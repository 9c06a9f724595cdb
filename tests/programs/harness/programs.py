"""The harness's programs: where each one's script lives, the argv of its short run, the data it
is given, and, while it cannot run on FusionFlow yet, the first missing name (the xfail reason;
strict, so the test fails once the name lands and this line must be updated)."""
import gzip
import os
import struct

import numpy as np

# base-files ships it on every Debian machine; it holds every character of the context that
# chargpt samples from at step 0 ("O God, O God!"), which GPL-3 does not
CORPUS = "/usr/share/common-licenses/Apache-2.0"


# Debian's dataset-fashion-mnist (scripts/setup-deps.sh installs it): MNIST's IDX format and shapes
FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


def _write_idx_head(src, dst, limit):
    """The first `limit` items of a gzipped IDX file, as an uncompressed IDX file whose header
    says `limit`: read up to there only, so a prepare costs milliseconds, not a 26 MB gunzip."""
    with gzip.open(src, "rb") as f:
        magic = f.read(4)
        dims = struct.unpack(">%dI" % magic[3], f.read(4 * magic[3]))
        n = min(limit, dims[0])
        body = f.read(n * int(np.prod(dims[1:], dtype=np.int64)))
    with open(dst, "wb") as f:
        f.write(magic + struct.pack(">%dI" % len(dims), n, *dims[1:]) + body)


def _mnist(limit, root):
    """prepare: torchvision's MNIST layout under `root` (the program's own root, from its work
    folder): MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte, Fashion-MNIST's first
    `limit` images and labels of each split, so that one epoch is a few steps. Both sides read
    these same files (torchvision sees them there and downloads nothing)."""
    def prepare(work):
        raw = os.path.join(work, root, "MNIST", "raw")
        os.makedirs(raw, exist_ok=True)  # a root outside the run folder is shared by both sides
        for split in ("train", "t10k"):
            for kind in ("images-idx3", "labels-idx1"):
                name = "%s-%s-ubyte" % (split, kind)
                _write_idx_head(os.path.join(FASHION_MNIST, name + ".gz"), os.path.join(raw, name), limit)
    return prepare


def _imagenet_folder(root, classes=3, train_per_class=4, val_per_class=1):
    """prepare: ImageNet's ImageFolder layout (root/{train,val}/<wnid>/<name>.JPEG) with a few
    seeded colour JPEGs per class, 160-256 pixels a side (8-pixel blocks, a tint per class and
    per-pixel noise), written by PIL and read back by PIL on both sides: something for
    RandomResizedCrop(224) and Resize(256) + CenterCrop(224) to work on."""
    def prepare(work):
        from PIL import Image
        rng = np.random.RandomState(14)
        for split, count in (("train", train_per_class), ("val", val_per_class)):
            for c in range(classes):
                d = os.path.join(work, root, split, "n%08d" % (1440764 + c))
                os.makedirs(d)
                for i in range(count):
                    h, w = rng.randint(160, 257, size=2)
                    coarse = rng.rand((h + 7) // 8, (w + 7) // 8, 3) * 160 + 30 * c
                    img = np.kron(coarse, np.ones((8, 8, 1)))[:h, :w] + 60 * rng.rand(h, w, 3)
                    Image.fromarray(img.clip(0, 255).astype(np.uint8)).save(
                        os.path.join(d, "%s_%d.JPEG" % (split, i)), quality=90)
    return prepare


def _write_corpus(run_dir):
    with open(CORPUS) as src, open(os.path.join(run_dir, "input.txt"), "w") as dst:
        dst.write(src.read())


def _write_cora(run_dir):
    """A synthetic graph in Cora's file format (cora.content: id, 0/1 features, class name;
    cora.cites: id pairs), small and seeded: the real one is a download."""
    rng = np.random.RandomState(7)
    n, feats, classes = 1700, 32, 7  # gat splits off 1600 nodes for test and validation
    os.makedirs(os.path.join(run_dir, "cora"))
    ids = rng.permutation(100000)[:n] + 1
    labels = rng.randint(classes, size=n)
    with open(os.path.join(run_dir, "cora", "cora.content"), "w") as f:
        for i in range(n):
            x = (rng.rand(feats) < 0.1).astype(int)
            f.write("%d\t%s\tclass_%d\n" % (ids[i], "\t".join(map(str, x)), labels[i]))
    with open(os.path.join(run_dir, "cora", "cora.cites"), "w") as f:
        for _ in range(4 * n):
            a, b = rng.randint(n, size=2)
            f.write("%d\t%d\n" % (ids[a], ids[b]))


def _write_pygcn_cora(work):
    """pygcn reads ../data/cora/ (from its pygcn/ folder): a synthetic Cora as gat's, of 1500
    nodes, the most its fixed splits (train 0..139, val 200..499, test 500..1499) reach."""
    rng = np.random.RandomState(8)
    n, feats, classes = 1500, 32, 7
    d = os.path.join(work, "..", "data", "cora")
    os.makedirs(d)
    ids = rng.permutation(100000)[:n] + 1
    labels = rng.randint(classes, size=n)
    with open(os.path.join(d, "cora.content"), "w") as f:
        for i in range(n):
            x = (rng.rand(feats) < 0.1).astype(int)
            f.write("%d\t%s\tclass_%d\n" % (ids[i], "\t".join(map(str, x)), labels[i]))
    with open(os.path.join(d, "cora.cites"), "w") as f:
        for _ in range(3 * n):
            a, b = rng.randint(n, size=2)
            f.write("%d\t%d\n" % (ids[a], ids[b]))


def _write_bsds300(run_dir):
    """Where super_resolution's data.py looks for BSDS300 (it downloads it otherwise): a few
    seeded smooth grayscale images of BSDS300's size, as PNGs."""
    from pngio import write_gray  # harness/shims, on sys.path by now
    rng = np.random.RandomState(11)
    for split, count in (("train", 8), ("test", 2)):
        d = os.path.join(run_dir, "dataset", "BSDS300", "images", split)
        os.makedirs(d)
        for i in range(count):
            coarse = rng.rand(21, 31)
            img = np.kron(coarse, np.ones((16, 16)))[:321, :481]  # blocks: something to upscale
            write_gray(os.path.join(d, "%d.png" % i), (img * 255).astype(np.uint8))



# nanoGPT's model and data sizes for both of its runs (the resumed run must match the first)
_NANOGPT_ARGS = ["--dataset=synthetic", "--n_layer=2", "--n_head=2", "--n_embd=32", "--block_size=16",
                 "--batch_size=4", "--device=cpu", "--dtype=float32", "--compile=False", "--warmup_iters=2",
                 "--lr_decay_iters=10", "--learning_rate=0.01", "--min_lr=0.001", "--eval_iters=2"]


def _nanogpt_checkpoint(work):
    """nanoGPT resumed mid-training: seeded tokens in its data/<dataset>/ layout, its
    configurator.py where train.py exec()s it (the run folder), and out/ckpt.pt written by
    real PyTorch running the upstream train.py from scratch for 2 iterations (a checkpoint
    with the model, AdamW's state, iter_num and the config), which both sides resume from."""
    import shutil
    import subprocess
    import sys
    rng = np.random.RandomState(12)
    d = os.path.join(work, "data", "synthetic")
    os.makedirs(d)
    # a token stream with structure to learn: a noisy repeating walk over 48 symbols
    walk = (np.arange(6000) * 7 + rng.randint(0, 3, 6000)) % 48
    walk[:5000].astype(np.uint16).tofile(os.path.join(d, "train.bin"))
    walk[5000:].astype(np.uint16).tofile(os.path.join(d, "val.bin"))
    with open(os.path.join(d, "meta.pkl"), "wb") as f:
        import pickle
        pickle.dump({"vocab_size": 48}, f)
    upstream = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "nanogpt_resume", "upstream")
    shutil.copyfile(os.path.join(upstream, "configurator.py"), os.path.join(work, "configurator.py"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RANK")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # nothing written into the upstream folder
    subprocess.run([sys.executable, os.path.join(upstream, "train.py"), "--init_from=scratch", "--max_iters=2",
                    "--eval_interval=2"] + _NANOGPT_ARGS, cwd=work, env=env, check=True,
                   stdout=subprocess.DEVNULL, timeout=300)


def _write_series(work):
    """Crossformer reads ./datasets/<data_path> (a CSV: a date column, then one column per
    series, as ETTh1.csv): 144 hourly steps of 3 seeded noisy sines of their own periods, split
    96/24/24 by its --data_split."""
    rng = np.random.RandomState(13)
    d = os.path.join(work, "datasets")
    os.makedirs(d)
    t = np.arange(144)
    series = [np.sin(2 * np.pi * t / period + phase) + 0.1 * rng.standard_normal(t.size)
              for period, phase in ((24, 0.0), (12, 1.0), (36, 2.0))]
    with open(os.path.join(d, "synthetic.csv"), "w") as f:
        f.write("date,a,b,c\n")
        for i in t:
            f.write("2016-07-%02d %02d:00:00,%s\n" % (1 + i // 24, i % 24, ",".join("%.6f" % s[i] for s in series)))


def _copy_names(work):
    """makemore reads --input-file names.txt (its default) from the working folder."""
    import shutil
    shutil.copyfile(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "makemore", "upstream",
                                 "names.txt"), os.path.join(work, "names.txt"))


_MAKEMORE_MODULES = {"torch.utils.tensorboard": "summary_writer"}


PROGRAMS = {
    "mingpt_chargpt": dict(
        script="projects/chargpt/chargpt.py", path=["."],
        # dropout off: its masks come from each library's own generator
        argv=["--model.model_type=gpt-nano", "--data.block_size=32", "--trainer.batch_size=8",
              "--trainer.max_iters=30", "--trainer.num_workers=0", "--model.embd_pdrop=0.0",
              "--model.resid_pdrop=0.0", "--model.attn_pdrop=0.0"],
        prepare=_write_corpus),
    "dcgan": dict(
        script="dcgan/main.py", prepare=_mnist(64, "data"),
        argv=["--dataset", "mnist", "--dataroot", "data", "--workers", "0", "--batchSize", "16",
              "--ngf", "8", "--ndf", "8", "--nz", "16", "--niter", "1", "--manualSeed", "1", "--outf", "out"]),
    "mnist_rnn": dict(
        script="mnist_rnn/main.py", prepare=_mnist(128, "../data"),
        argv=["--epochs", "1", "--batch-size", "32", "--test-batch-size", "64", "--log-interval", "1"]),
    "mnist_forward_forward": dict(
        script="mnist_forward_forward/main.py", prepare=_mnist(256, "data"),
        argv=["--epochs", "20", "--train_size", "256", "--test_size", "256", "--log-interval", "5"]),
    "gat": dict(
        script="gat/main.py", prepare=_write_cora,
        argv=["--epochs", "6", "--hidden-dim", "16", "--num-heads", "2", "--dropout-p", "0.0",
              "--val-every", "5"]),
    "pygcn": dict(
        # Kipf's GCN: a sparse normalised adjacency (torch.sparse.FloatTensor), torch.spmm, legacy
        # FloatTensor(sizes) parameters; dropout off (each library's own masks)
        script="pygcn/train.py", path=["."], prepare=_write_pygcn_cora,
        argv=["--epochs", "8", "--dropout", "0.0"]),
    "yunjey_feedforward": dict(
        # an MLP in the old autograd.Variable style; 300 images: 3 steps an epoch, 5 epochs (its own)
        script="tutorials/01-basics/feedforward_neural_network/main.py", prepare=_mnist(300, "data"), argv=[]),
    "siamese_network": dict(
        script="siamese_network/main.py", prepare=_mnist(128, "../data"),
        # --lr 0.01, not its 1.0: at 1.0, on its unnormalised 0..255 pixels, Adadelta drives the
        # sigmoid to 1e-17 and 1.0 by step 3, and PyTorch against itself from weights moved by an
        # ulp (pair.py --conditioning) ends 1.8e-2 apart, as FusionFlow did: no library can match it
        argv=["--epochs", "1", "--batch-size", "32", "--test-batch-size", "64", "--log-interval", "1",
              "--lr", "0.01"]),
    "normalizing_flows": dict(
        # RealNVP on a seeded three-blob 2-d set, with a torch.distributions.MultivariateNormal
        # prior: the loss is -(prior.log_prob(z) + log|det J|)
        script="examples/ex_2d.py", path=["."],
        argv=["--n", "192", "--flows", "2", "--flow", "RealNVP", "--iterations", "25"]),
    "nanogpt_resume": dict(
        # resumes from out/ckpt.pt, a checkpoint real PyTorch wrote 2 iterations in (prepare):
        # the model (weights tied between wte and lm_head), AdamW's moments and iter_num, read
        # by torch.load; it saves its own checkpoint at iteration 4 (torch.save) and trains on
        script="train.py", prepare=_nanogpt_checkpoint,
        argv=["--init_from=resume", "--max_iters=7", "--eval_interval=4"] + _NANOGPT_ARGS),
    "crossformer": dict(
        # Crossformer (Thinklab-SJTU), a multivariate time-series forecaster written with einops
        # (rearrange/repeat in its embedding, two-stage attention, encoder and decoder) on a
        # seeded synthetic CSV (prepare; pandas.read_csv is a stand-in); dropout off; 4 steps an
        # epoch for 2 epochs, with its validation, early-stopping checkpoint and test
        script="main_crossformer.py", prepare=_write_series,
        argv=["--data", "synthetic", "--data_path", "synthetic.csv", "--data_dim", "3",
              "--data_split", "96,24,24", "--in_len", "24", "--out_len", "12", "--seg_len", "6",
              "--win_size", "2", "--factor", "2", "--d_model", "16", "--d_ff", "32", "--n_heads", "2",
              "--e_layers", "2", "--dropout", "0.0", "--batch_size", "16", "--train_epochs", "2",
              "--learning_rate", "1e-3"]),
    "imagenet": dict(
        # pytorch/examples' ImageNet trainer: ImageFolder, RandomResizedCrop(224) +
        # RandomHorizontalFlip (their draws shared through hooks.py) + ToTensor + Normalize,
        # Resize(256) + CenterCrop(224) for validation, torchvision's resnet18 (1000 classes), SGD
        # with momentum and StepLR, a torch.save checkpoint each epoch; on 12 training images of
        # 3 classes and 3 for validation (prepare): 3 steps of 4 for 2 epochs. --lr 1e-4, not its
        # 0.1: at 1e-3 already PyTorch against itself from weights moved by an ulp ends 1.6e-3 apart
        # (BatchNorm over batches of 4 from a fresh init), at 1e-4 1.5e-5
        script="imagenet/main.py", prepare=_imagenet_folder("imagenet"),
        argv=["imagenet", "-a", "resnet18", "-j", "0", "--epochs", "2", "-b", "4", "-p", "1", "--lr", "0.0001"]),
    "imagenet_squeezenet": dict(
        # the same trainer on torchvision's squeezenet1_1 (Fire modules: squeeze and expand
        # convolutions, concatenated; no BatchNorm; Dropout(0.5) before its conv classifier, its
        # masks shared through hooks.py). mobilenet_v2 would not do: from its fresh init (BatchNorm
        # after every depthwise convolution) PyTorch against itself from weights moved by an ulp
        # (pair.py --conditioning) ends these 6 steps 2.4e-3 apart at --lr 1e-4, beyond the test's
        # tolerance, and still parts 1.1e-4 at one step of --lr 1e-5; squeezenet1_1 at 1e-3: 2.6e-5
        upstream="imagenet", script="imagenet/main.py", prepare=_imagenet_folder("imagenet"),
        argv=["imagenet", "-a", "squeezenet1_1", "-j", "0", "--epochs", "2", "-b", "4", "-p", "1", "--lr", "0.001"]),
    # makemore's character models on its names.txt (32k names): CharDataset.__getitem__ builds
    # each sample from a list (torch.tensor, zeros, slice assignment), an InfiniteDataLoader
    # samples with replacement; AdamW. torch.utils.tensorboard (the tensorboard package, not
    # installed) is a stand-in that keeps the scalars (shims/summary_writer.py)
    "makemore_mlp": dict(
        # Bengio's MLP: block_size embedding lookups of a rolled index, concatenated, Linear-Tanh-Linear
        upstream="makemore", script="makemore.py", prepare=_copy_names, modules=_MAKEMORE_MODULES,
        argv=["--type", "mlp", "--max-steps", "30", "--num-workers", "0", "--batch-size", "32",
              "--n-embd", "16", "--n-embd2", "64"]),
    "makemore_bow": dict(
        # the causal bag of words: a masked average over the context (torch.zeros att, masked_fill, softmax)
        upstream="makemore", script="makemore.py", prepare=_copy_names, modules=_MAKEMORE_MODULES,
        argv=["--type", "bow", "--max-steps", "30", "--num-workers", "0", "--batch-size", "32",
              "--n-embd", "16", "--n-embd2", "32"]),
    "makemore_gru": dict(
        # a GRU cell written out (Linear, sigmoid, tanh, one step per character) over the whole name
        upstream="makemore", script="makemore.py", prepare=_copy_names, modules=_MAKEMORE_MODULES,
        argv=["--type", "gru", "--max-steps", "20", "--num-workers", "0", "--batch-size", "32",
              "--n-embd", "16", "--n-embd2", "32"]),
    "super_resolution": dict(
        script="super_resolution/main.py", prepare=_write_bsds300,
        argv=["--upscale_factor", "2", "--batchSize", "2", "--testBatchSize", "2", "--nEpochs", "1", "--threads", "0"]),
}

# program -> the text of the first error the program stops on today, as found by running it
# (python3 tests/programs/harness/pair.py NAME). The test expects exactly this error; when the
# name lands the program goes further, the test fails, and this line must be updated or removed.
BLOCKED = {}

# program -> what is known to differ, for a program that runs to its end but whose losses part
# from PyTorch's (a bug to find, not a missing name). Strict as BLOCKED: once the losses agree
# the test fails until the line goes.
DIFFERS = {}

# The device side (pair.py --device, issue 51): programs whose device string cannot move them,
# with the reason; the test expects exactly that failure (strict, like BLOCKED).
DEVICE_BLOCKED = {
    # main_worker moves the model only in its cuda/mps branches; on a CPU run it stays put
    # while train() moves each batch to `device`: the device gets a batch, the model does not
    "imagenet": "expected a tensor on a FusionFlow device, got one on cpu",
    "imagenet_squeezenet": "expected a tensor on a FusionFlow device, got one on cpu",
}
