"""transforms.functional's perspective, elastic_transform and the photometric ops the
autoaugment policies use (invert, posterize, solarize, adjust_sharpness, autocontrast,
equalize): PIL images through ImageOps / ImageEnhance / Image.transform, tensors through
functional_tensor."""
import warnings

import numpy as np

import fusionflow as ff
from . import functional_pil as F_pil
from . import functional_tensor as F_t
from ._conversion import pil_to_tensor, to_pil_image
from .functional import (InterpolationMode, _interpolation, _interpolation_modes_from_int, _is_tensor,
                         pil_modes_mapping)


def _get_perspective_coeffs(startpoints, endpoints):
    """(a, b, c, d, e, f, g, h) of the map endpoints -> startpoints,
    (x, y) -> ((a x + b y + c) / (g x + h y + 1), (d x + e y + f) / (g x + h y + 1)): the
    8x8 linear system of the four corner pairs, solved by least squares."""
    rows, rhs = [], []
    for (x, y), (u, v) in zip(endpoints, startpoints):
        rows.append([x, y, 1, 0, 0, 0, -u * x, -u * y])
        rows.append([0, 0, 0, x, y, 1, -v * x, -v * y])
        rhs += [u, v]
    a = np.array(rows, dtype=np.float64)
    return np.linalg.lstsq(a, np.array(rhs, dtype=np.float64), rcond=None)[0].astype(np.float32).tolist()


def perspective(img, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR, fill=None):
    """Maps the four corners `startpoints` (top-left, top-right, bottom-right, bottom-left)
    to `endpoints`."""
    coeffs = _get_perspective_coeffs(startpoints, endpoints)
    interpolation = _interpolation(interpolation)
    if not _is_tensor(img):
        return F_pil.perspective(img, coeffs, interpolation=pil_modes_mapping[interpolation], fill=fill)
    return F_t.perspective(img, coeffs, interpolation=interpolation.value, fill=fill)


def elastic_transform(img, displacement, interpolation=InterpolationMode.BILINEAR, fill=None):
    """Moves every pixel by `displacement` ([1, H, W, 2], in grid_sample's [-1, 1] units);
    a PIL image is warped as a tensor and turned back, as torchvision does."""
    if isinstance(interpolation, int):
        warnings.warn("Argument interpolation should be of type InterpolationMode instead of int. "
                      "Please, use InterpolationMode enum.")
        interpolation = _interpolation_modes_from_int(interpolation)
    if not isinstance(displacement, ff.Tensor):
        raise TypeError("Argument displacement should be a Tensor")
    t_img = img
    if not _is_tensor(img):
        if not F_pil._is_pil_image(img):
            raise TypeError("img should be PIL Image or Tensor. Got %s" % type(img))
        t_img = pil_to_tensor(img)
    expected = (1, t_img.shape[-2], t_img.shape[-1], 2)
    if tuple(displacement.shape) != expected:
        raise ValueError("Argument displacement shape should be %s, but given %s" % (expected,
                                                                                     tuple(displacement.shape)))
    out = F_t.elastic_transform(t_img, displacement, interpolation=interpolation.value, fill=fill)
    return out if _is_tensor(img) else to_pil_image(out, mode=img.mode)


def invert(img):
    """max - value on each channel."""
    return F_t.invert(img) if _is_tensor(img) else F_pil.invert(img)


def posterize(img, bits):
    """Keeps the top `bits` (0-8) bits of each channel."""
    if not 0 <= bits <= 8:
        raise ValueError("The number if bits should be between 0 and 8. Got %s" % bits)
    return F_t.posterize(img, bits) if _is_tensor(img) else F_pil.posterize(img, bits)


def solarize(img, threshold):
    """Inverts the pixels at or above threshold."""
    return F_t.solarize(img, threshold) if _is_tensor(img) else F_pil.solarize(img, threshold)


def adjust_sharpness(img, sharpness_factor):
    return F_t.adjust_sharpness(img, sharpness_factor) if _is_tensor(img) else \
        F_pil.adjust_sharpness(img, sharpness_factor)


def autocontrast(img):
    return F_t.autocontrast(img) if _is_tensor(img) else F_pil.autocontrast(img)


def equalize(img):
    return F_t.equalize(img) if _is_tensor(img) else F_pil.equalize(img)
