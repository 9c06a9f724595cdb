"""A nanoGPT-style GPT with a KV cache for generation, written once for any PyTorch-like
library: gpt_classes(fusionflow) or gpt_classes(torch) gives the same model (same
parameter names and shapes, so weights copy across), used by examples/gpt_generate.py,
tests/python/test_kv_cache.py and benchmarks/bench_sequence.py.

Attention is F.scaled_dot_product_attention where the library has it (fusionflow; PyTorch
>= 2.0), looked up at each call so a test can watch it; elsewhere (PyTorch 1.13) the same
composition nanoGPT writes by hand: matmul, mask, softmax, matmul.

Incremental decoding (KVCache): each layer keeps K and V in preallocated [B, H, Tmax, D]
tensors. A forward over the new tokens at positions pos .. pos+T-1 writes their K/V into the
cache in place and attends over the cache's prefix view [.., :pos+T, :]; the prefix is never
recomputed, and one new token is one query (Tq = 1, no mask: every cached key precedes it).
"""
import math


def composed_attention(lib):
    """PyTorch 2's scaled_dot_product_attention written in lib's ops (no dropout)."""
    masks = {}

    def sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
        if dropout_p:
            raise ValueError("composed_attention: dropout is not needed here and not written")
        s = (q @ k.transpose(-2, -1)) * (scale or 1.0 / math.sqrt(q.size(-1)))
        if is_causal:
            tq, tk = q.size(-2), k.size(-2)
            key = (tq, tk, str(q.device))
            if key not in masks:  # built once per shape, as nanoGPT's registered buffer
                masks[key] = lib.ones(tq, tk, dtype=lib.bool, device=q.device).triu(1)
            s = s.masked_fill(masks[key], float("-inf"))
        if attn_mask is not None:
            s = s.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == lib.bool else s + attn_mask
        return lib.softmax(s, dim=-1) @ v
    return sdpa


class KVCache:
    """Per-layer K/V of a batch, [B, H, Tmax, D] each, filled up to pos."""

    def __init__(self, lib, n_layer, batch, n_head, max_len, head_dim, dtype=None, device=None):
        shape = (batch, n_head, max_len, head_dim)
        self.k = [lib.zeros(*shape, dtype=dtype, device=device) for _ in range(n_layer)]
        self.v = [lib.zeros(*shape, dtype=dtype, device=device) for _ in range(n_layer)]
        self.max_len, self.pos = max_len, 0

    def append(self, layer, k, v):
        """Writes k, v [B, H, T, D] at positions pos .. pos+T-1 of layer's cache (in place)
        and returns the views of positions 0 .. pos+T-1 (no copy)."""
        end = self.pos + k.size(2)
        if end > self.max_len:
            raise ValueError("KVCache.append: positions %d..%d do not fit the cache's %d"
                             % (self.pos, end - 1, self.max_len))
        self.k[layer][:, :, self.pos:end] = k
        self.v[layer][:, :, self.pos:end] = v
        return self.k[layer][:, :, :end], self.v[layer][:, :, :end]


def gpt_classes(lib):
    """(GPTConfig, GPT) built on lib (fusionflow or torch)."""
    nn, F = lib.nn, lib.nn.functional
    fallback = composed_attention(lib)

    def attention(*args, **kw):
        return getattr(F, "scaled_dot_product_attention", fallback)(*args, **kw)

    class GPTConfig:
        def __init__(self, vocab_size=65, block_size=128, n_layer=4, n_head=4, n_embd=128, bias=True):
            self.vocab_size, self.block_size = vocab_size, block_size
            self.n_layer, self.n_head, self.n_embd, self.bias = n_layer, n_head, n_embd, bias

    class CausalSelfAttention(nn.Module):
        def __init__(self, config, index):
            super().__init__()
            self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
            self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
            self.n_head, self.n_embd, self.index = config.n_head, config.n_embd, index

        def forward(self, x, cache=None):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
            if cache is None:
                y = attention(q, k, v, is_causal=True)
            else:
                start = cache.pos
                k, v = cache.append(self.index, k, v)
                if T == 1 or start == 0:  # one query sees every cached key; a first chunk is causal
                    y = attention(q, k, v, is_causal=T > 1)
                else:  # a later chunk: query i (at start + i) sees keys 0 .. start + i
                    allowed = lib.ones(T, start + T, dtype=lib.bool, device=x.device).tril(start)
                    y = attention(q, k, v, attn_mask=allowed)
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class Block(nn.Module):
        def __init__(self, config, index):
            super().__init__()
            self.ln_1 = nn.LayerNorm(config.n_embd)
            self.attn = CausalSelfAttention(config, index)
            self.ln_2 = nn.LayerNorm(config.n_embd)
            self.mlp = nn.Sequential(nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias), nn.GELU(),
                                     nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias))

        def forward(self, x, cache=None):
            x = x + self.attn(self.ln_1(x), cache)
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.config = config
            self.wte = nn.Embedding(config.vocab_size, config.n_embd)
            self.wpe = nn.Embedding(config.block_size, config.n_embd)
            self.h = nn.ModuleList([Block(config, i) for i in range(config.n_layer)])
            self.ln_f = nn.LayerNorm(config.n_embd)
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            self.lm_head.weight = self.wte.weight  # tied, as nanoGPT
            for name, p in self.named_parameters():  # nanoGPT's init
                if name.endswith("c_proj.weight") or name.endswith("mlp.2.weight"):
                    nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))
                elif p.dim() == 2:
                    nn.init.normal_(p, mean=0.0, std=0.02)
                elif name.endswith(".bias") and "ln" not in name:
                    nn.init.zeros_(p)

        def new_cache(self, batch):
            c = self.config
            w = self.wte.weight
            return KVCache(lib, c.n_layer, batch, c.n_head, c.block_size, c.n_embd // c.n_head, w.dtype, w.device)

        def forward(self, idx, targets=None, cache=None):
            """Logits [B, T, vocab] of idx [B, T] (and the loss if targets); with a cache,
            idx holds the tokens at positions cache.pos .. cache.pos+T-1, and pos advances."""
            T = idx.size(1)
            start = cache.pos if cache is not None else 0
            if start + T > self.config.block_size:
                raise ValueError("GPT.forward: positions up to %d, block_size is %d"
                                 % (start + T - 1, self.config.block_size))
            x = self.wte(idx) + self.wpe(lib.arange(start, start + T, device=idx.device))
            for block in self.h:
                x = block(x, cache)
            if cache is not None:
                cache.pos += T
            logits = self.lm_head(self.ln_f(x))
            if targets is None:
                return logits
            return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    return GPTConfig, GPT


def generate(lib, model, idx, steps, use_cache=True, greedy=True, temperature=1.0, top_k=None):
    """Appends `steps` tokens to idx [B, T0] and returns (idx, the logits [B, vocab] each new
    token was drawn from). Without the cache, every step runs the whole (cropped) context,
    as nanoGPT's generate; with it, the prompt runs once and each step one token. When the
    cache is full, it restarts from the last half of the window (recomputing that half)."""
    block = model.config.block_size
    cache, drawn = None, []
    with lib.no_grad():
        for _ in range(steps):
            if not use_cache:
                logits = model(idx[:, -block:])[:, -1, :]
            else:
                if cache is None or cache.pos == block:
                    cache = model.new_cache(idx.size(0))
                    logits = model(idx[:, -(block // 2 if idx.size(1) >= block else block):], cache=cache)
                else:
                    logits = model(idx[:, -1:], cache=cache)
                logits = logits[:, -1, :]
            drawn.append(logits)
            if greedy:
                nxt = logits.argmax(dim=-1, keepdim=True)
            else:
                logits = logits / temperature
                if top_k is not None:
                    kth = lib.topk(logits, min(top_k, logits.size(-1)))[0][:, -1:]
                    logits = logits.masked_fill(logits < kth, float("-inf"))
                nxt = lib.multinomial(lib.softmax(logits, dim=-1), num_samples=1)
            idx = lib.cat((idx, nxt), dim=1)
    return idx, drawn
