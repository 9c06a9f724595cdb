"""AlexNet (torchvision.models.alexnet: the one-GPU variant of "One weird trick")."""
from ... import flatten, nn
from ._utils import builder, load_weights, num_classes_from
from ._weights import WeightsEnum, imagenet1k

__all__ = ["AlexNet", "AlexNet_Weights", "alexnet"]


class AlexNet(nn.Module):
    def __init__(self, num_classes=1000, dropout=0.5):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(inplace=True),
            nn.Dropout(p=dropout), nn.Linear(4096, 4096), nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x):
        return self.classifier(flatten(self.avgpool(self.features(x)), 1))


class AlexNet_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k("https://download.pytorch.org/models/alexnet-owt-7be5be79.pth", 61100840, 56.522,
                               79.066, min_size=(63, 63))
    DEFAULT = IMAGENET1K_V1


def _alexnet(weights, progress, **kwargs):
    num_classes_from(weights, kwargs)
    return load_weights(AlexNet(**kwargs), weights, progress)


alexnet = builder("alexnet", AlexNet_Weights, _alexnet)
