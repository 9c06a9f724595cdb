"""Distances and similarities: pairwise_distance, cosine_similarity, pdist, normalize."""
from ..._tensor import as_tensor

__all__ = ["pairwise_distance", "cosine_similarity", "pdist", "normalize"]


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last dim, as torch."""
    d = x1 - x2 + eps
    return d.norm(p, dim=-1 if d.ndim else None, keepdim=keepdim)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps)) along dim (torch 1.13 clamps
    each norm)."""
    n1 = x1.norm(2, dim=dim, keepdim=True).clamp(min=eps)
    n2 = x2.norm(2, dim=dim, keepdim=True).clamp(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pdist(input, p=2):
    """Distances between the rows of an [N, M] input, i < j, in row-major order."""
    if input.ndim != 2:
        raise RuntimeError("pdist only supports 2D tensors, got: %dD" % input.ndim)
    n = input.shape[0]
    ii = [i for i in range(n) for j in range(i + 1, n)]
    jj = [j for i in range(n) for j in range(i + 1, n)]
    if not ii:
        return input.new_zeros(0)
    d = input.index_select(0, as_tensor(ii, device=input.device)) - \
        input.index_select(0, as_tensor(jj, device=input.device))
    return d.norm(p, dim=1)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    if out is not None:
        raise NotImplementedError("normalize: out= is not offered")
    if input.ndim and input.shape[dim] == 0:  # nothing to scale; ff_norm has no p = inf over an empty dim
        return input * 1
    return input / input.norm(p, dim=dim, keepdim=True).clamp(min=eps).expand_as(input)
