#!/usr/bin/python3
"""all-MiniLM-L6-v2 sentences per second: ff-embed's forward beside the PyTorch forward of
the same weights (models/minilm/torch_reference.py), on the same token ids, at batch 1
and 32, one thread each (FF_NUM_THREADS / OPENBLAS_NUM_THREADS / OMP_NUM_THREADS = 1 and
torch.set_num_threads(1); OPENBLAS_CORETYPE as the environment has it, for both).

    /usr/bin/python3 benchmarks/bench_embed.py [--ff-embed build/bin/ff-embed] [--backend cpu_blas]
                                               [--runs 30] [--threads 1] [--dtype f32|bf16|f16|int8] [--ort]

--dtype runs both in that dtype: ff-embed --dtype, PyTorch on the weights converted with
.to(dtype) (PyTorch 1.13 has no float16 matmul on CPU: its column says n/a there).

--dtype int8 compares ff-embed --dtype int8 (the encoder's Linear layers through the
int8 qmatmul) with ff-embed's own f32 forward instead (issue 35's target: >= 2x at batch
32), and prints the smallest cosine between the two embeddings of each sentence.

--ort adds ONNX Runtime (scripts/setup-ort.sh: PyPI's onnxruntime in a venv) on the same
model: the PyTorch reference's forward exported with torch.onnx.export (opset 17, one graph
per batch shape, into ~/.cache/fusionflow/ort-models), run by an InferenceSession with every
graph optimization and intra_op_num_threads = --threads, timed in its own process the same
way; its embeddings are checked against PyTorch's (cosine) before its time counts.

ff-embed times its own forwards (`--repeat N`: the batch's forward, the embeddings read
back to the host; tokenizing and loading excluded) and reports the median; the PyTorch
forward is timed the same way in this process after one warm-up. Needs the model
(scripts/fetch-minilm.sh) and PyTorch.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# 32 sentences of everyday lengths (6 to 27 tokens); batch 1 is the first.
SENTENCES = [
    "A man is eating a piece of bread.",
    "The new movie is awesome and everyone should see it.",
    "How do I reset my password if I no longer have access to my email?",
    "The cat sits outside.",
    "A man is playing guitar.",
    "Stock markets rallied on Tuesday after the central bank held interest rates steady.",
    "I love pizza with extra cheese.",
    "The weather today is sunny with a light breeze from the west.",
    "Please send the quarterly report by Friday afternoon.",
    "She quickly realized that the map was upside down.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "Where is the nearest train station?",
    "Our team won the championship for the third year in a row.",
    "The recipe calls for two cups of flour, one egg, and a pinch of salt.",
    "He forgot his umbrella at the restaurant.",
    "Machine learning models need careful evaluation on held-out data.",
    "The museum opens at nine and closes at five on weekdays.",
    "Can you recommend a good book about the history of Rome?",
    "The children built a sandcastle near the water.",
    "Electric cars are becoming more affordable every year.",
    "My flight was delayed by three hours because of a storm.",
    "A woman is slicing an onion.",
    "The committee will announce its decision next month after reviewing all applications.",
    "Bananas are a good source of potassium.",
    "The software update fixed several security vulnerabilities.",
    "They hiked to the summit and watched the sunrise.",
    "Traffic on the highway was unusually light this morning.",
    "The orchestra performed Beethoven's ninth symphony to a sold-out audience.",
    "Learning a new language takes patience and daily practice.",
    "The bakery on the corner sells fresh croissants every morning.",
    "Two dogs are running through a field.",
    "The library extended its hours during exam week.",
]


def one_thread_env(threads):
    env = dict(os.environ)
    for k in ("FF_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = str(threads)
    return env


def ff_forward_ms(exe, backend, dtype, sentences, runs, env):
    """(median ms, tokens per sentence after padding) of ff-embed's forward."""
    p = subprocess.run([exe, "--backend", backend, "--dtype", dtype, "--repeat", str(runs), "--", *sentences],
                       capture_output=True, text=True, env=env)
    if p.returncode:
        sys.exit("bench_embed: ff-embed failed: %s" % p.stderr.strip())
    m = re.search(r"batch (\d+), (\d+) tokens: forward median ([0-9.]+) ms", p.stderr)
    return float(m.group(3)), int(m.group(2))


def ff_embeddings(exe, backend, dtype, sentences, env):
    import numpy as np
    out = subprocess.run([exe, "--backend", backend, "--dtype", dtype, "--", *sentences], capture_output=True,
                         text=True, env=env, check=True).stdout
    return np.array([[float(v) for v in line.split()] for line in out.splitlines()])


def int8_main(a, env):
    """ff-embed int8 beside ff-embed f32: speed and the smallest cosine."""
    print("all-MiniLM-L6-v2 forward, ff-embed --backend %s --dtype int8 vs f32, %d thread(s)" % (a.backend, a.threads))
    print("%-6s %-7s %12s %12s %10s %12s" % ("batch", "tokens", "int8 ms", "f32 ms", "f32/int8", "min cosine"))
    for batch in (1, 32):
        sentences = SENTENCES[:batch]
        q_ms, tokens = ff_forward_ms(a.ff_embed, a.backend, "int8", sentences, a.runs, env)
        f_ms, _ = ff_forward_ms(a.ff_embed, a.backend, "f32", sentences, a.runs, env)
        eq, ef = (ff_embeddings(a.ff_embed, a.backend, d, sentences, env) for d in ("int8", "f32"))
        cos = (eq * ef).sum(1) / (((eq * eq).sum(1) * (ef * ef).sum(1)) ** 0.5)
        print("%-6d %-7d %12.3f %12.3f %9.2fx %12.5f" % (batch, tokens, q_ms, f_ms, f_ms / q_ms, cos.min()))
    print("f32/int8: our f32 forward's time over our int8 forward's (above 1: int8 is faster)")


def ff_ids(exe, sentences):
    out = subprocess.run([exe, "--ids", "--", *sentences], capture_output=True, text=True, check=True).stdout
    return [[int(v) for v in line.split()] for line in out.splitlines()]


def torch_forward_ms(ref, w, cfg, seqs, runs):
    import numpy as np
    lens = [len(s) for s in seqs]
    ids = np.zeros((len(seqs), max(lens)), dtype=np.int64)  # [PAD] is 0
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = s
    try:
        ref.forward(w, cfg, ids, lens)  # warm-up
    except RuntimeError:  # e.g. "addmm_impl_cpu_" not implemented for 'Half'
        return float("nan")
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        ref.forward(w, cfg, ids, lens)
        times.append(1e3 * (time.perf_counter() - t0))
    return statistics.median(times)


ORT_CHILD = r"""
import json, statistics, sys, time
import numpy as np
import onnxruntime as ort
path, ids_file, threads, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
z = np.load(ids_file)
o = ort.SessionOptions()
o.intra_op_num_threads = o.inter_op_num_threads = threads
o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
sess = ort.InferenceSession(path, o, providers=["CPUExecutionProvider"])
feed = {"ids": z["ids"], "lens": z["lens"]}
out = sess.run(None, feed)[0]
times = []
for _ in range(runs):
    t0 = time.perf_counter()
    sess.run(None, feed)
    times.append(1e3 * (time.perf_counter() - t0))
np.save(ids_file + ".out.npy", out)
print(json.dumps({"ms": statistics.median(times), "version": ort.__version__}))
"""


def ort_forward_ms(ref, w, cfg, seqs, runs, threads):
    """(median ms, ONNX Runtime's version, min cosine against PyTorch) of the reference
    forward exported to ONNX and run by ONNX Runtime in the venv of scripts/setup-ort.sh."""
    import numpy as np
    import torch
    py = subprocess.run(["bash", os.path.join(REPO, "scripts", "setup-ort.sh")], capture_output=True, text=True)
    if py.returncode:
        sys.exit("bench_embed --ort: scripts/setup-ort.sh failed:\n" + py.stderr)
    lens = [len(q) for q in seqs]
    ids = np.zeros((len(seqs), max(lens)), dtype=np.int64)
    for i, q in enumerate(seqs):
        ids[i, :len(q)] = q
    cache = os.path.join(os.path.expanduser("~"), ".cache", "fusionflow", "ort-models")
    os.makedirs(cache, exist_ok=True)
    path = os.path.join(cache, "minilm_b%d_t%d.onnx" % ids.shape)

    class Reference(torch.nn.Module):
        def forward(self, ids, lens):
            return ref.forward(w, cfg, ids, lens)

    if not os.path.exists(path):
        import warnings
        warnings.simplefilter("ignore", UserWarning)  # the exporter's shape-inference notes
        torch.onnx.export(Reference(), (torch.from_numpy(ids), torch.tensor(lens)), path, opset_version=17,
                          input_names=["ids", "lens"], output_names=["embeddings"])
    feed = os.path.join(cache, "feed_b%d_t%d.npz" % ids.shape)
    np.savez(feed, ids=ids, lens=np.array(lens, dtype=np.int64))
    p = subprocess.run([py.stdout.strip(), "-c", ORT_CHILD, path, feed, str(threads), str(runs)],
                       capture_output=True, text=True, env=one_thread_env(threads))
    if p.returncode:
        sys.exit("bench_embed --ort: ONNX Runtime failed:\n" + p.stderr)
    res = json.loads(p.stdout.strip().splitlines()[-1])
    got, want = np.load(feed + ".out.npy"), ref.forward(w, cfg, ids, lens).numpy()
    cos = (got * want).sum(1) / np.sqrt((got * got).sum(1) * (want * want).sum(1))
    if cos.min() < 0.9999:
        sys.exit("bench_embed --ort: ONNX Runtime's embeddings differ from PyTorch's (min cosine %.6f)" % cos.min())
    return res["ms"], res["version"], float(cos.min())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ff-embed", default=os.path.join(REPO, "build", "bin", "ff-embed"))
    ap.add_argument("--backend", default="cpu_blas")
    ap.add_argument("--runs", type=int, default=30, help="timed forwards per measurement (default 30)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--dtype", default="f32", choices=("f32", "bf16", "f16", "int8"))
    ap.add_argument("--ort", action="store_true", help="add ONNX Runtime's column (f32; scripts/setup-ort.sh)")
    a = ap.parse_args()
    if a.ort and a.dtype != "f32":
        sys.exit("bench_embed: --ort compares the f32 model only")
    env = one_thread_env(a.threads)
    if a.dtype == "int8":
        return int8_main(a, env)
    os.environ.update({k: env[k] for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")})
    import torch  # after the thread variables: OpenBLAS reads them when it loads
    torch.set_num_threads(a.threads)
    sys.path.insert(0, os.path.join(REPO, "models", "minilm"))
    import torch_reference as ref
    model = subprocess.run([a.ff_embed, "--print-model-dir"], capture_output=True, text=True,
                           check=True).stdout.strip()
    w, cfg = ref.load(model)
    if a.dtype != "f32":
        w = ref.half(w, torch.bfloat16 if a.dtype == "bf16" else torch.float16)

    print("all-MiniLM-L6-v2 forward in %s, %d thread(s), ff-embed --backend %s vs PyTorch %s (OPENBLAS_CORETYPE=%s)"
          % (a.dtype, a.threads, a.backend, torch.__version__, os.environ.get("OPENBLAS_CORETYPE", "unset")))
    print("%-6s %-7s %12s %12s %12s %12s %8s" % ("batch", "tokens", "ff ms", "ff sent/s", "torch ms", "torch sent/s",
                                                  "ff/torch"))
    for batch in (1, 32):
        sentences = SENTENCES[:batch]
        ff_ms, tokens = ff_forward_ms(a.ff_embed, a.backend, a.dtype, sentences, a.runs, env)
        seqs = ff_ids(a.ff_embed, sentences)
        t_ms = torch_forward_ms(ref, w, cfg, seqs, a.runs)
        line = "%-6d %-7d %12.3f %12.1f %12.3f %12.1f %7.2fx" % (batch, tokens, ff_ms, 1e3 * batch / ff_ms, t_ms,
                                                                 1e3 * batch / t_ms, t_ms / ff_ms)
        if a.ort:
            o_ms, version, cos = ort_forward_ms(ref, w, cfg, seqs, a.runs, a.threads)
            line += "   ORT %s %.3f ms, ff/ORT %.2fx (cosine to PyTorch %.6f)" % (version, o_ms, o_ms / ff_ms, cos)
        print(line)
    print("ff/torch: PyTorch's time over ff-embed's (above 1: ff-embed is faster); ff/ORT the same against ONNX Runtime")


if __name__ == "__main__":
    main()
