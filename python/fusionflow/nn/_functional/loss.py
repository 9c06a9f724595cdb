"""The regression, binary, margin and embedding losses of torch.nn.functional, composed with
torch 1.13's formulas (the log-sum-exp forms where torch uses them, so large logits stay
finite)."""
import math

from ..._tensor import as_tensor, where
from .classification import _legacy_reduction, _check_reduction, _not_differentiable

__all__ = ["binary_cross_entropy_with_logits", "huber_loss", "poisson_nll_loss", "gaussian_nll_loss",
           "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss", "multilabel_soft_margin_loss",
           "multilabel_margin_loss", "multi_margin_loss", "cosine_embedding_loss", "triplet_margin_loss",
           "triplet_margin_with_distance_loss"]


def _reduce(loss, reduction, fn):
    _check_reduction(fn, reduction)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _softplus(x):
    """log(1 + exp(x)) without overflow: x + log1p(exp(-x)) above 0, log1p(exp(x)) below,
    each branch fed only its own side (no inf in the other's gradient; slope 1/2 at 0)."""
    pos = x > 0
    xp = where(pos, x, x * 0.0)
    xn = where(pos, x * 0.0, x)
    return where(pos, xp + (-xp).exp().log1p(), xn.exp().log1p())


def _same_size(fn, input, target):
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError("%s: Target size (%s) must be the same as input size (%s)"
                         % (fn, list(target.shape), list(input.shape)))


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _not_differentiable("binary_cross_entropy_with_logits", "weight", weight)
    _not_differentiable("binary_cross_entropy_with_logits", "pos_weight", pos_weight)
    t = as_tensor(target).to(input.dtype)
    _same_size("binary_cross_entropy_with_logits", input, t)
    sp = _softplus(-input)  # log(1 + exp(-x))
    if pos_weight is None:
        loss = (1 - t) * input + sp
    else:
        lw = (as_tensor(pos_weight) - 1) * t + 1
        loss = (1 - t) * input + lw * sp
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


def huber_loss(input, target, reduction="mean", delta=1.0):
    d = (input - target).abs()
    loss = where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    return _reduce(loss, reduction, "huber_loss")


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    t = as_tensor(target).to(input.dtype)
    loss = input.exp() - t * input if log_input else input - t * (input + eps).log()
    if full:  # Stirling's term where target > 1, as torch
        big = t > 1
        ts = where(big, t, t * 0 + 2)
        stirling = ts * ts.log() - ts + 0.5 * (2 * math.pi * ts).log()
        loss = loss + where(big, stirling, stirling * 0)
    return _reduce(loss, reduction, "poisson_nll_loss")


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    var = as_tensor(var).to(input.dtype)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ValueError("gaussian_nll_loss: var of shape %s does not fit input of shape %s"
                             % (tuple(var.shape), tuple(input.shape)))
    _check_reduction("gaussian_nll_loss", reduction)
    if var.numel() and (var < 0).any().item():
        raise ValueError("var has negative entry/entries")
    # torch clamps var under no_grad: the value is clamped, the gradient flows as if not
    var = var + (var.clamp(min=eps) - var).detach()
    loss = 0.5 * (var.log() + (input - target).square() / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction, "gaussian_nll_loss")


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = (-as_tensor(target) * (input1 - input2) + margin).relu()
    return _reduce(loss, reduction, "margin_ranking_loss")


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    t = as_tensor(target)
    m = (margin - input).relu()
    loss = where(t != 1, m, m * 0) + where(t != -1, input, input * 0)
    return _reduce(loss, reduction, "hinge_embedding_loss")


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _not_differentiable("soft_margin_loss", "target", target)
    loss = _softplus(-as_tensor(target).to(input.dtype) * input)
    return _reduce(loss, reduction, "soft_margin_loss")


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    t = as_tensor(target).to(input.dtype)
    loss = t * _softplus(-input) + (1 - t) * _softplus(input)
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(-1) / input.shape[-1]
    return _reduce(loss, reduction, "multilabel_soft_margin_loss")


def _target_counts(target, c):
    """multilabel_margin_loss's target rows (class ids, ended by the first -1) as [.., C]
    counts: torch sums over the listed ids, so an id listed twice counts twice on the target
    side (and is still one class on the non-target side). Read on the host, as torch's
    kernel reads them."""
    import numpy as np
    t = np.asarray(as_tensor(target).cpu().numpy(), dtype=np.int64).reshape(-1, c)
    mask = np.zeros(t.shape, np.float32)
    for r, row in enumerate(t):
        for v in row:
            if v < 0:
                break
            if v >= c:
                raise RuntimeError("multilabel_margin_loss: target %d is out of range for %d classes" % (v, c))
            mask[r, v] += 1.0
    return mask


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    c = input.shape[-1]
    x = input.reshape(-1, c)
    counts = _target_counts(target, c)
    m = as_tensor(counts).to(input.dtype).to(input.device)
    not_target = as_tensor((counts == 0).astype(counts.dtype)).to(input.dtype).to(input.device)
    # sum over listed target j and non-target i of max(0, 1 - (x_j - x_i)), over C
    pair = (1 - x.unsqueeze(2) + x.unsqueeze(1)).relu()
    loss = (pair * m.unsqueeze(2) * not_target.unsqueeze(1)).sum((1, 2)) / c
    loss = loss.reshape(input.shape[:-1])
    return _reduce(loss, reduction, "multilabel_margin_loss")


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    _not_differentiable("multi_margin_loss", "weight", weight)
    c = input.shape[-1]
    x = input.reshape(-1, c)
    t = as_tensor(target).reshape(-1, 1).long()
    xy = x.gather(1, t)
    z = (margin - xy + x).relu()
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * as_tensor(weight).to(input.dtype).index_select(0, t.reshape(-1)).unsqueeze(1)
    not_y = t != as_tensor(list(range(c)), device=t.device).reshape(1, c)
    loss = where(not_y, z, z * 0).sum(1) / c
    loss = loss.reshape(input.shape[:-1])
    return _reduce(loss, reduction, "multi_margin_loss")


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    eps = 1e-12  # torch's EPSILON in this loss
    d = input1.ndim - 1
    cos = (input1 * input2).sum(d) / ((input1.square().sum(d) + eps) * (input2.square().sum(d) + eps)).sqrt()
    t = as_tensor(target)
    loss = where(t == 1, 1 - cos, cos * 0) + where(t == -1, (cos - margin).relu(), cos * 0)
    return _reduce(loss, reduction, "cosine_embedding_loss")


def _pairwise(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    from .distance import pairwise_distance
    return pairwise_distance(x1, x2, p, eps, keepdim)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    d_ap = _pairwise(anchor, positive, p, eps)
    d_an = _pairwise(anchor, negative, p, eps)
    if swap:
        d_an = d_an.minimum(_pairwise(positive, negative, p, eps))
    return _reduce((margin + d_ap - d_an).relu(), reduction, "triplet_margin_loss")


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    if margin <= 0:
        raise ValueError("triplet_margin_with_distance_loss: expected margin to be greater than 0, got %g" % margin)
    dist = distance_function if distance_function is not None else _pairwise
    d_ap = dist(anchor, positive)
    d_an = dist(anchor, negative)
    if swap:
        d_an = d_an.minimum(dist(positive, negative))
    return _reduce((margin + d_ap - d_an).relu(), reduction, "triplet_margin_with_distance_loss")
