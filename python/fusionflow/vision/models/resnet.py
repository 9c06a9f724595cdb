"""ResNet, ResNeXt and Wide ResNet (torchvision.models.resnet): the same modules under the same
names, so torchvision's checkpoints load with strict=True."""
from functools import partial

from ... import flatten, nn
from ._utils import builder, load_weights, num_classes_from
from ._weights import WeightsEnum, imagenet1k

__all__ = ["ResNet", "ResNet18_Weights", "ResNet34_Weights", "ResNet50_Weights", "ResNet101_Weights",
           "ResNet152_Weights", "ResNeXt50_32X4D_Weights", "ResNeXt101_32X8D_Weights", "ResNeXt101_64X4D_Weights",
           "Wide_ResNet50_2_Weights", "Wide_ResNet101_2_Weights", "resnet18", "resnet34", "resnet50", "resnet101",
           "resnet152", "resnext50_32x4d", "resnext101_32x8d", "resnext101_64x4d", "wide_resnet50_2",
           "wide_resnet101_2"]


def conv3x3(in_planes, out_planes, stride=1, groups=1, dilation=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation, groups=groups,
                     bias=False, dilation=dilation)


def conv1x1(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64, dilation=1,
                 norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    """The v1.5 bottleneck: the stride sits on the 3x3 conv, as torchvision's."""
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64, dilation=1,
                 norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=1000, zero_init_residual=False, groups=1, width_per_group=64,
                 replace_stride_with_dilation=None, norm_layer=None):
        super().__init__()
        self._norm_layer = norm_layer = norm_layer or nn.BatchNorm2d
        self.inplanes = 64
        self.dilation = 1
        if replace_stride_with_dilation is None:
            replace_stride_with_dilation = [False, False, False]
        if len(replace_stride_with_dilation) != 3:
            raise ValueError("replace_stride_with_dilation should be None or a 3-element tuple, got %s"
                             % (replace_stride_with_dilation,))
        self.groups = groups
        self.base_width = width_per_group
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2, dilate=replace_stride_with_dilation[0])
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2, dilate=replace_stride_with_dilation[1])
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2, dilate=replace_stride_with_dilation[2])
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            # each residual branch starts as the identity (https://arxiv.org/abs/1706.02677)
            for m in self.modules():
                last_bn = getattr(m, "bn3", None) if isinstance(m, Bottleneck) else \
                    getattr(m, "bn2", None) if isinstance(m, BasicBlock) else None
                if last_bn is not None and last_bn.weight is not None:
                    nn.init.constant_(last_bn.weight, 0)

    def _make_layer(self, block, planes, blocks, stride=1, dilate=False):
        norm_layer = self._norm_layer
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                       norm_layer(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width, previous_dilation,
                        norm_layer)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, groups=self.groups, base_width=self.base_width,
                                dilation=self.dilation, norm_layer=norm_layer))
        return nn.Sequential(*layers)

    def _forward_impl(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(flatten(self.avgpool(x), 1))

    def forward(self, x):
        return self._forward_impl(x)


class ResNet18_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k("https://download.pytorch.org/models/resnet18-f37072fd.pth", 11689512, 69.758, 89.078)
    DEFAULT = IMAGENET1K_V1


class ResNet34_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k("https://download.pytorch.org/models/resnet34-b627a593.pth", 21797672, 73.314, 91.42)
    DEFAULT = IMAGENET1K_V1


class ResNet50_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k("https://download.pytorch.org/models/resnet50-0676ba61.pth", 25557032, 76.13, 92.862)
    IMAGENET1K_V2 = imagenet1k("https://download.pytorch.org/models/resnet50-11ad3fa6.pth", 25557032, 80.858, 95.434,
                               resize_size=232)
    DEFAULT = IMAGENET1K_V2


class ResNet101_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k("https://download.pytorch.org/models/resnet101-63fe2227.pth", 44549160, 77.374, 93.546)
    IMAGENET1K_V2 = imagenet1k("https://download.pytorch.org/models/resnet101-cd907fc2.pth", 44549160, 81.886, 95.78,
                               resize_size=232)
    DEFAULT = IMAGENET1K_V2


class ResNet152_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k("https://download.pytorch.org/models/resnet152-394f9c45.pth", 60192808, 78.312, 94.046)
    IMAGENET1K_V2 = imagenet1k("https://download.pytorch.org/models/resnet152-f82ba261.pth", 60192808, 82.284, 96.002,
                               resize_size=232)
    DEFAULT = IMAGENET1K_V2


class ResNeXt50_32X4D_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k("https://download.pytorch.org/models/resnext50_32x4d-7cdf4587.pth", 25028904, 77.618,
                               93.698)
    IMAGENET1K_V2 = imagenet1k("https://download.pytorch.org/models/resnext50_32x4d-1a0047aa.pth", 25028904, 81.198,
                               95.34, resize_size=232)
    DEFAULT = IMAGENET1K_V2


class ResNeXt101_32X8D_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k("https://download.pytorch.org/models/resnext101_32x8d-8ba56ff5.pth", 88791336, 79.312,
                               94.526)
    IMAGENET1K_V2 = imagenet1k("https://download.pytorch.org/models/resnext101_32x8d-110c445d.pth", 88791336, 82.834,
                               96.228, resize_size=232)
    DEFAULT = IMAGENET1K_V2


class ResNeXt101_64X4D_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k("https://download.pytorch.org/models/resnext101_64x4d-173b62eb.pth", 83455272, 83.246,
                               96.454, resize_size=232)
    DEFAULT = IMAGENET1K_V1


class Wide_ResNet50_2_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k("https://download.pytorch.org/models/wide_resnet50_2-95faca4d.pth", 68883240, 78.468,
                               94.086)
    IMAGENET1K_V2 = imagenet1k("https://download.pytorch.org/models/wide_resnet50_2-9ba9bcbe.pth", 68883240, 81.602,
                               95.758, resize_size=232)
    DEFAULT = IMAGENET1K_V2


class Wide_ResNet101_2_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k("https://download.pytorch.org/models/wide_resnet101_2-32ee1156.pth", 126886696, 78.848,
                               94.284)
    IMAGENET1K_V2 = imagenet1k("https://download.pytorch.org/models/wide_resnet101_2-d733dc28.pth", 126886696, 82.51,
                               96.02, resize_size=232)
    DEFAULT = IMAGENET1K_V2


def _resnet(block, layers, weights, progress, **kwargs):
    num_classes_from(weights, kwargs)
    return load_weights(ResNet(block, layers, **kwargs), weights, progress)


resnet18 = builder("resnet18", ResNet18_Weights, partial(_resnet, BasicBlock, [2, 2, 2, 2]))
resnet34 = builder("resnet34", ResNet34_Weights, partial(_resnet, BasicBlock, [3, 4, 6, 3]))
resnet50 = builder("resnet50", ResNet50_Weights, partial(_resnet, Bottleneck, [3, 4, 6, 3]))
resnet101 = builder("resnet101", ResNet101_Weights, partial(_resnet, Bottleneck, [3, 4, 23, 3]))
resnet152 = builder("resnet152", ResNet152_Weights, partial(_resnet, Bottleneck, [3, 8, 36, 3]))
resnext50_32x4d = builder("resnext50_32x4d", ResNeXt50_32X4D_Weights, partial(_resnet, Bottleneck, [3, 4, 6, 3]),
                          groups=32, width_per_group=4)
resnext101_32x8d = builder("resnext101_32x8d", ResNeXt101_32X8D_Weights, partial(_resnet, Bottleneck, [3, 4, 23, 3]),
                           groups=32, width_per_group=8)
resnext101_64x4d = builder("resnext101_64x4d", ResNeXt101_64X4D_Weights, partial(_resnet, Bottleneck, [3, 4, 23, 3]),
                           groups=64, width_per_group=4)
wide_resnet50_2 = builder("wide_resnet50_2", Wide_ResNet50_2_Weights, partial(_resnet, Bottleneck, [3, 4, 6, 3]),
                          width_per_group=128)
wide_resnet101_2 = builder("wide_resnet101_2", Wide_ResNet101_2_Weights, partial(_resnet, Bottleneck, [3, 4, 23, 3]),
                           width_per_group=128)
