#!/usr/bin/env python3
"""Trains a tiny character-level GPT (examples/tiny_gpt.py, nanoGPT's model) on a text file
for a short while, then samples text from it with the KV cache: the prompt runs once, and
each new character is one query attending over the cached keys and values.

    PYTHONPATH=python FUSIONFLOW_LIB=build/lib/libfusionflow.so python3 examples/gpt_generate.py

The corpus defaults to /usr/share/common-licenses/GPL-3 (Debian's base-files). It prints
the loss as it trains, the sampled text, then the time per generated character with the
cache and without it (the whole context re-run for every character).
"""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)
import fusionflow as ff  # noqa: E402
from tiny_gpt import generate, gpt_classes  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--text", default="/usr/share/common-licenses/GPL-3")
    ap.add_argument("--steps", type=int, default=300, help="training steps")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--block", type=int, default=64, help="context length (the cache's Tmax)")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--embd", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--prompt", default="This License")
    ap.add_argument("--chars", type=int, default=300, help="characters to generate")
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--top-k", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1337)
    args = ap.parse_args()

    with open(args.text, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    missing = sorted(set(args.prompt) - set(chars))
    if missing:
        sys.exit("gpt_generate: the prompt's characters %r are not in %s" % ("".join(missing), args.text))
    data = np.array([stoi[c] for c in text], dtype=np.int64)

    ff.manual_seed(args.seed)
    GPTConfig, GPT = gpt_classes(ff)
    model = GPT(GPTConfig(vocab_size=len(chars), block_size=args.block, n_layer=args.layers, n_head=args.heads,
                          n_embd=args.embd))
    opt = ff.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1)
    rng = np.random.default_rng(args.seed)
    t0 = time.time()
    for step in range(args.steps):
        starts = rng.integers(0, len(data) - args.block - 1, args.batch)
        x = np.stack([data[s:s + args.block] for s in starts])
        y = np.stack([data[s + 1:s + 1 + args.block] for s in starts])
        _, loss = model(ff.from_numpy(x), ff.from_numpy(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0 or step == args.steps - 1:
            print("step %4d  loss %.3f  (%.1f s)" % (step, loss.item(), time.time() - t0), flush=True)

    model.eval()
    prompt = ff.tensor([[stoi[c] for c in args.prompt]], dtype=ff.int64)
    t0 = time.time()
    out, _ = generate(ff, model, prompt, args.chars, use_cache=True, greedy=False, temperature=args.temperature,
                      top_k=args.top_k)
    cached = (time.time() - t0) / args.chars
    print("-" * 60)
    print("".join(chars[i] for i in out[0].tolist()))
    print("-" * 60)
    n = min(args.chars, 50)
    t0 = time.time()
    generate(ff, model, prompt, n, use_cache=False, greedy=False, temperature=args.temperature, top_k=args.top_k)
    full = (time.time() - t0) / n
    print("per character: %.2f ms with the KV cache, %.2f ms re-running the context (first %d characters)"
          % (cached * 1e3, full * 1e3, n))


if __name__ == "__main__":
    main()
