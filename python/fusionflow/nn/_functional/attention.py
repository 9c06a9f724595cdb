"""scaled_dot_product_attention: PyTorch 2's signature over the C op
ff_scaled_dot_product_attention (ops/attention.c): one node, flash-style on backends
with the attention entry (O(T) memory), the composition elsewhere and for dropout."""
import math
import random

from ..._lib import C
from ..._tensor import Tensor, wrap

__all__ = ["scaled_dot_product_attention"]


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    """softmax(query @ key^T * scale + mask) @ value over [..., L, E] / [..., S, E] /
    [..., S, Ev] with broadcast leading dims. attn_mask: bool (True: take part) or the
    query's dtype (added). is_causal masks key j > query i (the top-left triangle). A
    query whose every key is masked gives 0, as PyTorch 2.5 (1.13's composition gives
    NaN). dropout_p > 0 drops attention weights (seeded from Python's random)."""
    fn = "scaled_dot_product_attention"
    for name, t in (("query", query), ("key", key), ("value", value), ("attn_mask", attn_mask)):
        if t is not None and not isinstance(t, Tensor):
            raise TypeError("%s: %s must be a Tensor, got %s" % (fn, name, type(t).__name__))
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError("%s: dropout_p must be in [0, 1], got %g" % (fn, dropout_p))
    if scale is not None and not scale > 0:
        raise ValueError("%s: scale must be > 0, got %r" % (fn, scale))
    seed = random.getrandbits(63) if dropout_p > 0 else 0
    mask = attn_mask._ptr if attn_mask is not None else None
    return wrap(C.ff_scaled_dot_product_attention(query._ptr, key._ptr, value._ptr, mask, float(dropout_p),
                                                  bool(is_causal), math.nan if scale is None else float(scale),
                                                  seed))
