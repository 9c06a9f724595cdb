"""Pretrained weights, as torchvision.models' Weights/WeightsEnum, without the network.

A weights enum member carries the checkpoint URL, the eval preprocessing and the metadata, as
torchvision's. Loading it never downloads: the checkpoint is read from where torch.hub would
have cached it ($TORCH_HOME/hub/checkpoints/<file name of the URL>), so a machine that already
ran the torchvision program has the files, and one that did not gets told which file to fetch
and where to put it."""
import enum
import functools
import hashlib
import os
import re
from dataclasses import dataclass, fields
from typing import Any, Callable, Dict
from urllib.parse import urlparse

from ... import nn
from ._imagenet_categories import IMAGENET_CATEGORIES

__all__ = ["Weights", "WeightsEnum", "ImageClassification", "get_dir", "load_state_dict_from_url"]


@dataclass
class Weights:
    url: str
    transforms: Callable
    meta: Dict[str, Any]


class _WeightsEnumMeta(enum.EnumMeta):
    def from_str(cls, member):
        try:
            return cls[member]
        except KeyError:
            raise ValueError("Unknown value '%s' for %s." % (member, cls.__name__)) from None


class WeightsEnum(enum.Enum, metaclass=_WeightsEnumMeta):
    """Parent of every model's weights enum; its members' values are Weights."""

    def __init__(self, value):
        self._value_ = value

    @classmethod
    def verify(cls, obj):
        if obj is None:
            return None
        if type(obj) is str:
            return cls.from_str(obj.replace(cls.__name__ + ".", ""))
        if not isinstance(obj, cls):
            raise TypeError("Invalid Weight class provided; expected %s but received %s."
                            % (cls.__name__, obj.__class__.__name__))
        return obj

    def get_state_dict(self, progress=True, model_dir=None):
        return load_state_dict_from_url(self.url, model_dir=model_dir, progress=progress)

    def __repr__(self):
        return "%s.%s" % (self.__class__.__name__, self._name_)

    def __getattr__(self, name):
        # url / transforms / meta read straight through to the Weights value
        if name in {f.name for f in fields(Weights)}:
            return getattr(self._value_, name)
        raise AttributeError("'%s' object has no attribute '%s'" % (self.__class__.__name__, name))


def get_dir():
    """torch.hub.get_dir(): $TORCH_HOME/hub, TORCH_HOME defaulting to $XDG_CACHE_HOME/torch
    (~/.cache/torch)."""
    home = os.getenv("TORCH_HOME", os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"), "torch"))
    return os.path.join(os.path.expanduser(home), "hub")


_HASH_PREFIX = re.compile(r"-([a-f0-9]*)\.")  # torch.hub's: resnet18-f37072fd.pth -> f37072fd


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=False,
                             file_name=None, weights_only=False):
    """torch.hub.load_state_dict_from_url, minus the download: reads the cached file or says
    which file to put where."""
    model_dir = model_dir if model_dir is not None else os.path.join(get_dir(), "checkpoints")
    name = file_name or os.path.basename(urlparse(url).path)
    path = os.path.join(model_dir, name)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            "fusionflow.vision: pretrained weights file '%s' not found in %s. fusionflow does not download; "
            "fetch %s and save it as %s (set TORCH_HOME to use another cache directory)."
            % (name, model_dir, url, path))
    if check_hash:
        prefix = _HASH_PREFIX.search(name)
        if prefix is not None:
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            if not digest.startswith(prefix.group(1)):
                raise RuntimeError('invalid hash value (expected "%s", got "%s") for %s'
                                   % (prefix.group(1), digest, path))
    from ... import load
    return load(path, map_location=map_location if map_location is not None else "cpu")


class ImageClassification(nn.Module):
    """The eval preprocessing of the classification weights (torchvision.transforms._presets):
    resize, centre crop, to float in [0, 1], normalise; on PIL images or tensors."""

    def __init__(self, *, crop_size, resize_size=256, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225),
                 interpolation="bilinear"):
        super().__init__()
        from ..transforms import InterpolationMode  # transforms load only when a preset is built
        self.crop_size = [crop_size]
        self.resize_size = [resize_size]
        self.mean = list(mean)
        self.std = list(std)
        self.interpolation = InterpolationMode(interpolation) if isinstance(interpolation, str) else interpolation

    def forward(self, img):
        from ... import Tensor, float32
        from ..transforms import functional as F
        img = F.resize(img, self.resize_size, interpolation=self.interpolation)
        img = F.center_crop(img, self.crop_size)
        if not isinstance(img, Tensor):
            img = F.pil_to_tensor(img)
        img = F.convert_image_dtype(img, float32)
        return F.normalize(img, mean=self.mean, std=self.std)

    def __repr__(self):
        lines = ["crop_size=%s" % self.crop_size, "resize_size=%s" % self.resize_size, "mean=%s" % self.mean,
                 "std=%s" % self.std, "interpolation=%s" % self.interpolation]
        return self.__class__.__name__ + "(\n    " + "\n    ".join(lines) + "\n)"

    def describe(self):
        return ("Accepts ``PIL.Image``, batched ``(B, C, H, W)`` and single ``(C, H, W)`` image tensors. The images "
                "are resized to ``resize_size=%s`` using ``interpolation=%s``, followed by a central crop of "
                "``crop_size=%s``. Finally the values are first rescaled to ``[0.0, 1.0]`` and then normalized "
                "using ``mean=%s`` and ``std=%s``." % (self.resize_size, self.interpolation, self.crop_size,
                                                        self.mean, self.std))


def _preset(**kwargs):
    """The transforms package's own preset when it has one (a single class for users to meet),
    else the one above."""
    try:
        from ..transforms._presets import ImageClassification as preset
    except ImportError:
        preset = ImageClassification
    return preset(**kwargs)


def imagenet1k(url, num_params, acc1, acc5, min_size=(1, 1), crop_size=224, resize_size=256,
               interpolation="bilinear", categories=IMAGENET_CATEGORIES, **meta):
    """A Weights entry for an ImageNet-1k classifier: the common metadata spelled once."""
    transforms = functools.partial(_preset, crop_size=crop_size, resize_size=resize_size,
                                   interpolation=interpolation, **meta.pop("preset", {}))
    meta = dict(meta, categories=categories, min_size=min_size, num_params=num_params,
                _metrics={"ImageNet-1K": {"acc@1": acc1, "acc@5": acc5}})
    return Weights(url=url, transforms=transforms, meta=meta)
