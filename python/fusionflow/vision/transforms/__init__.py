"""fusionflow.vision.transforms: torchvision 0.14's v1 transforms (and the autoaugment
policies), on PIL images and fusionflow tensors. `transforms.functional` holds the functions
the classes are built on."""
from .transforms import *  # noqa: F401,F403
from .autoaugment import *  # noqa: F401,F403
from . import functional  # noqa: F401
