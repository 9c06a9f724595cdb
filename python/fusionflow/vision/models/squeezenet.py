"""SqueezeNet 1.0 and 1.1 (torchvision.models.squeezenet)."""
from functools import partial

from ... import cat, flatten, nn
from ._utils import builder, load_weights, num_classes_from
from ._weights import WeightsEnum, imagenet1k

__all__ = ["SqueezeNet", "SqueezeNet1_0_Weights", "SqueezeNet1_1_Weights", "squeezenet1_0", "squeezenet1_1"]


class Fire(nn.Module):
    """Squeeze to few channels with 1x1 convs, then expand with 1x1 and 3x3 convs side by side."""

    def __init__(self, inplanes, squeeze_planes, expand1x1_planes, expand3x3_planes):
        super().__init__()
        self.inplanes = inplanes
        self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.squeeze_activation(self.squeeze(x))
        return cat([self.expand1x1_activation(self.expand1x1(x)), self.expand3x3_activation(self.expand3x3(x))], 1)


class SqueezeNet(nn.Module):
    def __init__(self, version="1_0", num_classes=1000, dropout=0.5):
        super().__init__()
        self.num_classes = num_classes
        pool = partial(nn.MaxPool2d, kernel_size=3, stride=2, ceil_mode=True)
        if version == "1_0":
            self.features = nn.Sequential(
                nn.Conv2d(3, 96, kernel_size=7, stride=2), nn.ReLU(inplace=True), pool(),
                Fire(96, 16, 64, 64), Fire(128, 16, 64, 64), Fire(128, 32, 128, 128), pool(),
                Fire(256, 32, 128, 128), Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256),
                pool(), Fire(512, 64, 256, 256))
        elif version == "1_1":
            self.features = nn.Sequential(
                nn.Conv2d(3, 64, kernel_size=3, stride=2), nn.ReLU(inplace=True), pool(),
                Fire(64, 16, 64, 64), Fire(128, 16, 64, 64), pool(),
                Fire(128, 32, 128, 128), Fire(256, 32, 128, 128), pool(),
                Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256), Fire(512, 64, 256, 256))
        else:
            raise ValueError("Unsupported SqueezeNet version %s: 1_0 or 1_1 expected" % version)
        # the classifier is a 1x1 conv per class, averaged over the map
        final_conv = nn.Conv2d(512, self.num_classes, kernel_size=1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), final_conv, nn.ReLU(inplace=True),
                                        nn.AdaptiveAvgPool2d((1, 1)))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                if m is final_conv:
                    nn.init.normal_(m.weight, mean=0.0, std=0.01)
                else:
                    nn.init.kaiming_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)

    def forward(self, x):
        return flatten(self.classifier(self.features(x)), 1)


_URL = "https://download.pytorch.org/models/"


class SqueezeNet1_0_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k(_URL + "squeezenet1_0-b66bff10.pth", 1248424, 58.092, 80.42, min_size=(21, 21))
    DEFAULT = IMAGENET1K_V1


class SqueezeNet1_1_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k(_URL + "squeezenet1_1-b8a52dc0.pth", 1235496, 58.178, 80.624, min_size=(17, 17))
    DEFAULT = IMAGENET1K_V1


def _squeezenet(version, weights, progress, **kwargs):
    num_classes_from(weights, kwargs)
    return load_weights(SqueezeNet(version, **kwargs), weights, progress)


squeezenet1_0 = builder("squeezenet1_0", SqueezeNet1_0_Weights, partial(_squeezenet, "1_0"))
squeezenet1_1 = builder("squeezenet1_1", SqueezeNet1_1_Weights, partial(_squeezenet, "1_1"))
