"""instance_norm and local_response_norm, composed from layer_norm and sums."""
from ..._tensor import as_tensor, no_grad

__all__ = ["instance_norm", "local_response_norm"]


def affine_of_empty(input, weight=None, bias=None):
    """A normalization's result for an input with no elements: an empty tensor of the input's
    shape and dtype that still joins weight and bias to the graph (their gradients are zeros,
    as torch's). Batch statistics over nothing are not computed: no running stat changes."""
    shape = (1, input.shape[1]) + (1,) * (input.ndim - 2)
    y = input
    if weight is not None:
        y = y * as_tensor(weight).to(input.dtype).reshape(shape)
    if bias is not None:
        y = y + as_tensor(bias).to(input.dtype).reshape(shape)
    return y if y is not input else input * 1


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalizes each (sample, channel) over its spatial dims; with running stats, training
    folds the batch mean of the per-instance stats into them (unbiased variance), as torch."""
    from ..functional import layer_norm
    n, c = input.shape[0], input.shape[1]
    shape = (1, c) + (1,) * (input.ndim - 2)
    if use_input_stats:
        rest = 1
        for d in input.shape[2:]:
            rest *= d
        if rest == 0:  # torch: an empty plane has an empty result, not an error
            return affine_of_empty(input, weight, bias)
        x = input.reshape(n, c, rest)  # explicit: -1 is ambiguous for an empty batch
        if x.shape[-1] == 1:
            raise ValueError("Expected more than 1 spatial element when training, got input size %s"
                             % (list(input.shape),))
        y = layer_norm(x, (x.shape[-1],), None, None, eps).reshape(input.shape)
        if running_mean is not None or running_var is not None:
            with no_grad():
                xd = x.detach()
                if running_mean is not None:
                    running_mean.mul_(1 - momentum).add_(xd.mean(-1).mean(0).to(running_mean.dtype) * momentum)
                if running_var is not None:
                    running_var.mul_(1 - momentum).add_(xd.var(-1).mean(0).to(running_var.dtype) * momentum)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("Expected running_mean and running_var to be defined when use_input_stats is false")
        y = (input - running_mean.reshape(shape)) / (running_var.reshape(shape) + eps).sqrt()
    if weight is not None:
        y = y * as_tensor(weight).reshape(shape)
    if bias is not None:
        y = y + as_tensor(bias).reshape(shape)
    return y


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """input / (k + alpha * mean of x^2 over a window of `size` channels)^beta, the window
    zero-padded size // 2 before and (size - 1) // 2 after, as torch."""
    if input.ndim < 3:
        raise ValueError("Expected 3D or higher dimensionality input (got %d dimensions)" % input.ndim)
    if input.numel() == 0:
        return input
    from ..functional import pad
    c = input.shape[1]
    sq = input * input
    pads = [0, 0] * (input.ndim - 2) + [size // 2, (size - 1) // 2]
    padded = pad(sq, pads)
    acc = padded.narrow(1, 0, c)
    for o in range(1, size):
        acc = acc + padded.narrow(1, o, c)
    div = (acc * (alpha / size) + k) ** beta
    return input / div
