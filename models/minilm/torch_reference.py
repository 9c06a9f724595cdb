"""The PyTorch reference for all-MiniLM-L6-v2: HF BertModel's eval forward written out
in torch ops (PyTorch 1.13, no transformers), mean pooling and L2 normalization as
sentence-transformers. tests/python/test_minilm.py compares ff-embed with it and
benchmarks/bench_embed.py times it beside ff-embed.

The weights are read straight from model.safetensors with NumPy (header JSON + raw
little-endian data), not through fusionflow, so the reference shares nothing with what
it checks.
"""
import json
import os
import struct

import numpy as np
import torch

_NP = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32}


def read_safetensors(path):
    """name -> NumPy array for every tensor of a safetensors file."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        b, e = h["data_offsets"]
        out[name] = np.frombuffer(data[b:e], dtype=np.dtype(_NP[h["dtype"]]).newbyteorder("<")).reshape(h["shape"])
    return out


def half(w, dtype):
    """The weights converted to dtype (torch.bfloat16 or torch.float16)."""
    return {k: v.to(dtype) for k, v in w.items()}


def load(directory):
    """(weights as torch tensors, config) of the model in directory."""
    with open(os.path.join(directory, "config.json")) as f:
        c = json.load(f)
    arrays = read_safetensors(os.path.join(directory, "model.safetensors"))
    w = {k[5:] if k.startswith("bert.") else k: torch.from_numpy(v.copy()) for k, v in arrays.items()}
    return w, {"hidden": c["hidden_size"], "heads": c["num_attention_heads"], "layers": c["num_hidden_layers"],
               "eps": c.get("layer_norm_eps", 1e-12)}


def forward(w, cfg, ids, lens):
    """Embeddings [B, H] of the padded batch ids [B, T] (ints) with lengths lens, computed in
    the weights' dtype (half(w) for bf16/f16, as model.to(dtype)); pooling in f32."""
    ids = torch.as_tensor(ids, dtype=torch.int64)
    B, T = ids.shape
    H, nh = cfg["hidden"], cfg["heads"]
    dh, eps = H // nh, cfg["eps"]
    keep = (torch.arange(T)[None, :] < torch.as_tensor(lens)[:, None]).to(torch.float32)  # [B, T]
    dt = w["embeddings.LayerNorm.weight"].dtype
    bias = ((1.0 - keep)[:, None, None, :] * torch.finfo(dt).min).to(dt)  # HF's extended mask
    ln = torch.nn.functional.layer_norm
    lin = torch.nn.functional.linear
    with torch.no_grad():
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.token_type_embeddings.weight"][0]
        x = x + w["embeddings.position_embeddings.weight"][:T]
        x = ln(x, (H,), w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        for i in range(cfg["layers"]):
            p = "encoder.layer.%d." % i

            def heads(name):
                y = lin(x, w[p + "attention.self.%s.weight" % name], w[p + "attention.self.%s.bias" % name])
                return y.view(B, T, nh, dh).permute(0, 2, 1, 3)

            scores = heads("query") @ heads("key").transpose(-1, -2) / dh ** 0.5 + bias
            ctx = (scores.softmax(-1) @ heads("value")).permute(0, 2, 1, 3).reshape(B, T, H)
            a = lin(ctx, w[p + "attention.output.dense.weight"], w[p + "attention.output.dense.bias"])
            x = ln(a + x, (H,), w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"],
                   eps)
            h = torch.nn.functional.gelu(lin(x, w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"]))
            o = lin(h, w[p + "output.dense.weight"], w[p + "output.dense.bias"])
            x = ln(o + x, (H,), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
        m = keep[:, :, None]
        mean = (x.float() * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(mean, p=2, dim=1)
