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


def _feature_dropout(fn, input, p, training, dims, inplace):
    _check_p(fn, p)
    if dims == 2 and input.ndim == 2:
        # torch 1.13 warns and drops each element of an [N, C] input (its mask is [N, C]);
        # programs written for it (pytorch/examples' mnist_rnn) rely on that
        import warnings
        warnings.warn("dropout2d: Received a 2-D input to dropout2d, which is deprecated and will result in an "
                      "error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead.")
        if not training or p == 0:
            return input
        y = input * (_keep_mask(input, p, True) / (1 - p)) if p < 1 else input * 0
        if inplace:
            input.copy_(y)
            return input
        return y
    if input.ndim not in (dims + 1, dims + 2):
        raise RuntimeError("%s: Expected %dD or %dD input, but received a %dD input"
                           % (fn, dims + 1, dims + 2, input.ndim))
    if not training or p == 0:
        return input
    batched = input.ndim == dims + 2
    x = input if batched else input.unsqueeze(0)
    y = x * (_keep_mask(x, p, True) / (1 - p)) if p < 1 else x * 0
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
