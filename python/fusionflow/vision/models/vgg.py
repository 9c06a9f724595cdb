"""VGG 11/13/16/19, with and without batch norm (torchvision.models.vgg), module for module."""
from functools import partial

from ... import flatten, nn
from ._utils import builder, load_weights, num_classes_from
from ._weights import WeightsEnum, imagenet1k

__all__ = ["VGG", "VGG11_Weights", "VGG11_BN_Weights", "VGG13_Weights", "VGG13_BN_Weights", "VGG16_Weights",
           "VGG16_BN_Weights", "VGG19_Weights", "VGG19_BN_Weights", "vgg11", "vgg11_bn", "vgg13", "vgg13_bn",
           "vgg16", "vgg16_bn", "vgg19", "vgg19_bn"]


class VGG(nn.Module):
    def __init__(self, features, num_classes=1000, init_weights=True, dropout=0.5):
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, num_classes))
        if init_weights:
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                    if m.bias is not None:
                        nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, 0, 0.01)
                    nn.init.constant_(m.bias, 0)

    def forward(self, x):
        return self.classifier(flatten(self.avgpool(self.features(x)), 1))


def make_layers(cfg, batch_norm=False):
    """The conv stack from a list of widths, "M" standing for a 2x2 max pool."""
    layers, in_channels = [], 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            continue
        layers.append(nn.Conv2d(in_channels, v, kernel_size=3, padding=1))
        if batch_norm:
            layers.append(nn.BatchNorm2d(v))
        layers.append(nn.ReLU(inplace=True))
        in_channels = v
    return nn.Sequential(*layers)


cfgs = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "E": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"],
}

_URL = "https://download.pytorch.org/models/"


class VGG11_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k(_URL + "vgg11-8a719046.pth", 132863336, 69.02, 88.628, min_size=(32, 32))
    DEFAULT = IMAGENET1K_V1


class VGG11_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k(_URL + "vgg11_bn-6002323d.pth", 132868840, 70.37, 89.81, min_size=(32, 32))
    DEFAULT = IMAGENET1K_V1


class VGG13_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k(_URL + "vgg13-19584684.pth", 133047848, 69.928, 89.246, min_size=(32, 32))
    DEFAULT = IMAGENET1K_V1


class VGG13_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k(_URL + "vgg13_bn-abd245e5.pth", 133053736, 71.586, 90.374, min_size=(32, 32))
    DEFAULT = IMAGENET1K_V1


class VGG16_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k(_URL + "vgg16-397923af.pth", 138357544, 71.592, 90.382, min_size=(32, 32))
    # the features of the SSD paper's VGG16 (0-255 inputs, BGR-mean subtracted); no classifier head
    IMAGENET1K_FEATURES = imagenet1k(_URL + "vgg16_features-amdegroot-88682ab5.pth", 138357544, float("nan"),
                                     float("nan"), min_size=(32, 32), categories=None,
                                     preset={"mean": (0.48235, 0.45882, 0.40784), "std": (1.0 / 255.0,) * 3})
    DEFAULT = IMAGENET1K_V1


class VGG16_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k(_URL + "vgg16_bn-6c64b313.pth", 138365992, 73.36, 91.516, min_size=(32, 32))
    DEFAULT = IMAGENET1K_V1


class VGG19_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k(_URL + "vgg19-dcbb9e9d.pth", 143667240, 72.376, 90.876, min_size=(32, 32))
    DEFAULT = IMAGENET1K_V1


class VGG19_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k(_URL + "vgg19_bn-c79401a0.pth", 143678248, 74.218, 91.842, min_size=(32, 32))
    DEFAULT = IMAGENET1K_V1


def _vgg(cfg, batch_norm, weights, progress, **kwargs):
    if weights is not None:
        kwargs["init_weights"] = False
        num_classes_from(weights, kwargs)
    return load_weights(VGG(make_layers(cfgs[cfg], batch_norm=batch_norm), **kwargs), weights, progress)


vgg11 = builder("vgg11", VGG11_Weights, partial(_vgg, "A", False))
vgg11_bn = builder("vgg11_bn", VGG11_BN_Weights, partial(_vgg, "A", True))
vgg13 = builder("vgg13", VGG13_Weights, partial(_vgg, "B", False))
vgg13_bn = builder("vgg13_bn", VGG13_BN_Weights, partial(_vgg, "B", True))
vgg16 = builder("vgg16", VGG16_Weights, partial(_vgg, "D", False))
vgg16_bn = builder("vgg16_bn", VGG16_BN_Weights, partial(_vgg, "D", True))
vgg19 = builder("vgg19", VGG19_Weights, partial(_vgg, "E", False))
vgg19_bn = builder("vgg19_bn", VGG19_BN_Weights, partial(_vgg, "E", True))
