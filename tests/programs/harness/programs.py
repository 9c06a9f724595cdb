"""The harness's programs: where each one's script lives, the argv of its short run, the data it
is given, and, while it cannot run on FusionFlow yet, the first missing name (the xfail reason;
strict, so the test fails once the name lands and this line must be updated)."""
import os

import numpy as np

# base-files ships it on every Debian machine; it holds every character of the context that
# chargpt samples from at step 0 ("O God, O God!"), which GPL-3 does not
CORPUS = "/usr/share/common-licenses/Apache-2.0"


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


PROGRAMS = {
    "mingpt_chargpt": dict(
        script="projects/chargpt/chargpt.py", path=["."],
        # dropout off: its masks come from each library's own generator
        argv=["--model.model_type=gpt-nano", "--data.block_size=32", "--trainer.batch_size=8",
              "--trainer.max_iters=30", "--trainer.num_workers=0", "--model.embd_pdrop=0.0",
              "--model.resid_pdrop=0.0", "--model.attn_pdrop=0.0"],
        prepare=_write_corpus),
    "dcgan": dict(
        script="dcgan/main.py", mnist_limit=64,
        argv=["--dataset", "mnist", "--dataroot", "data", "--workers", "0", "--batchSize", "16",
              "--ngf", "8", "--ndf", "8", "--nz", "16", "--niter", "1", "--manualSeed", "1", "--outf", "out"]),
    "mnist_rnn": dict(
        script="mnist_rnn/main.py", mnist_limit=128,
        argv=["--epochs", "1", "--batch-size", "32", "--test-batch-size", "64", "--log-interval", "1"]),
    "mnist_forward_forward": dict(
        script="mnist_forward_forward/main.py", mnist_limit=256,
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
        script="tutorials/01-basics/feedforward_neural_network/main.py", mnist_limit=300, argv=[]),
    "siamese_network": dict(
        script="siamese_network/main.py", mnist_limit=128,
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
    "super_resolution": dict(
        script="super_resolution/main.py", prepare=_write_bsds300,
        argv=["--upscale_factor", "2", "--batchSize", "2", "--testBatchSize", "2", "--nEpochs", "1", "--threads", "0"]),
}

# program -> the text of the first error the program stops on today, as found by running it
# (python3 tests/programs/harness/pair.py NAME). The test expects exactly this error; when the
# name lands the program goes further, the test fails, and this line must be updated or removed.
BLOCKED = {
}

# program -> what is known to differ, for a program that runs to its end but whose losses part
# from PyTorch's (a bug to find, not a missing name). Strict as BLOCKED: once the losses agree
# the test fails until the line goes.
DIFFERS = {}
