"""fusionflow.nn.modules: the module classes, one family per file (as torch.nn.modules)."""
from .module import Module, RemovableHandle
from .linear import Identity, Linear, Bilinear
from .container import Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict
from .activation import *  # noqa: F401,F403
from .flatten import Flatten, Unflatten
from .dropout import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .pooling import (MaxPool1d, MaxPool2d, MaxPool3d, AvgPool1d, AvgPool2d, AvgPool3d, AdaptiveAvgPool1d,
                      AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AdaptiveMaxPool3d,
                      LPPool1d, LPPool2d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d, Unfold, Fold, FractionalMaxPool2d,
                      FractionalMaxPool3d)
from .batchnorm import *  # noqa: F401,F403
from .sparse import Embedding, EmbeddingBag
from .loss import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pixelshuffle import *  # noqa: F401,F403
from .upsampling import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .adaptive import AdaptiveLogSoftmaxWithLoss
from .multihead import MultiheadAttention
from .transformer import *  # noqa: F401,F403
from . import multihead, transformer  # noqa: F401
from .rnn import RNNBase, RNN, LSTM, GRU, RNNCellBase, RNNCell, LSTMCell, GRUCell
from . import activation, adaptive, batchnorm, container, distance, dropout, flatten, linear, loss, module, normalization, \
    padding, pixelshuffle, rnn, sparse, upsampling, utils  # noqa: F401

__all__ = ["Module", "Identity", "Linear", "Bilinear", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
           "ParameterDict", "Flatten", "Unflatten", "AdaptiveLogSoftmaxWithLoss", "Conv2d", "MaxPool2d", "AvgPool2d", "Embedding", "EmbeddingBag"]
for _m in (activation, dropout, normalization, batchnorm, loss, padding, pixelshuffle, upsampling, distance, rnn):
    __all__ += _m.__all__
del _m
__all__ += ["Conv1d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]
__all__ += ["MaxPool1d", "AvgPool1d", "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
            "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d",
            "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "Unfold", "Fold", "FractionalMaxPool2d", "FractionalMaxPool3d"]
__all__ += ["MultiheadAttention"] + transformer.__all__
