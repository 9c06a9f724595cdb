"""nll_loss and cross_entropy with torch 1.13's options: weight, ignore_index, reduction,
label_smoothing, K-dim inputs [N, C, d1, ...] and class-probability targets. The plain case
(mean over [N, C] logits with class indices, nothing ignored) stays on the fused C op."""
from ..._lib import C
from ..._tensor import as_tensor, where, wrap
from ... import _dtype

__all__ = ["nll_loss", "cross_entropy"]


def _legacy_reduction(size_average, reduce, reduction):
    """torch's size_average/reduce (deprecated) folded into reduction, as torch does."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _check_reduction(fn, reduction):
    if reduction not in ("mean", "sum", "none"):
        raise ValueError("%s: %r is not a valid value for reduction (mean, sum, none)" % (fn, reduction))


def _not_differentiable(fn, arg, t):
    """torch refuses, while grad mode is on, an argument its kernel has no gradient for
    (a loss weight, soft_margin_loss's target) that requires grad: silently giving that
    argument no gradient would leave it untrained without a word."""
    from ..._grad_mode import is_grad_enabled
    if t is not None and getattr(t, "requires_grad", False) and is_grad_enabled():
        raise RuntimeError("The function '%s' is not differentiable with respect to argument '%s'. "
                           "This input cannot have requires_grad True." % (fn, arg))


def _class_dim(input):
    return 1 if input.ndim >= 2 else 0


def _check_shapes(fn, input, target):
    cd = _class_dim(input)
    want = tuple(input.shape[:cd]) + tuple(input.shape[cd + 1:])
    if tuple(target.shape) != want:
        if input.ndim >= 2 and target.ndim >= 1 and input.shape[0] != target.shape[0]:
            raise ValueError("%s: Expected input batch_size (%d) to match target batch_size (%d)."
                             % (fn, input.shape[0], target.shape[0]))
        raise RuntimeError("%s: input of shape %s needs a target of shape %s, got %s"
                           % (fn, tuple(input.shape), want, tuple(target.shape)))


def _picked_weights(weight, target, valid, n_classes):
    """weight[target] where valid, 0 where ignored (1 for every valid entry without weight)."""
    safe = where(valid, target, target * 0)
    if weight is None:
        return valid.to(_dtype.float32), safe
    w = as_tensor(weight)
    if w.ndim != 1 or w.shape[0] != n_classes:
        raise RuntimeError("weight tensor should be defined either for all %d classes or no classes but got "
                           "weight tensor of shape: %s" % (n_classes, list(w.shape)))
    return w.index_select(0, safe.reshape(-1)).reshape(safe.shape) * valid.to(w.dtype), safe


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """-weight[t] * input[.., t, ..] per element (0 where t == ignore_index); 'mean' divides
    by the summed weights of the targets that count, as torch."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction("nll_loss", reduction)
    _not_differentiable("nll_loss", "weight", weight)
    target = as_tensor(target)
    if target.dtype.is_floating_point:  # class indices: truncating 1.7 to 1 would pick a class silently
        raise TypeError("nll_loss: target must hold integer class indices, got %s" % target.dtype.name)
    target = target.to(_dtype.int64)
    _check_shapes("nll_loss", input, target)
    cd = _class_dim(input)
    n_classes = input.shape[cd]
    valid = target != ignore_index
    if target.numel():
        bad = (valid & ((target < 0) | (target >= n_classes))).any().item()
        if bad:
            raise IndexError("nll_loss: a target is out of bounds: classes are 0..%d (ignore_index %d)"
                             % (n_classes - 1, ignore_index))
    w, safe = _picked_weights(weight, target, valid, n_classes)
    w = w.to(input.dtype)
    x = input.movedim(cd, -1) if cd else input
    picked = x.gather(-1, safe.unsqueeze(-1)).squeeze(-1)
    loss = -picked * w
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return _weighted_mean(loss.sum(), w.sum())


def _weighted_mean(total, weight_sum):
    """total / weight_sum; when every target is ignored that is 0 / 0 = nan, as torch, with a
    zero gradient (torch's) rather than the inf * 0 = nan that the plain division gives."""
    empty = weight_sum == 0
    safe = where(empty, weight_sum * 0 + 1, weight_sum)
    return total / safe + where(empty, safe * float("nan"), safe * 0)


def _fused(input, target, weight, ignore_index, reduction, label_smoothing):
    """The C op for the plain case, or None: it refuses a target outside 0..C-1 (an ignored
    one, or a bad one the composed path then names), so nothing is read to the host first
    (a compiled training step stays free of host reads)."""
    if weight is not None or label_smoothing or reduction != "mean" or input.ndim not in (1, 2):
        return None
    if target.dtype.is_floating_point or target.ndim != input.ndim - 1 or not target.numel():
        return None
    if 0 <= ignore_index < input.shape[-1]:  # an ignored class the C op would count
        return None
    ptr = C.ff_cross_entropy(input._ptr, target._ptr)
    return wrap(ptr) if ptr else None


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction("cross_entropy", reduction)
    _not_differentiable("cross_entropy", "weight", weight)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError("cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: %g" % label_smoothing)
    target = as_tensor(target)
    fused = _fused(input, target, weight, ignore_index, reduction, label_smoothing)
    if fused is not None:
        return fused
    cd = _class_dim(input)
    n_classes = input.shape[cd]
    logp = input.log_softmax(cd)
    wb = None
    if weight is not None:
        wb = as_tensor(weight).to(input.dtype)
        wb = wb.reshape((n_classes,) + (1,) * (input.ndim - cd - 1))
    if target.dtype.is_floating_point:  # class probabilities, same shape as input
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError("cross_entropy: probability targets must have the input's shape %s, got %s"
                               % (tuple(input.shape), tuple(target.shape)))
        t = target.to(input.dtype)
        if label_smoothing:
            t = t * (1 - label_smoothing) + label_smoothing / n_classes
        prod = logp * t if wb is None else logp * t * wb
        loss = -prod.sum(cd)
        if reduction == "none":
            return loss
        if reduction == "sum":
            return loss.sum()
        return loss.sum() / (input.numel() // n_classes if n_classes else 0)
    nll = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if not label_smoothing:
        return nll
    target = target.to(_dtype.int64)
    valid = target != ignore_index
    smooth = -(logp if wb is None else logp * wb).sum(cd)
    smooth = where(valid, smooth, smooth * 0.0)
    if reduction == "mean":
        w, _ = _picked_weights(weight, target, valid, n_classes)
        smooth = _weighted_mean(smooth.sum(), w.to(input.dtype).sum())
    elif reduction == "sum":
        smooth = smooth.sum()
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / n_classes)
