"""Dropout variants: channel-wise (dropout1d/2d/3d), alpha dropout (keeps SELU's mean and
variance) and its channel-wise form. Masks come from the global generator (manual_seed)."""
from ..._tensor import rand

__all__ = ["dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]

_ALPHA = 1.7580993408473766  # SELU's -scale * alpha: where alpha dropout sends dropped units


def _check_p(fn, p):
    if not 0.0 <= p <= 1.0:
        raise ValueError("%s: dropout probability has to be between 0 and 1, but got %g" % (fn, p))


def _keep_mask(x, p, per_channel):
    """1 where kept, 0 where dropped; one draw per (sample, channel) when per_channel."""
    shape = tuple(x.shape[:2]) + (1,) * (x.ndim - 2) if per_channel else tuple(x.shape)
    return (rand(*shape, dtype=x.dtype, device=x.device) >= p).to(x.dtype)


def _warn_odd_rank(fn, ndim, dims):
    """torch 1.13 warns, and goes on, where dropout2d/3d get other than [C, *spatial] or
    [N, C, *spatial]; a 3-D input to dropout2d it takes as [N, C, L]."""
    import warnings
    if dims == 2 and ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "Use dropout1d for that, as a future release will read a 3D input as unbatched (C, H, W).")
    elif ndim not in (dims + 1, dims + 2):
        warnings.warn("%s: Received a %d-D input to %s, which is deprecated and will result in an error in a "
                      "future release. To retain the behavior and silence this warning, please use dropout "
                      "instead (%s expects %dD or %dD inputs)." % (fn, ndim, fn, fn, dims + 1, dims + 2))


def _is_batched(fn, ndim, dims):
    """Whether torch 1.13 reads dim 0 as the batch. dropout1d takes 2-D or 3-D only;
    dropout2d reads any input as batched [N, C, ...] (a 2-D one then drops single elements);
    dropout3d only a 5-D one, and gives any other a batch of 1 (its dim 0 is the channel)."""
    if dims == 1:
        if ndim not in (2, 3):
            raise RuntimeError("dropout1d: Expected 2D or 3D input, but received a %dD input" % ndim)
        return ndim == 3
    _warn_odd_rank(fn, ndim, dims)
    return dims == 2 or ndim == dims + 2


def _feature_dropout(fn, input, p, training, dims, inplace):
    _check_p(fn, p)
    batched = _is_batched(fn, input.ndim, dims)
    if not training or p == 0 or input.numel() == 0:
        return input
    x = input if batched else input.unsqueeze(0)
    if p == 1:
        y = x * 0  # no mask is drawn, so no rank is needed (torch)
    elif x.ndim < 2:
        raise RuntimeError("%s: Feature dropout requires at least 2 dimensions in the input, got shape %s"
                           % (fn, list(input.shape)))
    else:
        y = x * (_keep_mask(x, p, True) / (1 - p))
    y = y if batched else y.squeeze(0)
    if inplace:
        input.copy_(y)
        return input
    return y


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout("dropout1d", input, p, training, 1, inplace)


def dropout2d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout("dropout2d", input, p, training, 2, inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout("dropout3d", input, p, training, 3, inplace)


def _alpha(fn, input, p, training, per_channel, inplace):
    _check_p(fn, p)
    if not training or p == 0:
        return input
    if p == 1:
        y = input * 0
    else:
        keep = _keep_mask(input, p, per_channel)
        a = 1.0 / ((_ALPHA * _ALPHA * p + 1) * (1 - p)) ** 0.5
        y = input * (keep * a) + (keep - 1) * (_ALPHA * a) + _ALPHA * a * p
    if inplace:
        input.copy_(y)
        return input
    return y


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _alpha("alpha_dropout", input, p, training, False, inplace)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _alpha("feature_alpha_dropout", input, p, training, True, inplace)
