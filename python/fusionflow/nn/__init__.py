"""fusionflow.nn: modules in Python over the C op library (PyTorch-shaped API).

Layers keep PyTorch's parameter layout and names (Linear.weight is [out, in]), so a
state dict saved by PyTorch's safetensors loads here and the other way round. The
classes live in nn/modules/, one family per file, as torch.nn.modules; this package
re-exports them under torch.nn's names.
"""
from . import functional
from . import functional as F  # noqa: F401
from .parameter import Parameter
from . import modules
from .modules import *  # noqa: F401,F403
from .modules.activation import _act  # noqa: F401
from .modules.batchnorm import _BatchNorm  # noqa: F401
from .modules.loss import _Loss  # noqa: F401

__all__ = ["Parameter", "Module", "Linear", "Sequential", "ModuleList", "ReLU", "Tanh", "Sigmoid", "GELU", "SiLU",
           "Softplus", "Softmax", "LogSoftmax", "Identity", "Flatten", "Dropout", "LayerNorm", "Embedding",
           "MSELoss", "CrossEntropyLoss", "L1Loss", "NLLLoss", "functional", "init"]

from . import init  # noqa: E402
from . import utils  # noqa: E402,F401  (torch.nn.utils)
from . import parallel  # noqa: E402
from .parallel import DataParallel  # noqa: E402,F401
