"""Batch normalization: BatchNorm1d/2d/3d and SyncBatchNorm (one process: BatchNorm over any
number of dims), torch 1.13's buffers, momentum (None = cumulative average) and repr."""
from ..._tensor import no_grad, tensor, zeros, ones
from ... import _dtype
from .. import functional as F
from ..parameter import Parameter
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"]


class _NormBase(Module):
    """Affine weight (ones) and bias (zeros); running_mean / running_var /
    num_batches_tracked buffers when tracking (None buffers otherwise, as torch)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None):
        super().__init__()
        dtype = dtype or _dtype.float32
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(ones(num_features, dtype=dtype, device=device))
            self.bias = Parameter(zeros(num_features, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", tensor(0, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self):
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1.0)
                self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            with no_grad():
                self.weight.fill_(1.0)
                self.bias.zero_()

    _version = 2  # torch's: version 2 state_dicts have num_batches_tracked

    def _check_input_dim(self, input):
        pass

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
        """A checkpoint from before num_batches_tracked existed (no version 2 in its metadata)
        loads without it, strict or not, and the count starts again from 0, as torch."""
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing, unexpected, errors)
        key = prefix + "num_batches_tracked"
        if self.num_batches_tracked is None or key in state_dict:
            return
        version = (local_metadata or {}).get("version")
        if version is None or version < 2:
            if key in missing:
                missing.remove(key)
            with no_grad():
                self.num_batches_tracked.zero_()

    def extra_repr(self):
        return "{}, eps={}, momentum={}, affine={}, track_running_stats={}".format(
            self.num_features, self.eps, self.momentum, self.affine, self.track_running_stats)


class _BatchNorm(_NormBase):
    def forward(self, x):
        self._check_input_dim(x)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or self.running_mean is None
        track = not self.training or self.track_running_stats
        if x.ndim > 4:  # per-channel statistics are the same over the spatial dims folded into one
            folded = 1
            for d in x.shape[2:-1]:
                folded *= d  # explicit: -1 cannot be inferred for an empty input
            y = self._apply_bn(x.reshape(x.shape[0], x.shape[1], folded, x.shape[-1]), use_batch, track, factor)
            return y.reshape(x.shape)
        return self._apply_bn(x, use_batch, track, factor)

    def _apply_bn(self, x, use_batch, track, factor):
        return F.batch_norm(x, self.running_mean if track else None, self.running_var if track else None,
                            self.weight, self.bias, use_batch, factor, self.eps)


def _dims_check(name, dims):
    def check(self, x):
        if x.ndim not in dims:
            raise ValueError("%s: expected %s input (got %d-D input)"
                             % (name, " or ".join("%d-D" % d for d in dims), x.ndim))
    return check


class BatchNorm1d(_BatchNorm):
    _check_input_dim = _dims_check("BatchNorm1d", (2, 3))


class BatchNorm2d(_BatchNorm):
    _check_input_dim = _dims_check("BatchNorm2d", (4,))


class BatchNorm3d(_BatchNorm):
    _check_input_dim = _dims_check("BatchNorm3d", (5,))


class SyncBatchNorm(_BatchNorm):
    """torch's SyncBatchNorm; in one process it is BatchNorm over [N, C, ...] (statistics are
    not reduced across ranks: use it under DistributedDataParallel only as BatchNorm)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, x):
        if x.ndim < 2:
            raise ValueError("expected at least 2D input (got %dD input)" % x.ndim)

    def _apply_bn(self, x, use_batch, track, factor):
        if x.ndim == 2 or x.ndim == 4:
            return super()._apply_bn(x, use_batch, track, factor)
        plane = 1
        for d in x.shape[2:]:
            plane *= d  # explicit: -1 cannot be inferred for an empty input
        y = super()._apply_bn(x.reshape(x.shape[0], x.shape[1], plane, 1), use_batch, track, factor)
        return y.reshape(x.shape)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        return module
