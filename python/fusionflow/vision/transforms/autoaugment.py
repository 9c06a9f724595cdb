"""Learned and random augmentation policies (torchvision.transforms.autoaugment, 0.14):
AutoAugment (Cubuk et al., 2019), RandAugment (Cubuk et al., 2020), TrivialAugmentWide
(Mueller and Hutter, 2021) and AugMix (Hendrycks et al., 2020). Each op is a call of
transforms.functional, so PIL images and fusionflow tensors both work; the draws (which
op, its sign, its strength) come from fusionflow's generator in torchvision's order."""
import math
from enum import Enum

import fusionflow as ff
from fusionflow import nn
from . import functional as F
from .functional import InterpolationMode

__all__ = ["AutoAugmentPolicy", "AutoAugment", "RandAugment", "TrivialAugmentWide", "AugMix"]


def _shear(img, magnitude, interpolation, fill, axis):
    deg = math.degrees(math.atan(magnitude))
    return F.affine(img, angle=0.0, translate=[0, 0], scale=1.0, shear=[deg, 0.0] if axis == 0 else [0.0, deg],
                    interpolation=interpolation, fill=fill, center=[0, 0])


def _translate(img, magnitude, interpolation, fill, axis):
    shift = [int(magnitude), 0] if axis == 0 else [0, int(magnitude)]
    return F.affine(img, angle=0.0, translate=shift, scale=1.0, interpolation=interpolation, shear=[0.0, 0.0],
                    fill=fill)


# op name -> f(img, magnitude, interpolation, fill)
_OPS = {
    "ShearX": lambda img, m, i, f: _shear(img, m, i, f, 0),
    "ShearY": lambda img, m, i, f: _shear(img, m, i, f, 1),
    "TranslateX": lambda img, m, i, f: _translate(img, m, i, f, 0),
    "TranslateY": lambda img, m, i, f: _translate(img, m, i, f, 1),
    "Rotate": lambda img, m, i, f: F.rotate(img, m, interpolation=i, fill=f),
    "Brightness": lambda img, m, i, f: F.adjust_brightness(img, 1.0 + m),
    "Color": lambda img, m, i, f: F.adjust_saturation(img, 1.0 + m),
    "Contrast": lambda img, m, i, f: F.adjust_contrast(img, 1.0 + m),
    "Sharpness": lambda img, m, i, f: F.adjust_sharpness(img, 1.0 + m),
    "Posterize": lambda img, m, i, f: F.posterize(img, int(m)),
    "Solarize": lambda img, m, i, f: F.solarize(img, m),
    "AutoContrast": lambda img, m, i, f: F.autocontrast(img),
    "Equalize": lambda img, m, i, f: F.equalize(img),
    "Invert": lambda img, m, i, f: F.invert(img),
    "Identity": lambda img, m, i, f: img,
}


def _apply_op(img, op_name, magnitude, interpolation, fill):
    if op_name not in _OPS:
        raise ValueError("The provided operator %s is not recognized." % op_name)
    return _OPS[op_name](img, magnitude, interpolation, fill)


def _linear(hi, n, lo=0.0):
    return ff.linspace(lo, hi, steps=n).tolist()


def _posterize_bits(top, n, span):
    """top - round(k / ((n - 1) / span)) for the n bins: bits left, fewer as strength grows."""
    return (top - (ff.arange(n, dtype=ff.float32) / ((n - 1) / span)).round()).to(ff.int32).tolist()


def _space(ops, n, height, width, shear=0.3, translate=None, rotate=30.0, enhance=0.9, posterize=(8, 4)):
    """op name -> (the n magnitudes, or None for an op without strength; whether signed)."""
    translate = translate or (150.0 / 331.0 * width, 150.0 / 331.0 * height)
    signed = {"ShearX": shear, "ShearY": shear, "TranslateX": translate[0], "TranslateY": translate[1],
              "Rotate": rotate, "Brightness": enhance, "Color": enhance, "Contrast": enhance, "Sharpness": enhance}
    space = {}
    for op in ops:
        if op in signed:
            space[op] = (_linear(signed[op], n), True)
        elif op == "Posterize":
            space[op] = (_posterize_bits(posterize[0], n, posterize[1]), False)
        elif op == "Solarize":
            space[op] = (_linear(0.0, n, lo=255.0), False)
        else:
            space[op] = (None, False)
    return space


_GEOMETRIC = ["ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate"]
_ENHANCE = ["Brightness", "Color", "Contrast", "Sharpness"]
_RAND_OPS = ["Identity"] + _GEOMETRIC + _ENHANCE + ["Posterize", "Solarize", "AutoContrast", "Equalize"]


def _tensor_fill(img, fill):
    channels = F.get_dimensions(img)[0]
    if not F._is_tensor(img) or fill is None:
        return fill
    return [float(fill)] * channels if isinstance(fill, (int, float)) else [float(f) for f in fill]


def _signed(magnitude, signed):
    """Flips the sign with probability 1/2 (one randint draw) for the signed ops."""
    return -magnitude if signed and ff.randint(2, size=(1,)).item() else magnitude


class AutoAugmentPolicy(Enum):
    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


# The learned sub-policies of the AutoAugment paper: two (op, probability, magnitude bin) each.
_POLICIES = {
    AutoAugmentPolicy.IMAGENET: """
        Posterize .4 8 Rotate .6 9 | Solarize .6 5 AutoContrast .6 - | Equalize .8 - Equalize .6 - |
        Posterize .6 7 Posterize .6 6 | Equalize .4 - Solarize .2 4 | Equalize .4 - Rotate .8 8 |
        Solarize .6 3 Equalize .6 - | Posterize .8 5 Equalize 1 - | Rotate .2 3 Solarize .6 8 |
        Equalize .6 - Posterize .4 6 | Rotate .8 8 Color .4 0 | Rotate .4 9 Equalize .6 - |
        Equalize 0 - Equalize .8 - | Invert .6 - Equalize 1 - | Color .6 4 Contrast 1 8 |
        Rotate .8 8 Color 1 2 | Color .8 8 Solarize .8 7 | Sharpness .4 7 Invert .6 - |
        ShearX .6 5 Equalize 1 - | Color .4 0 Equalize .6 - | Equalize .4 - Solarize .2 4 |
        Solarize .6 5 AutoContrast .6 - | Invert .6 - Equalize 1 - | Color .6 4 Contrast 1 8 |
        Equalize .8 - Equalize .6 -""",
    AutoAugmentPolicy.CIFAR10: """
        Invert .1 - Contrast .2 6 | Rotate .7 2 TranslateX .3 9 | Sharpness .8 1 Sharpness .9 3 |
        ShearY .5 8 TranslateY .7 9 | AutoContrast .5 - Equalize .9 - | ShearY .2 7 Posterize .3 7 |
        Color .4 3 Brightness .6 7 | Sharpness .3 9 Brightness .7 9 | Equalize .6 - Equalize .5 - |
        Contrast .6 7 Sharpness .6 5 | Color .7 7 TranslateX .5 8 | Equalize .3 - AutoContrast .4 - |
        TranslateY .4 3 Sharpness .2 6 | Brightness .9 6 Color .2 8 | Solarize .5 2 Invert 0 - |
        Equalize .2 - AutoContrast .6 - | Equalize .2 - Equalize .6 - | Color .9 9 Equalize .6 - |
        AutoContrast .8 - Solarize .2 8 | Brightness .1 3 Color .7 0 | Solarize .4 5 AutoContrast .9 - |
        TranslateY .9 9 TranslateY .7 9 | AutoContrast .9 - Solarize .8 3 | Equalize .8 - Invert .1 - |
        TranslateY .7 9 AutoContrast .9 -""",
    AutoAugmentPolicy.SVHN: """
        ShearX .9 4 Invert .2 - | ShearY .9 8 Invert .7 - | Equalize .6 - Solarize .6 6 |
        Invert .9 - Equalize .6 - | Equalize .6 - Rotate .9 3 | ShearX .9 4 AutoContrast .8 - |
        ShearY .9 8 Invert .4 - | ShearY .9 5 Solarize .2 6 | Invert .9 - AutoContrast .8 - |
        Equalize .6 - Rotate .9 3 | ShearX .9 4 Solarize .3 3 | ShearY .8 8 Invert .7 - |
        Equalize .9 - TranslateY .6 6 | Invert .9 - Equalize .6 - | Contrast .3 3 Rotate .8 4 |
        Invert .8 - TranslateY 0 2 | ShearY .7 6 Solarize .4 8 | Invert .6 - Rotate .8 4 |
        ShearY .3 7 TranslateX .9 3 | ShearX .1 6 Invert .6 - | Solarize .7 2 TranslateY .6 7 |
        ShearY .8 4 Invert .8 - | ShearX .7 9 TranslateY .8 3 | ShearY .8 5 AutoContrast .7 - |
        ShearX .7 2 Invert .1 -""",
}


def _parse_policy(text):
    subs = []
    for part in text.split("|"):
        w = part.split()
        subs.append(tuple((w[k], float(w[k + 1]), None if w[k + 2] == "-" else int(w[k + 2])) for k in (0, 3)))
    return subs


class AutoAugment(nn.Module):
    """One of the policy's sub-policies at random; each of its two ops applied with its own
    probability, at its fixed strength, with a random sign for the signed ops."""

    def __init__(self, policy=AutoAugmentPolicy.IMAGENET, interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__()
        self.policy, self.interpolation, self.fill = policy, interpolation, fill
        self.policies = self._get_policies(policy)

    def _get_policies(self, policy):
        if policy not in _POLICIES:
            raise ValueError("The provided policy %s is not recognized." % policy)
        return _parse_policy(_POLICIES[policy])

    def _augmentation_space(self, num_bins, image_size):
        ops = _GEOMETRIC + _ENHANCE + ["Posterize", "Solarize", "AutoContrast", "Equalize", "Invert"]
        return _space(ops, num_bins, *image_size)

    @staticmethod
    def get_params(transform_num):
        """(sub-policy index, a uniform draw per op, a 0/1 sign per op)."""
        policy_id = int(ff.randint(transform_num, size=(1,)).item())
        return policy_id, ff.rand(2), ff.randint(2, size=(2,))

    def forward(self, img):
        fill = _tensor_fill(img, self.fill)
        _, height, width = F.get_dimensions(img)
        policy_id, probs, signs = self.get_params(len(self.policies))
        probs, signs = probs.tolist(), signs.tolist()
        space = self._augmentation_space(10, (height, width))
        for k, (op, p, bin_id) in enumerate(self.policies[policy_id]):
            if probs[k] <= p:
                magnitudes, signed = space[op]
                magnitude = float(magnitudes[bin_id]) if bin_id is not None else 0.0
                if signed and signs[k] == 0:
                    magnitude = -magnitude
                img = _apply_op(img, op, magnitude, self.interpolation, fill)
        return img

    def __repr__(self):
        return "%s(policy=%s, fill=%s)" % (type(self).__name__, self.policy, self.fill)


class RandAugment(nn.Module):
    """num_ops ops drawn uniformly (with replacement), all at strength bin `magnitude`."""

    def __init__(self, num_ops=2, magnitude=9, num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST,
                 fill=None):
        super().__init__()
        self.num_ops, self.magnitude, self.num_magnitude_bins = num_ops, magnitude, num_magnitude_bins
        self.interpolation, self.fill = interpolation, fill

    def _augmentation_space(self, num_bins, image_size):
        return _space(_RAND_OPS, num_bins, *image_size)

    def forward(self, img):
        fill = _tensor_fill(img, self.fill)
        _, height, width = F.get_dimensions(img)
        space = self._augmentation_space(self.num_magnitude_bins, (height, width))
        names = list(space)
        for _ in range(self.num_ops):
            op = names[int(ff.randint(len(names), size=(1,)).item())]
            magnitudes, signed = space[op]
            magnitude = float(magnitudes[self.magnitude]) if magnitudes is not None else 0.0
            img = _apply_op(img, op, _signed(magnitude, signed), self.interpolation, fill)
        return img

    def __repr__(self):
        return "%s(num_ops=%s, magnitude=%s, num_magnitude_bins=%s, interpolation=%s, fill=%s)" % (
            type(self).__name__, self.num_ops, self.magnitude, self.num_magnitude_bins, self.interpolation, self.fill)


class TrivialAugmentWide(nn.Module):
    """One op drawn uniformly, at a strength drawn uniformly from its (wide) bins."""

    def __init__(self, num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__()
        self.num_magnitude_bins, self.interpolation, self.fill = num_magnitude_bins, interpolation, fill

    def _augmentation_space(self, num_bins):
        return _space(_RAND_OPS, num_bins, 0, 0, shear=0.99, translate=(32.0, 32.0), rotate=135.0, enhance=0.99,
                      posterize=(8, 6))

    def forward(self, img):
        fill = _tensor_fill(img, self.fill)
        space = self._augmentation_space(self.num_magnitude_bins)
        names = list(space)
        op = names[int(ff.randint(len(names), size=(1,)).item())]
        magnitudes, signed = space[op]
        magnitude = 0.0
        if magnitudes is not None:
            magnitude = float(magnitudes[int(ff.randint(len(magnitudes), size=(1,)).item())])
        return _apply_op(img, op, _signed(magnitude, signed), self.interpolation, fill)

    def __repr__(self):
        return "%s(num_magnitude_bins=%s, interpolation=%s, fill=%s)" % (
            type(self).__name__, self.num_magnitude_bins, self.interpolation, self.fill)


class AugMix(nn.Module):
    """mixture_width chains of 1-3 (or chain_depth) random ops, mixed with Dirichlet(alpha)
    weights, then mixed with the original by a Beta(alpha, alpha) weight."""
    _PARAMETER_MAX = 10

    def __init__(self, severity=3, mixture_width=3, chain_depth=-1, alpha=1.0, all_ops=True,
                 interpolation=InterpolationMode.BILINEAR, fill=None):
        super().__init__()
        if not 1 <= severity <= self._PARAMETER_MAX:
            raise ValueError("The severity must be between [1, %d]. Got %s instead." % (self._PARAMETER_MAX, severity))
        self.severity, self.mixture_width, self.chain_depth = severity, mixture_width, chain_depth
        self.alpha, self.all_ops, self.interpolation, self.fill = alpha, all_ops, interpolation, fill

    def _augmentation_space(self, num_bins, image_size):
        ops = _GEOMETRIC + ["Posterize", "Solarize", "AutoContrast", "Equalize"] + (_ENHANCE if self.all_ops else [])
        h, w = image_size
        return _space(ops, num_bins, h, w, translate=(w / 3.0, h / 3.0), posterize=(4, 4))

    def _sample_dirichlet(self, params):
        return ff.distributions.Dirichlet(params).sample()

    def forward(self, orig_img):
        is_tensor = F._is_tensor(orig_img)
        fill = _tensor_fill(orig_img, self.fill)
        _, height, width = F.get_dimensions(orig_img)
        img = orig_img if is_tensor else F.pil_to_tensor(orig_img)
        space = self._augmentation_space(self._PARAMETER_MAX, (height, width))
        names = list(space)
        dims = list(img.shape)
        batch = img.reshape(*([1] * max(4 - img.ndim, 0) + dims))
        n = batch.shape[0]
        ones = [1] * (batch.ndim - 1)
        m = self._sample_dirichlet(ff.tensor([self.alpha, self.alpha]).expand(n, 2))
        weights = self._sample_dirichlet(ff.tensor([self.alpha] * self.mixture_width).expand(n, self.mixture_width))
        weights = weights * m[:, 1].reshape(n, 1)
        mix = m[:, 0].reshape(n, *ones) * batch
        for i in range(self.mixture_width):
            aug = batch
            depth = self.chain_depth if self.chain_depth > 0 else int(ff.randint(1, 4, size=(1,)).item())
            for _ in range(depth):
                op = names[int(ff.randint(len(names), size=(1,)).item())]
                magnitudes, signed = space[op]
                magnitude = 0.0
                if magnitudes is not None:
                    magnitude = float(magnitudes[int(ff.randint(self.severity, size=(1,)).item())])
                aug = _apply_op(aug, op, _signed(magnitude, signed), self.interpolation, fill)
            mix = mix + weights[:, i].reshape(n, *ones) * aug
        mix = mix.reshape(*dims).to(img.dtype)
        return mix if is_tensor else F.to_pil_image(mix)

    def __repr__(self):
        return ("%s(severity=%s, mixture_width=%s, chain_depth=%s, alpha=%s, all_ops=%s, interpolation=%s, fill=%s)"
                % (type(self).__name__, self.severity, self.mixture_width, self.chain_depth, self.alpha,
                   self.all_ops, self.interpolation, self.fill))
