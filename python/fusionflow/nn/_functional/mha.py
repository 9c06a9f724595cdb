"""F.multi_head_attention_forward: PyTorch 1.13's signature, shapes and mask rules.

Layout: query [L, N, E] (or [L, E] unbatched), key/value [S, N, Ek/Ev]. The heads are
split into 4-D [N, H, T, Dh] views, the form F.scaled_dot_product_attention takes. The
masks (attn_mask [L, S] or [N*H, L, S], key_padding_mask [N, S]; bool: true = masked,
float: added) stay separate, broadcasting views until they are summed into one additive
mask: a key_padding_mask alone reaches the op as [N, 1, 1, S], not as an [N*H, L, S]
tensor as in PyTorch.

need_weights=False runs the attention as the one op (O(T) memory, no T x T scores where
the backend has the entry). need_weights=True computes the weights explicitly, as
PyTorch does, since they are returned. Difference from PyTorch 1.13: a query whose every
key is masked gets a zero output on the need_weights=False path (the op's rule, PyTorch
2.5's), where 1.13 gives NaN; need_weights=True keeps 1.13's NaN.
"""
import math
import warnings

from ..._factories import cat, zeros
from ... import _dtype

__all__ = ["multi_head_attention_forward"]


def _check(cond, msg):
    if not cond:
        raise AssertionError("multi_head_attention_forward: " + msg)


def _shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """PyTorch's _mha_shape_check: True when the input is batched (3-D query)."""
    if query.ndim == 3:
        _check(key.ndim == 3 and value.ndim == 3, "for batched (3-D) query, expected key and value to be 3-D "
               "but found %d-D and %d-D" % (key.ndim, value.ndim))
        _check(key_padding_mask is None or key_padding_mask.ndim == 2, "for batched (3-D) query, expected "
               "key_padding_mask to be None or 2-D but found %d-D" % getattr(key_padding_mask, "ndim", 0))
        _check(attn_mask is None or attn_mask.ndim in (2, 3), "for batched (3-D) query, expected attn_mask to "
               "be None, 2-D or 3-D but found %d-D" % getattr(attn_mask, "ndim", 0))
        return True
    if query.ndim == 2:
        _check(key.ndim == 2 and value.ndim == 2, "for unbatched (2-D) query, expected key and value to be "
               "2-D but found %d-D and %d-D" % (key.ndim, value.ndim))
        _check(key_padding_mask is None or key_padding_mask.ndim == 1, "for unbatched (2-D) query, expected "
               "key_padding_mask to be None or 1-D but found %d-D" % getattr(key_padding_mask, "ndim", 0))
        if attn_mask is not None:
            _check(attn_mask.ndim in (2, 3), "for unbatched (2-D) query, expected attn_mask to be None, 2-D "
                   "or 3-D but found %d-D" % attn_mask.ndim)
            want = (num_heads, query.shape[0], key.shape[0])
            _check(attn_mask.ndim == 2 or tuple(attn_mask.shape) == want,
                   "expected attn_mask shape %s but got %s" % (want, tuple(attn_mask.shape)))
        return False
    raise AssertionError("multi_head_attention_forward: query should be unbatched 2-D or batched 3-D but "
                         "received a %d-D query" % query.ndim)


def _dtype_check(inputs, weights):
    """query, key and value must have their projection weight's dtype, as torch's linear
    demands (F.linear here would promote instead: an int64 or f64 query into an f32 module
    would run); under autocast an f32 or half input is cast, as torch's (f64 never is)."""
    from ..._lib import C
    autocast = C.ff_autocast_get() != _dtype.float32.code
    for (name, x), (wname, w) in zip(inputs, weights):
        if w is None or x.dtype == w.dtype or (autocast and x.dtype.is_floating_point and x.dtype != _dtype.float64):
            continue
        raise RuntimeError("multi_head_attention_forward: mat1 and mat2 must have the same dtype: %s is %s but %s is "
                           "%s" % (name, x.dtype.name, wname, w.dtype.name))


def _linear2d(x, w, b):
    """F.linear over [T, N, E] as one [T*N, E] GEMM: matmul's backward would otherwise
    form the weight's gradient per leading index ([T, E_in, E_out]) before summing it."""
    from .. import functional as F
    return F.linear(x.reshape(-1, x.shape[-1]), w, b).reshape(x.shape[0], x.shape[1], w.shape[0])


def _in_projection(query, key, value, w, b, wq, wk, wv):
    """q, k, v = the three input projections; one GEMM for self-attention, as PyTorch."""
    if w is not None and query is key and key is value:
        return _linear2d(query, w, b).chunk(3, -1)
    if w is not None:
        wq, wk, wv = w.chunk(3)
    bq, bk, bv = (None, None, None) if b is None else b.chunk(3)
    return _linear2d(query, wq, bq), _linear2d(key, wk, bk), _linear2d(value, wv, bv)


def _additive(mask, dtype):
    """A bool mask (true = masked) as 0 / -inf of dtype; a float mask in dtype."""
    if mask is None or mask.dtype != _dtype.bool_:
        return mask if mask is None or mask.dtype == dtype else mask.to(dtype)
    return zeros(*mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, float("-inf"))


def _pad_key(mask):
    """One more key column (bias_k or the zero key), never masked."""
    if mask is None:
        return None
    return cat([mask, zeros(*mask.shape[:-1], 1, dtype=mask.dtype, device=mask.device)], -1)


def _heads(x, n, h, dh):
    """[T, N, H*Dh] -> [N, H, T, Dh] (PyTorch's [N*H, T, Dh] seen 4-D)."""
    return x.reshape(x.shape[0], n, h, dh).permute(1, 2, 0, 3)


def _static(x, n, h, dh, name):
    _check(tuple(x.shape[::2]) == (n * h, dh), "expecting %s of shape [%d, S, %d], but got %s"
           % (name, n * h, dh, tuple(x.shape)))
    return x.reshape(n, h, x.shape[1], dh)


def _attn_mask4(attn_mask, n, h, tgt_len, src_len):
    """attn_mask checked and seen as [1, 1, L, S] or [N, H, L, S]."""
    if attn_mask.dtype == _dtype.uint8:
        warnings.warn("Byte tensor for attn_mask in nn.MultiheadAttention is deprecated. Use bool tensor instead.")
        attn_mask = attn_mask.to(_dtype.bool_)
    _check(attn_mask.dtype.is_floating_point or attn_mask.dtype == _dtype.bool_,
           "only float, byte, and bool types are supported for attn_mask, not %s" % attn_mask.dtype)
    want = (tgt_len, src_len) if attn_mask.ndim == 2 else (n * h, tgt_len, src_len)
    if tuple(attn_mask.shape) != want:
        raise RuntimeError("multi_head_attention_forward: the shape of the %d-D attn_mask is %s, but should be "
                           "%s" % (attn_mask.ndim, tuple(attn_mask.shape), want))
    return attn_mask.reshape(1 if attn_mask.ndim == 2 else n, 1 if attn_mask.ndim == 2 else h, tgt_len, src_len)


def _causal(tgt_len, src_len, dtype, device):
    """PyTorch's is_causal as an additive mask: -inf where key j > query i."""
    from ..._factories import full
    return full((tgt_len, src_len), float("-inf"), dtype=dtype, device=device).triu(1)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """PyTorch 1.13's F.multi_head_attention_forward -> (attn_output, attn_weights or None).
    is_causal (PyTorch 2's argument) adds the causal mask to any other mask."""
    from .. import functional as F
    is_batched = _shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    inputs = (("query", query), ("key", key), ("value", value))
    if use_separate_proj_weight:
        _dtype_check(inputs, (("q_proj_weight", q_proj_weight), ("k_proj_weight", k_proj_weight),
                              ("v_proj_weight", v_proj_weight)))
    else:
        _dtype_check(inputs, (("in_proj_weight", in_proj_weight),) * 3)
    _check(key_padding_mask is None or key_padding_mask.dtype == _dtype.bool_
           or key_padding_mask.dtype.is_floating_point, "only bool and floating types of key_padding_mask are "
           "supported, not %s" % getattr(key_padding_mask, "dtype", None))
    _check(embed_dim == embed_dim_to_check, "was expecting embedding dimension of %d, but got %d"
           % (embed_dim_to_check, embed_dim))
    head_dim = embed_dim // num_heads
    _check(head_dim * num_heads == embed_dim, "embed_dim %d not divisible by num_heads %d" % (embed_dim, num_heads))
    if use_separate_proj_weight:
        _check(tuple(key.shape[:2]) == tuple(value.shape[:2]), "key's sequence and batch dims %s do not match "
               "value's %s" % (tuple(key.shape[:2]), tuple(value.shape[:2])))
        _check(all(w is not None for w in (q_proj_weight, k_proj_weight, v_proj_weight)),
               "use_separate_proj_weight is True but q_proj_weight, k_proj_weight or v_proj_weight is None")
        q, k, v = _in_projection(query, key, value, None, in_proj_bias, q_proj_weight, k_proj_weight, v_proj_weight)
    else:
        _check(tuple(key.shape) == tuple(value.shape), "key shape %s does not match value shape %s"
               % (tuple(key.shape), tuple(value.shape)))
        _check(in_proj_weight is not None, "use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection(query, key, value, in_proj_weight, in_proj_bias, None, None, None)
    src_len = key.shape[0]
    if attn_mask is not None:
        attn_mask = _attn_mask4(attn_mask, bsz, num_heads, tgt_len, src_len)
    if bias_k is not None and bias_v is not None:
        _check(static_k is None and static_v is None, "bias cannot be added to static key or value")
        k = cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = cat([v, bias_v.expand(1, bsz, embed_dim)])
        attn_mask, key_padding_mask = _pad_key(attn_mask), _pad_key(key_padding_mask)
    else:
        _check(bias_k is None and bias_v is None, "bias_k and bias_v must both be given or both be None")
    q = _heads(q, bsz, num_heads, head_dim)
    k = _heads(k, bsz, num_heads, head_dim) if static_k is None else _static(static_k, bsz, num_heads, head_dim,
                                                                            "static_k")
    v = _heads(v, bsz, num_heads, head_dim) if static_v is None else _static(static_v, bsz, num_heads, head_dim,
                                                                            "static_v")
    if add_zero_attn:
        k = cat([k, zeros(bsz, num_heads, 1, head_dim, dtype=k.dtype, device=k.device)], 2)
        v = cat([v, zeros(bsz, num_heads, 1, head_dim, dtype=v.dtype, device=v.device)], 2)
        attn_mask, key_padding_mask = _pad_key(attn_mask), _pad_key(key_padding_mask)
    src_len = k.shape[2]
    mask = _additive(attn_mask, q.dtype)
    if key_padding_mask is not None:
        _check(tuple(key_padding_mask.shape) == (bsz, src_len), "expecting key_padding_mask shape of %s, but got "
               "%s" % ((bsz, src_len), tuple(key_padding_mask.shape)))
        kpm = _additive(key_padding_mask, q.dtype).reshape(bsz, 1, 1, src_len)
        mask = kpm if mask is None else mask + kpm
    if not training:
        dropout_p = 0.0
    if need_weights or (is_causal and mask is not None):
        causal = _causal(tgt_len, src_len, q.dtype, q.device) if is_causal else None
        mask = causal if mask is None else (mask if causal is None else mask + causal)
        is_causal = False
    if need_weights:
        # PyTorch's order: scale q first, then q k^T (+ mask)
        scores = (q / math.sqrt(head_dim)).matmul(k.transpose(-2, -1))
        weights = F.softmax(scores if mask is None else scores + mask, -1)
        if dropout_p > 0.0:
            weights = F.dropout(weights, p=dropout_p)
        o = weights.matmul(v)
    else:
        if mask is not None:  # a stride-0 view over the queries: the op's entries take [B, H, Tq, Tk] views
            mask = mask.expand(mask.shape[0], mask.shape[1], tgt_len, src_len)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=is_causal)
        weights = None
    o = F.linear(o.permute(2, 0, 1, 3).reshape(tgt_len * bsz, embed_dim), out_proj_weight, out_proj_bias)
    o = o.reshape(tgt_len, bsz, o.shape[1])
    if weights is not None and average_attn_weights:
        weights = weights.sum(1) / num_heads
    if not is_batched:
        o = o.squeeze(1)
        weights = None if weights is None else weights.squeeze(0)
    return o, weights
