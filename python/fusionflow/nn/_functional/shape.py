"""Shape-moving functions: pad's non-constant modes, pixel (un)shuffle, channel shuffle,
bilinear, the upsample aliases, gumbel_softmax."""

from ..._tensor import as_tensor, rand
from ..._dtype import int64

__all__ = ["pad_index", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle",
           "bilinear", "upsample_nearest", "upsample_bilinear", "gumbel_softmax"]


def _pad_source(i, n, mode):
    if mode == "reflect":
        return -i if i < 0 else (2 * (n - 1) - i if i >= n else i)
    if mode == "replicate":
        return min(max(i, 0), n - 1)
    return i % n  # circular


def pad_index(input, pad, mode):
    """F.pad's reflect / replicate / circular modes: each padded dim is one index_select
    (differentiable: the gradient of a repeated source element is summed, as torch's)."""
    nd = len(pad) // 2
    if not 1 <= nd <= 3 or input.ndim < nd + 1:
        raise NotImplementedError("pad: mode %r pads the last 1, 2 or 3 dims of a 2-D to 5-D input; got %d pads "
                                  "for a %d-D input" % (mode, len(pad), input.ndim))
    # torch 1.13 lets a padded dim become empty, except under 1-D reflect / replicate padding
    least = 1 if nd == 1 and mode != "circular" else 0
    x = input
    for k in range(nd):
        d = x.ndim - 1 - k
        left, right = int(pad[2 * k]), int(pad[2 * k + 1])
        n = x.shape[d]
        if mode == "reflect" and (left >= n or right >= n):
            raise RuntimeError("Argument #4: Padding size should be less than the corresponding input dimension, "
                               "but got: padding (%d, %d) at dimension %d of input %s"
                               % (left, right, d, tuple(input.shape)))
        if mode == "circular" and (left > n or right > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if n + left + right < least:
            raise RuntimeError("pad: mode %r with padding (%d, %d) gives dim %d of input %s size %d, expected >= %d"
                               % (mode, left, right, d, tuple(input.shape), n + left + right, least))
        src = [_pad_source(i, n, mode) for i in range(-left, n + right)]
        # int64 given: an empty list (a 0-size result, which torch allows) would default to float
        x = x.index_select(d, as_tensor(src, dtype=int64).to(x.device))
    return x


def pixel_shuffle(input, upscale_factor):
    r = int(upscale_factor)
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           "upscale_factor, but input.size(-3)=%d is not divisible by %d" % (c, r * r))
    oc = c // (r * r)
    n = len(lead)
    x = input.reshape(*lead, oc, r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, oc, h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    r = int(downscale_factor)
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise RuntimeError("pixel_unshuffle expects height and width to be divisible by downscale_factor, got %s"
                           % (tuple(input.shape),))
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input, groups):
    if input.ndim <= 2:  # torch: channels and at least one more dim after the batch
        raise RuntimeError("channel_shuffle expects input with > 2 dims, but got input with sizes %s"
                           % (list(input.shape),))
    n, c = input.shape[0], input.shape[1]
    if groups <= 0 or c % groups:
        raise RuntimeError("Number of channels must be divisible by groups. Got %d channels and %d groups."
                           % (c, groups))
    rest = tuple(input.shape[2:])
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


native_channel_shuffle = channel_shuffle


def bilinear(input1, input2, weight, bias=None):
    """y[.., o] = x1[.., i] W[o, i, j] x2[.., j] + b[o]."""
    o, i, j = weight.shape
    lead = tuple(input1.shape[:-1])
    x1 = input1.reshape(-1, i)
    x2 = input2.reshape(-1, j)
    t = (x1 @ weight.permute(1, 0, 2).reshape(i, o * j)).reshape(-1, o, j)
    y = (t * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        y = y + bias
    return y.reshape(*lead, o)


def upsample_nearest(input, size=None, scale_factor=None):
    from ..functional import interpolate
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    from ..functional import interpolate
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + g) / tau), g ~ Gumbel(0, 1) from the global generator; hard gives
    the one-hot of the argmax with the soft sample's gradient (straight-through)."""
    u = rand(*logits.shape, dtype=logits.dtype, device=logits.device)
    g = -(-(u.clamp(min=1e-20)).log()).clamp(min=1e-20).log()
    y = ((logits + g) / tau).softmax(dim)
    if not hard:
        return y
    idx = y.argmax(dim, keepdim=True)
    hard_y = (y * 0).scatter(dim, idx, 1.0)
    return hard_y - y.detach() + y


