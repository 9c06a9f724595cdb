"""The v1 transform classes (torchvision.transforms.transforms), gathered from the files that
hold them by kind: _container (Compose, Random{Apply,Order,Choice}), _tensor_conv (conversions,
Normalize), _geometry (resize, crops, flips, rotation, affine, perspective, elastic), _color
(jitter, greyscale, blur, erasing, the Random* photometric ops). Each works on PIL images and
on fusionflow tensors [..., C, H, W]."""
from ._container import Compose, Lambda, RandomApply, RandomChoice, RandomOrder, RandomTransforms
from ._tensor_conv import ConvertImageDtype, LinearTransformation, Normalize, PILToTensor, ToPILImage, ToTensor
from ._geometry import (CenterCrop, ElasticTransform, FiveCrop, Pad, RandomAffine, RandomCrop, RandomHorizontalFlip,
                        RandomPerspective, RandomResizedCrop, RandomRotation, RandomVerticalFlip, Resize, TenCrop)
from ._color import (ColorJitter, GaussianBlur, Grayscale, RandomAdjustSharpness, RandomAutocontrast, RandomEqualize,
                     RandomErasing, RandomGrayscale, RandomInvert, RandomPosterize, RandomSolarize)
from ._setup import _check_sequence_input, _setup_angle, _setup_size  # noqa: F401  (torchvision's helpers)
from .functional import InterpolationMode

__all__ = ["Compose", "ToTensor", "PILToTensor", "ConvertImageDtype", "ToPILImage", "Normalize", "Resize",
           "CenterCrop", "Pad", "Lambda", "RandomApply", "RandomChoice", "RandomOrder", "RandomCrop",
           "RandomHorizontalFlip", "RandomVerticalFlip", "RandomResizedCrop", "FiveCrop", "TenCrop",
           "LinearTransformation", "ColorJitter", "RandomRotation", "RandomAffine", "Grayscale", "RandomGrayscale",
           "RandomPerspective", "RandomErasing", "GaussianBlur", "InterpolationMode", "RandomInvert",
           "RandomPosterize", "RandomSolarize", "RandomAdjustSharpness", "RandomAutocontrast", "RandomEqualize",
           "ElasticTransform"]
