"""The PIL side of transforms.functional: every operation here is a PIL call (Image.resize,
crop, rotate, transform, ImageOps, ImageEnhance), so a PIL image comes out pixel for pixel as
torchvision's does, since torchvision makes the same calls. Argument checking that does not
depend on the image type lives in functional.py."""
import numbers

import numpy as np
from PIL import Image, ImageEnhance, ImageOps

_FLIP_LR = getattr(Image, "Transpose", Image).FLIP_LEFT_RIGHT
_FLIP_TB = getattr(Image, "Transpose", Image).FLIP_TOP_BOTTOM
_AFFINE = getattr(Image, "Transform", Image).AFFINE


def _is_pil_image(img):
    return isinstance(img, Image.Image)


def _check(img, fn):
    if not _is_pil_image(img):
        raise TypeError("%s: img should be PIL Image. Got %s" % (fn, type(img)))


def get_dimensions(img):
    _check(img, "get_dimensions")
    width, height = img.size
    return [len(img.getbands()), height, width]


def get_image_size(img):
    _check(img, "get_image_size")
    return list(img.size)


def get_image_num_channels(img):
    _check(img, "get_image_num_channels")
    return len(img.getbands())


def hflip(img):
    _check(img, "hflip")
    return img.transpose(_FLIP_LR)


def vflip(img):
    _check(img, "vflip")
    return img.transpose(_FLIP_TB)


def crop(img, top, left, height, width):
    """PIL pads a box reaching outside the image with zeros, as the tensor crop does."""
    _check(img, "crop")
    return img.crop((left, top, left + width, top + height))


def resize(img, size, interpolation):
    """size is [h, w]; interpolation a PIL resample filter number."""
    _check(img, "resize")
    if not (isinstance(size, (list, tuple)) and len(size) == 2):
        raise TypeError("resize: got inappropriate size arg: %s" % (size,))
    return img.resize((int(size[1]), int(size[0])), interpolation)


def _parse_fill(fill, img, name="fillcolor"):
    """The fill as PIL wants it: one value per band (a tuple when there are several), ints
    except for float ('F') images."""
    bands = get_image_num_channels(img)
    if fill is None:
        fill = 0
    if isinstance(fill, numbers.Number) and bands > 1:
        fill = (fill,) * bands
    if isinstance(fill, (list, tuple)):
        if len(fill) != bands:
            raise ValueError("The number of elements in 'fill' does not match the number of channels of the "
                             "image (%d != %d)" % (len(fill), bands))
        fill = tuple(fill)
    if img.mode != "F":
        fill = tuple(int(v) for v in fill) if isinstance(fill, tuple) else int(fill)
    return {name: fill}


def _ltrb(padding):
    if isinstance(padding, int):
        return [padding] * 4
    if len(padding) == 1:
        return [padding[0]] * 4
    if len(padding) == 2:
        return [padding[0], padding[1], padding[0], padding[1]]
    return list(padding)


def pad(img, padding, fill=0, padding_mode="constant"):
    """constant: ImageOps.expand; edge/reflect/symmetric: numpy.pad of the pixel array (a
    negative padding crops that side first)."""
    _check(img, "pad")
    if isinstance(padding, (list, tuple)) and len(padding) == 1:
        padding = padding[0]
    if padding_mode == "constant":
        palette = img.getpalette() if img.mode == "P" else None
        border = padding if isinstance(padding, int) else tuple(padding)
        out = ImageOps.expand(img, border=border, **_parse_fill(fill, img, name="fill"))
        if palette is not None:
            out.putpalette(palette)
        return out
    left, top, right, bottom = _ltrb(padding)
    if min(left, top, right, bottom) < 0:
        cl, ct, cr, cb = (max(-v, 0) for v in (left, top, right, bottom))
        img = img.crop((cl, ct, img.width - cr, img.height - cb))
        left, top, right, bottom = (max(v, 0) for v in (left, top, right, bottom))
    arr = np.asarray(img)
    widths = [(top, bottom), (left, right)] + [(0, 0)] * (arr.ndim - 2)
    out = Image.fromarray(np.pad(arr, widths, mode=padding_mode))
    if img.mode == "P":
        out.putpalette(img.getpalette())
    return out


def rotate(img, angle, interpolation=0, expand=False, center=None, fill=None):
    _check(img, "rotate")
    return img.rotate(angle, interpolation, expand, center, **_parse_fill(fill, img))


def affine(img, matrix, interpolation=0, fill=None):
    """matrix: the inverse affine map (output pixel -> input pixel), six numbers."""
    _check(img, "affine")
    return img.transform(img.size, _AFFINE, matrix, interpolation, **_parse_fill(fill, img))


def adjust_brightness(img, factor):
    _check(img, "adjust_brightness")
    return ImageEnhance.Brightness(img).enhance(factor)


def adjust_contrast(img, factor):
    _check(img, "adjust_contrast")
    return ImageEnhance.Contrast(img).enhance(factor)


def adjust_saturation(img, factor):
    _check(img, "adjust_saturation")
    return ImageEnhance.Color(img).enhance(factor)


def adjust_hue(img, hue_factor):
    """Shifts PIL's 8-bit HSV hue band cyclically (modulo 256); single-band images have no hue."""
    if not -0.5 <= hue_factor <= 0.5:
        raise ValueError("hue_factor (%s) is not in [-0.5, 0.5]." % hue_factor)
    _check(img, "adjust_hue")
    if img.mode in ("L", "1", "I", "F"):
        return img
    h, s, v = img.convert("HSV").split()
    shift = int(hue_factor * 255) % 256  # the 8-bit wrap of the truncated shift
    h = h.point(lambda x: (x + shift) % 256)
    return Image.merge("HSV", (h, s, v)).convert(img.mode)


def adjust_gamma(img, gamma, gain=1.0):
    """A 256-entry lookup table per RGB band through Image.point."""
    _check(img, "adjust_gamma")
    if gamma < 0:
        raise ValueError("Gamma should be a non-negative real number")
    mode = img.mode
    table = [int((256 - 1e-3) * gain * (v / 255.0) ** gamma) for v in range(256)]
    return img.convert("RGB").point(table * 3).convert(mode)


def to_grayscale(img, num_output_channels):
    _check(img, "to_grayscale")
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    gray = img.convert("L")
    return gray if num_output_channels == 1 else Image.merge("RGB", (gray, gray, gray))


_PERSPECTIVE = getattr(Image, "Transform", Image).PERSPECTIVE


def perspective(img, coeffs, interpolation=3, fill=None):
    """coeffs: the 8 numbers of the output -> input projective map."""
    _check(img, "perspective")
    return img.transform(img.size, _PERSPECTIVE, coeffs, interpolation, **_parse_fill(fill, img))


def invert(img):
    _check(img, "invert")
    return ImageOps.invert(img)


def posterize(img, bits):
    _check(img, "posterize")
    return ImageOps.posterize(img, bits)


def solarize(img, threshold):
    _check(img, "solarize")
    return ImageOps.solarize(img, threshold)


def adjust_sharpness(img, factor):
    _check(img, "adjust_sharpness")
    return ImageEnhance.Sharpness(img).enhance(factor)


def autocontrast(img):
    _check(img, "autocontrast")
    return ImageOps.autocontrast(img)


def equalize(img):
    _check(img, "equalize")
    return ImageOps.equalize(img)
