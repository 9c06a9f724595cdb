"""LayerNorm, GroupNorm, InstanceNorm1d/2d/3d, LocalResponseNorm and CrossMapLRN2d."""
from ..._tensor import no_grad, zeros, ones
from ... import _dtype
from .. import functional as F
from ..parameter import Parameter
from .batchnorm import _NormBase
from .module import Module

__all__ = ["LayerNorm", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LocalResponseNorm",
           "CrossMapLRN2d"]


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        dtype = dtype or _dtype.float32
        if elementwise_affine:
            self.weight = Parameter(ones(*self.normalized_shape, dtype=dtype, device=device))
            self.bias = Parameter(zeros(*self.normalized_shape, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self):
        if self.elementwise_affine:
            with no_grad():
                self.weight.fill_(1.0)
                self.bias.zero_()

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return "{}, eps={}, elementwise_affine={}".format(self.normalized_shape, self.eps, self.elementwise_affine)


class GroupNorm(Module):
    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        dtype = dtype or _dtype.float32
        if affine:
            self.weight = Parameter(ones(num_channels, dtype=dtype, device=device))
            self.bias = Parameter(zeros(num_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return "{}, {}, eps={}, affine={}".format(self.num_groups, self.num_channels, self.eps, self.affine)


class _InstanceNorm(_NormBase):
    """torch's defaults: no affine, no running stats; an unbatched input ([C, ...]) works."""
    _dims = 1

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)

    def forward(self, input):
        d = self._dims
        if input.ndim not in (d + 1, d + 2):
            raise ValueError("expected %dD or %dD input (got %dD input)" % (d + 1, d + 2, input.ndim))
        unbatched = input.ndim == d + 1
        x = input.unsqueeze(0) if unbatched else input
        if x.shape[1] != self.num_features and self.affine:
            raise ValueError("expected input's size at dim=1 to match num_features (%d), but got: %d."
                             % (self.num_features, x.shape[1]))
        y = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            self.training or not self.track_running_stats, self.momentum if self.momentum is not None
                            else 0.1, self.eps)
        return y.squeeze(0) if unbatched else y


class InstanceNorm1d(_InstanceNorm):
    _dims = 1


class InstanceNorm2d(_InstanceNorm):
    _dims = 2


class InstanceNorm3d(_InstanceNorm):
    _dims = 3


class LocalResponseNorm(Module):
    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return "{}, alpha={}, beta={}, k={}".format(self.size, self.alpha, self.beta, self.k)


class CrossMapLRN2d(LocalResponseNorm):
    """torch's legacy cross-map LRN of a 4-D input. Its running-window sum never drops
    channel 0 (it subtracts only for c > pre_pad), so the window is not LocalResponseNorm's;
    the channel mixing is kept exactly as a 0/1 [C, C] matrix applied to x^2."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__(size, alpha, beta, k)

    def _window(self, c):
        import numpy as np
        pre = int((self.size - 1) / 2 + 1)
        m = np.zeros((c, c), np.float32)
        for i in range(c):
            hi = min(i + pre - 1, c - 1)
            lo = 0 if i <= pre else i - pre + 1
            m[i, lo:hi + 1] = 1.0
            m[i, 0] = 1.0  # channel 0 is never subtracted
        return m

    def forward(self, input):
        if input.ndim != 4:
            raise ValueError("CrossMapLRN2d: Expected input to be 4D, got %dD instead." % input.ndim)
        from ..._tensor import as_tensor
        n, c, h, w = input.shape
        m = as_tensor(self._window(c)).to(input.dtype).to(input.device)
        scale = (m @ (input * input).reshape(n, c, h * w)).reshape(n, c, h, w) * (self.alpha / self.size) + self.k
        return input * scale ** (-self.beta)


