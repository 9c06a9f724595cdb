"""Batch normalization."""
from ..._tensor import no_grad, tensor, zeros, ones
from ... import _dtype
from .. import functional as F
from ..parameter import Parameter
from .module import Module


class _BatchNorm(Module):
    """PyTorch's BatchNorm: affine weight (ones) and bias (zeros), running_mean/running_var
    buffers updated in training with the unbiased batch variance, used in eval."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 dtype=_dtype.float32):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.track_running_stats = track_running_stats
        self.weight = Parameter(ones(num_features, dtype=dtype)) if affine else None
        self.bias = Parameter(zeros(num_features, dtype=dtype)) if affine else None
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0))
        else:
            self.running_mean = self.running_var = None

    def _check(self, x):
        pass

    def forward(self, x):
        self._check(x)
        use_batch = self.training or not self.track_running_stats
        if self.training and self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.add_(1)
        return F.batch_norm(x, self.running_mean if self.track_running_stats else None,
                            self.running_var if self.track_running_stats else None, self.weight, self.bias,
                            use_batch, self.momentum, self.eps)

    def extra_repr(self):
        return "%d, eps=%g, momentum=%g" % (self.num_features, self.eps, self.momentum)


class BatchNorm1d(_BatchNorm):
    def _check(self, x):
        if x.ndim not in (2, 3):
            raise ValueError("BatchNorm1d: expected a 2-D or 3-D input, got %d-D" % x.ndim)


class BatchNorm2d(_BatchNorm):
    def _check(self, x):
        if x.ndim != 4:
            raise ValueError("BatchNorm2d: expected a 4-D input [N, C, H, W], got %d-D" % x.ndim)
