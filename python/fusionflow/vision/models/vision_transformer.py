"""Vision Transformer (torchvision.models.vision_transformer, https://arxiv.org/abs/2010.11929):
patchify with a strided conv, prepend a class token, a pre-norm transformer encoder, classify
the class token."""
import math
from collections import OrderedDict
from functools import partial
from typing import Callable, NamedTuple

from ... import cat, empty, nn, zeros
from ..ops.misc import MLP, Conv2dNormActivation
from ._utils import builder, load_weights, num_classes_from, overwrite_named_param
from ._weights import WeightsEnum, imagenet1k

__all__ = ["VisionTransformer", "ViT_B_16_Weights", "ViT_B_32_Weights", "ViT_L_16_Weights", "ViT_L_32_Weights",
           "ViT_H_14_Weights", "vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32", "vit_h_14"]


class ConvStemConfig(NamedTuple):
    out_channels: int
    kernel_size: int
    stride: int
    norm_layer: Callable = nn.BatchNorm2d
    activation_layer: Callable = nn.ReLU


class MLPBlock(MLP):
    """Linear-GELU-Dropout-Linear-Dropout. Checkpoints from before torchvision 0.13 name the
    linears linear_1/linear_2; they are renamed on load, as torchvision does."""

    def __init__(self, in_dim, mlp_dim, dropout):
        super().__init__(in_dim, [mlp_dim, in_dim], activation_layer=nn.GELU, inplace=None, dropout=dropout)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.normal_(m.bias, std=1e-6)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        for i in range(2):
            for kind in ("weight", "bias"):
                old = "%slinear_%d.%s" % (prefix, i + 1, kind)
                if old in state_dict:
                    state_dict["%s%d.%s" % (prefix, 3 * i, kind)] = state_dict.pop(old)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


class EncoderBlock(nn.Module):
    def __init__(self, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                 norm_layer=partial(nn.LayerNorm, eps=1e-6)):
        super().__init__()
        self.num_heads = num_heads
        self.ln_1 = norm_layer(hidden_dim)
        self.self_attention = nn.MultiheadAttention(hidden_dim, num_heads, dropout=attention_dropout, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.ln_2 = norm_layer(hidden_dim)
        self.mlp = MLPBlock(hidden_dim, mlp_dim, dropout)

    def forward(self, input):
        if input.dim() != 3:
            raise AssertionError("Expected (batch_size, seq_length, hidden_dim) got %s" % (tuple(input.shape),))
        x = self.ln_1(input)
        x, _ = self.self_attention(x, x, x, need_weights=False)
        x = self.dropout(x) + input
        return x + self.mlp(self.ln_2(x))


class Encoder(nn.Module):
    def __init__(self, seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                 norm_layer=partial(nn.LayerNorm, eps=1e-6)):
        super().__init__()
        self.pos_embedding = nn.Parameter(empty(1, seq_length, hidden_dim).normal_(std=0.02))  # from BERT
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.Sequential(OrderedDict(
            ("encoder_layer_%d" % i, EncoderBlock(num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                                                  norm_layer)) for i in range(num_layers)))
        self.ln = norm_layer(hidden_dim)

    def forward(self, input):
        if input.dim() != 3:
            raise AssertionError("Expected (batch_size, seq_length, hidden_dim) got %s" % (tuple(input.shape),))
        return self.ln(self.layers(self.dropout(input + self.pos_embedding)))


class VisionTransformer(nn.Module):
    def __init__(self, image_size, patch_size, num_layers, num_heads, hidden_dim, mlp_dim, dropout=0.0,
                 attention_dropout=0.0, num_classes=1000, representation_size=None,
                 norm_layer=partial(nn.LayerNorm, eps=1e-6), conv_stem_configs=None):
        super().__init__()
        if image_size % patch_size != 0:
            raise AssertionError("Input shape indivisible by patch size!")
        self.image_size, self.patch_size = image_size, patch_size
        self.hidden_dim, self.mlp_dim = hidden_dim, mlp_dim
        self.attention_dropout, self.dropout = attention_dropout, dropout
        self.num_classes, self.representation_size = num_classes, representation_size
        self.norm_layer = norm_layer

        if conv_stem_configs is not None:  # https://arxiv.org/abs/2106.14881: a conv stem instead of patchify
            seq_proj, prev = nn.Sequential(), 3
            for i, cfg in enumerate(conv_stem_configs):
                seq_proj.add_module("conv_bn_relu_%d" % i, Conv2dNormActivation(
                    prev, cfg.out_channels, kernel_size=cfg.kernel_size, stride=cfg.stride,
                    norm_layer=cfg.norm_layer, activation_layer=cfg.activation_layer))
                prev = cfg.out_channels
            seq_proj.add_module("conv_last", nn.Conv2d(prev, hidden_dim, kernel_size=1))
            self.conv_proj = seq_proj
        else:
            self.conv_proj = nn.Conv2d(3, hidden_dim, kernel_size=patch_size, stride=patch_size)

        seq_length = (image_size // patch_size) ** 2 + 1  # + the class token
        self.class_token = nn.Parameter(zeros(1, 1, hidden_dim))
        self.encoder = Encoder(seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                               norm_layer)
        self.seq_length = seq_length

        heads = OrderedDict()
        if representation_size is None:
            heads["head"] = nn.Linear(hidden_dim, num_classes)
        else:
            heads["pre_logits"] = nn.Linear(hidden_dim, representation_size)
            heads["act"] = nn.Tanh()
            heads["head"] = nn.Linear(representation_size, num_classes)
        self.heads = nn.Sequential(heads)

        if isinstance(self.conv_proj, nn.Conv2d):
            fan_in = self.conv_proj.in_channels * self.conv_proj.kernel_size[0] * self.conv_proj.kernel_size[1]
            nn.init.trunc_normal_(self.conv_proj.weight, std=math.sqrt(1 / fan_in))
            if self.conv_proj.bias is not None:
                nn.init.zeros_(self.conv_proj.bias)
        else:
            last = self.conv_proj.conv_last
            nn.init.normal_(last.weight, mean=0.0, std=math.sqrt(2.0 / last.out_channels))
            if last.bias is not None:
                nn.init.zeros_(last.bias)
        if representation_size is not None:
            nn.init.trunc_normal_(self.heads.pre_logits.weight, std=math.sqrt(1 / self.heads.pre_logits.in_features))
            nn.init.zeros_(self.heads.pre_logits.bias)
        nn.init.zeros_(self.heads.head.weight)
        nn.init.zeros_(self.heads.head.bias)

    def _process_input(self, x):
        n, _, h, w = x.shape
        p = self.patch_size
        if h != self.image_size:
            raise AssertionError("Wrong image height! Expected %d but got %d!" % (self.image_size, h))
        if w != self.image_size:
            raise AssertionError("Wrong image width! Expected %d but got %d!" % (self.image_size, w))
        x = self.conv_proj(x)  # (n, hidden, n_h, n_w)
        return x.reshape(n, self.hidden_dim, (h // p) * (w // p)).permute(0, 2, 1)

    def forward(self, x):
        x = self._process_input(x)
        x = cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1)
        return self.heads(self.encoder(x)[:, 0])


_URL = "https://download.pytorch.org/models/"
_SWAG = {"license": "https://github.com/facebookresearch/SWAG/blob/main/LICENSE"}


class ViT_B_16_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k(_URL + "vit_b_16-c867db91.pth", 86567656, 81.072, 95.318, min_size=(224, 224))
    IMAGENET1K_SWAG_E2E_V1 = imagenet1k(_URL + "vit_b_16_swag-9ac1b537.pth", 86859496, 85.304, 97.65,
                                        min_size=(384, 384), crop_size=384, resize_size=384,
                                        interpolation="bicubic", **_SWAG)
    IMAGENET1K_SWAG_LINEAR_V1 = imagenet1k(_URL + "vit_b_16_lc_swag-4e70ced5.pth", 86567656, 81.886, 96.18,
                                           min_size=(224, 224), resize_size=224, interpolation="bicubic", **_SWAG)
    DEFAULT = IMAGENET1K_V1


class ViT_B_32_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k(_URL + "vit_b_32-d86f8d99.pth", 88224232, 75.912, 92.466, min_size=(224, 224))
    DEFAULT = IMAGENET1K_V1


class ViT_L_16_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k(_URL + "vit_l_16-852ce7e3.pth", 304326632, 79.662, 94.638, min_size=(224, 224),
                               resize_size=242)
    IMAGENET1K_SWAG_E2E_V1 = imagenet1k(_URL + "vit_l_16_swag-4f3808c9.pth", 305174504, 88.064, 98.512,
                                        min_size=(512, 512), crop_size=512, resize_size=512,
                                        interpolation="bicubic", **_SWAG)
    IMAGENET1K_SWAG_LINEAR_V1 = imagenet1k(_URL + "vit_l_16_lc_swag-4d563306.pth", 304326632, 85.146, 97.422,
                                           min_size=(224, 224), resize_size=224, interpolation="bicubic", **_SWAG)
    DEFAULT = IMAGENET1K_V1


class ViT_L_32_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet1k(_URL + "vit_l_32-c7638314.pth", 306535400, 76.972, 93.07, min_size=(224, 224))
    DEFAULT = IMAGENET1K_V1


class ViT_H_14_Weights(WeightsEnum):
    IMAGENET1K_SWAG_E2E_V1 = imagenet1k(_URL + "vit_h_14_swag-80465313.pth", 633470440, 88.552, 98.694,
                                        min_size=(518, 518), crop_size=518, resize_size=518,
                                        interpolation="bicubic", **_SWAG)
    IMAGENET1K_SWAG_LINEAR_V1 = imagenet1k(_URL + "vit_h_14_lc_swag-c1eb923e.pth", 632045800, 85.708, 97.73,
                                           min_size=(224, 224), resize_size=224, interpolation="bicubic", **_SWAG)
    DEFAULT = IMAGENET1K_SWAG_E2E_V1


def _vision_transformer(patch_size, num_layers, num_heads, hidden_dim, mlp_dim, weights, progress, **kwargs):
    if weights is not None:
        num_classes_from(weights, kwargs)
        side = weights.meta["min_size"]
        if side[0] != side[1]:
            raise AssertionError("ViT weights need a square min_size, got %s" % (side,))
        overwrite_named_param(kwargs, "image_size", side[0])  # the position embedding fixes the input size
    image_size = kwargs.pop("image_size", 224)
    model = VisionTransformer(image_size=image_size, patch_size=patch_size, num_layers=num_layers,
                              num_heads=num_heads, hidden_dim=hidden_dim, mlp_dim=mlp_dim, **kwargs)
    return load_weights(model, weights, progress)


vit_b_16 = builder("vit_b_16", ViT_B_16_Weights, partial(_vision_transformer, 16, 12, 12, 768, 3072))
vit_b_32 = builder("vit_b_32", ViT_B_32_Weights, partial(_vision_transformer, 32, 12, 12, 768, 3072))
vit_l_16 = builder("vit_l_16", ViT_L_16_Weights, partial(_vision_transformer, 16, 24, 16, 1024, 4096))
vit_l_32 = builder("vit_l_32", ViT_L_32_Weights, partial(_vision_transformer, 32, 24, 16, 1024, 4096))
vit_h_14 = builder("vit_h_14", ViT_H_14_Weights, partial(_vision_transformer, 14, 32, 16, 1280, 5120),
                   legacy_default=None)
