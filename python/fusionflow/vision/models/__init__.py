"""fusionflow.vision.models: torchvision.models' classification networks, built from
fusionflow.nn with torchvision's module names, so a torchvision state_dict loads strictly.

Pretrained weights (weights=..., or the deprecated pretrained=True) are never downloaded: they
are read from torch.hub's cache, $TORCH_HOME/hub/checkpoints (default ~/.cache/torch/hub/...)."""
import importlib as _importlib

from ._utils import get_model, get_model_builder, get_model_weights, get_weight, list_models
from ._weights import Weights, WeightsEnum
from .alexnet import *  # noqa: F401,F403
from .mobilenetv2 import *  # noqa: F401,F403
from .resnet import *  # noqa: F401,F403
from .squeezenet import *  # noqa: F401,F403
from .vgg import *  # noqa: F401,F403
from .vision_transformer import *  # noqa: F401,F403

__all__ = ["Weights", "WeightsEnum", "get_model", "get_model_builder", "get_model_weights", "get_weight",
           "list_models"] + [name for module in ("alexnet", "mobilenetv2", "resnet", "squeezenet", "vgg",
                                                 "vision_transformer")
                             for name in _importlib.import_module("." + module, __name__).__all__]
