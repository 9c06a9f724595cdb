"""The building blocks torchvision.ops.misc gives its models: conv-norm-activation stacks and
the MLP. They are Sequentials, so their children are numbered as torchvision's and checkpoint
keys (features.0.0.weight, mlp.3.bias) line up."""
from ... import nn

__all__ = ["Conv2dNormActivation", "MLP", "FrozenBatchNorm2d"]


class Conv2dNormActivation(nn.Sequential):
    """Conv2d, then norm_layer (if any), then activation_layer (if any); "same" padding for odd
    kernels by default, and a conv bias only when there is no norm to absorb it."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None, groups=1,
                 norm_layer=nn.BatchNorm2d, activation_layer=nn.ReLU, dilation=1, inplace=True, bias=None):
        if padding is None:
            padding = (kernel_size - 1) // 2 * dilation if isinstance(kernel_size, int) else \
                tuple((k - 1) // 2 * d for k, d in
                      zip(kernel_size, dilation if not isinstance(dilation, int) else [dilation] * len(kernel_size)))
        if bias is None:
            bias = norm_layer is None
        layers = [nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding, dilation=dilation, groups=groups,
                            bias=bias)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer(**({} if inplace is None else {"inplace": inplace})))
        super().__init__(*layers)
        self.out_channels = out_channels


class MLP(nn.Sequential):
    """Linear (norm) activation dropout per hidden width; the last Linear is followed by
    dropout only."""

    def __init__(self, in_channels, hidden_channels, norm_layer=None, activation_layer=nn.ReLU, inplace=None,
                 bias=True, dropout=0.0):
        params = {} if inplace is None else {"inplace": inplace}
        layers, in_dim = [], in_channels
        for hidden_dim in hidden_channels[:-1]:
            layers.append(nn.Linear(in_dim, hidden_dim, bias=bias))
            if norm_layer is not None:
                layers.append(norm_layer(hidden_dim))
            layers += [activation_layer(**params), nn.Dropout(dropout, **params)]
            in_dim = hidden_dim
        layers += [nn.Linear(in_dim, hidden_channels[-1], bias=bias), nn.Dropout(dropout, **params)]
        super().__init__(*layers)


class FrozenBatchNorm2d(nn.Module):
    """BatchNorm2d with fixed statistics and affine parameters, all buffers (detection backbones)."""

    def __init__(self, num_features, eps=1e-5):
        super().__init__()
        from ... import ones, zeros
        self.eps = eps
        self.register_buffer("weight", ones(num_features))
        self.register_buffer("bias", zeros(num_features))
        self.register_buffer("running_mean", zeros(num_features))
        self.register_buffer("running_var", ones(num_features))

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        state_dict.pop(prefix + "num_batches_tracked", None)  # checkpoints of a BatchNorm2d carry it
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def forward(self, x):
        scale = self.weight * (self.running_var + self.eps).rsqrt()
        shift = self.bias - self.running_mean * scale
        return x * scale.reshape(1, -1, 1, 1) + shift.reshape(1, -1, 1, 1)

    def __repr__(self):
        return "%s(%d, eps=%s)" % (self.__class__.__name__, self.weight.shape[0], self.eps)
