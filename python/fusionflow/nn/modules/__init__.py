"""fusionflow.nn.modules: the module classes, one family per file (as torch.nn.modules)."""
from .module import Module
from .linear import Linear, Identity
from .container import Sequential, ModuleList
from .activation import ReLU, Tanh, Sigmoid, SiLU, Softplus, GELU, Softmax, LogSoftmax
from .flatten import Flatten
from .dropout import Dropout
from .normalization import LayerNorm
from .conv import Conv2d
from .pooling import MaxPool2d, AvgPool2d
from .batchnorm import BatchNorm1d, BatchNorm2d
from .sparse import Embedding
from .loss import MSELoss, L1Loss, CrossEntropyLoss, NLLLoss

__all__ = ["Module", "Linear", "Identity", "Sequential", "ModuleList", "ReLU", "Tanh", "Sigmoid", "SiLU",
           "Softplus", "GELU", "Softmax", "LogSoftmax", "Flatten", "Dropout", "LayerNorm", "Conv2d", "MaxPool2d",
           "AvgPool2d", "BatchNorm1d", "BatchNorm2d", "Embedding", "MSELoss", "L1Loss", "CrossEntropyLoss",
           "NLLLoss"]
from .pooling import (MaxPool1d, AvgPool1d, MaxPool3d, AvgPool3d, AdaptiveAvgPool1d, AdaptiveAvgPool2d,  # noqa: E402
                      AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AdaptiveMaxPool3d, LPPool1d, LPPool2d,
                      MaxUnpool1d, MaxUnpool2d, MaxUnpool3d, Unfold, Fold)
__all__ += ["MaxPool1d", "AvgPool1d", "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
            "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d",
            "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "Unfold", "Fold"]
