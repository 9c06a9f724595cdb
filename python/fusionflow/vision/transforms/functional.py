"""transforms.functional (torchvision 0.14): each function takes a PIL image or a fusionflow
tensor [..., C, H, W] and sends it to functional_pil (PIL does the work) or functional_tensor
(fusionflow ops). What is checked here is what does not depend on the image type."""
import numbers
import warnings
from enum import Enum

import fusionflow as ff
from . import functional_pil as F_pil
from . import functional_tensor as F_t
from ._conversion import pil_to_tensor, to_pil_image, to_tensor  # noqa: F401


class InterpolationMode(Enum):
    """Resampling filters; tensors take NEAREST, BILINEAR and BICUBIC, PIL images all six."""
    NEAREST = "nearest"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


# PIL's resample numbers (Image.Resampling), which 0.14 still takes in place of the enum
pil_modes_mapping = {InterpolationMode.NEAREST: 0, InterpolationMode.LANCZOS: 1, InterpolationMode.BILINEAR: 2,
                     InterpolationMode.BICUBIC: 3, InterpolationMode.BOX: 4, InterpolationMode.HAMMING: 5}
_MODE_OF_PIL_INT = {v: k for k, v in pil_modes_mapping.items()}

_INT_INTERPOLATION_WARNING = ("Argument 'interpolation' of type int is deprecated since 0.13 and will be removed in "
                              "0.15. Please use InterpolationMode enum.")


def _interpolation_modes_from_int(i):
    return _MODE_OF_PIL_INT[i]


def _interpolation(interpolation):
    """The enum for an interpolation argument, taking the deprecated PIL int with a warning."""
    if isinstance(interpolation, int):
        warnings.warn(_INT_INTERPOLATION_WARNING)
        interpolation = _interpolation_modes_from_int(interpolation)
    if not isinstance(interpolation, InterpolationMode):
        raise TypeError("Argument interpolation should be a InterpolationMode")
    return interpolation


def _is_tensor(img):
    return isinstance(img, ff.Tensor)


_is_pil_image = F_pil._is_pil_image


def _pair(size):
    """int or 1-sequence -> (n, n); a 2-sequence stays as it is."""
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, (tuple, list)) and len(size) == 1:
        return size[0], size[0]
    return size


def get_dimensions(img):
    """[channels, height, width]."""
    return F_t.get_dimensions(img) if _is_tensor(img) else F_pil.get_dimensions(img)


def get_image_size(img):
    """[width, height]."""
    return F_t.get_image_size(img) if _is_tensor(img) else F_pil.get_image_size(img)


def get_image_num_channels(img):
    return F_t.get_image_num_channels(img) if _is_tensor(img) else F_pil.get_image_num_channels(img)


def convert_image_dtype(image, dtype=ff.float32):
    """Casts and rescales: floats live in [0, 1], integers in [0, dtype's max]."""
    if not _is_tensor(image):
        raise TypeError("Input img should be Tensor Image")
    return F_t.convert_image_dtype(image, dtype)


def normalize(tensor, mean, std, inplace=False):
    """(x - mean) / std per channel of a float tensor image."""
    if not _is_tensor(tensor):
        raise TypeError("img should be Tensor Image. Got %s" % type(tensor))
    return F_t.normalize(tensor, mean=mean, std=std, inplace=inplace)


# ---- geometry -------------------------------------------------------------------------------
def _compute_resized_output_size(image_size, size, max_size=None):
    """[h, w] for resize: a 1-sequence sets the shorter edge and keeps the aspect ratio
    (the longer edge capped at max_size); a 2-sequence is (h, w) itself."""
    if len(size) != 1:
        return [size[0], size[1]]
    h, w = image_size
    short, long = (w, h) if w <= h else (h, w)
    new_short = size[0]
    new_long = int(new_short * long / short)
    if max_size is not None:
        if max_size <= new_short:
            raise ValueError("max_size = %s must be strictly greater than the requested size for the smaller edge "
                             "size = %s" % (max_size, size))
        if new_long > max_size:
            new_short, new_long = int(max_size * new_short / new_long), max_size
    new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
    return [new_h, new_w]


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=None):
    """PIL resamples with its antialiasing filters always; a tensor only with antialias=True
    (bilinear and bicubic)."""
    interpolation = _interpolation(interpolation)
    if isinstance(size, (list, tuple)):
        if len(size) not in (1, 2):
            raise ValueError("Size must be an int or a 1 or 2 element tuple/list, not a %d element tuple/list"
                             % len(size))
        if max_size is not None and len(size) != 1:
            raise ValueError("max_size should only be passed if size specifies the length of the smaller edge, "
                             "i.e. size should be an int or a sequence of length 1 in torchscript mode.")
    elif not isinstance(size, int):
        raise TypeError("resize: size should be int or sequence. Got %s" % type(size))
    _, h, w = get_dimensions(img)
    out = _compute_resized_output_size((h, w), [size] if isinstance(size, int) else list(size), max_size)
    if not _is_tensor(img):
        if antialias is not None and not antialias:
            warnings.warn("Anti-alias option is always applied for PIL Image input. Argument antialias is ignored.")
        return F_pil.resize(img, out, pil_modes_mapping[interpolation])
    return F_t.resize(img, out, interpolation.value, antialias=antialias)


def pad(img, padding, fill=0, padding_mode="constant"):
    """padding: one int for all sides, (left/right, top/bottom) or (left, top, right, bottom);
    padding_mode: constant (fill), edge, reflect or symmetric."""
    if not _is_tensor(img):
        F_pil._check(img, "pad")
        F_t.check_pad_args(padding, fill, padding_mode, (numbers.Number, tuple, list),
                           (numbers.Number, tuple, list, type(None)))
        return F_pil.pad(img, padding=padding, fill=fill, padding_mode=padding_mode)
    return F_t.pad(img, padding=padding, fill=fill, padding_mode=padding_mode)


def crop(img, top, left, height, width):
    """The box's parts outside the image are zeros."""
    return F_t.crop(img, top, left, height, width) if _is_tensor(img) else F_pil.crop(img, top, left, height, width)


def center_crop(img, output_size):
    """A crop larger than the image pads it with zeros first (the extra odd pixel at the
    right/bottom)."""
    crop_h, crop_w = _pair(output_size)
    _, h, w = get_dimensions(img)
    if crop_w > w or crop_h > h:
        dw, dh = max(crop_w - w, 0), max(crop_h - h, 0)
        img = pad(img, [dw // 2, dh // 2, (dw + 1) // 2, (dh + 1) // 2], fill=0)
        _, h, w = get_dimensions(img)
        if (crop_h, crop_w) == (h, w):
            return img
    return crop(img, int(round((h - crop_h) / 2.0)), int(round((w - crop_w) / 2.0)), crop_h, crop_w)


def resized_crop(img, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR, antialias=None):
    return resize(crop(img, top, left, height, width), size, interpolation, antialias=antialias)


def hflip(img):
    return F_t.hflip(img) if _is_tensor(img) else F_pil.hflip(img)


def vflip(img):
    return F_t.vflip(img) if _is_tensor(img) else F_pil.vflip(img)


def five_crop(img, size):
    """(top-left, top-right, bottom-left, bottom-right, centre) crops."""
    size = _pair(size)
    if len(size) != 2:
        raise ValueError("Please provide only two dimensions (h, w) for size.")
    _, h, w = get_dimensions(img)
    ch, cw = size
    if cw > w or ch > h:
        raise ValueError("Requested crop size %s is bigger than input size %s" % (size, (h, w)))
    return (crop(img, 0, 0, ch, cw), crop(img, 0, w - cw, ch, cw), crop(img, h - ch, 0, ch, cw),
            crop(img, h - ch, w - cw, ch, cw), center_crop(img, [ch, cw]))


def ten_crop(img, size, vertical_flip=False):
    """five_crop of the image, then of its horizontal (or vertical) mirror."""
    size = _pair(size)
    if len(size) != 2:
        raise ValueError("Please provide only two dimensions (h, w) for size.")
    flipped = vflip(img) if vertical_flip else hflip(img)
    return five_crop(img, size) + five_crop(flipped, size)


# ---- colour ---------------------------------------------------------------------------------
def adjust_brightness(img, brightness_factor):
    """Blends with black: 0 black, 1 the original, 2 twice as bright."""
    if not _is_tensor(img):
        return F_pil.adjust_brightness(img, brightness_factor)
    return F_t.adjust_brightness(img, brightness_factor)


def adjust_contrast(img, contrast_factor):
    """Blends with the mean grey level."""
    if not _is_tensor(img):
        return F_pil.adjust_contrast(img, contrast_factor)
    return F_t.adjust_contrast(img, contrast_factor)


def adjust_saturation(img, saturation_factor):
    """Blends with the greyscale image."""
    if not _is_tensor(img):
        return F_pil.adjust_saturation(img, saturation_factor)
    return F_t.adjust_saturation(img, saturation_factor)


def adjust_hue(img, hue_factor):
    """Rotates the hue by hue_factor turns, in [-0.5, 0.5]."""
    if not _is_tensor(img):
        return F_pil.adjust_hue(img, hue_factor)
    return F_t.adjust_hue(img, hue_factor)


def adjust_gamma(img, gamma, gain=1):
    """out = 255 * gain * (in / 255) ** gamma."""
    if not _is_tensor(img):
        return F_pil.adjust_gamma(img, gamma, gain)
    return F_t.adjust_gamma(img, gamma, gain)


def to_grayscale(img, num_output_channels=1):
    """PIL images only (any mode PIL converts to 'L')."""
    if _is_pil_image(img):
        return F_pil.to_grayscale(img, num_output_channels)
    raise TypeError("Input should be PIL Image")


def rgb_to_grayscale(img, num_output_channels=1):
    if not _is_tensor(img):
        return F_pil.to_grayscale(img, num_output_channels)
    return F_t.rgb_to_grayscale(img, num_output_channels)


def erase(img, i, j, h, w, v, inplace=False):
    """Sets img[..., i:i+h, j:j+w] = v (tensors only)."""
    if not _is_tensor(img):
        raise TypeError("img should be Tensor Image. Got %s" % type(img))
    return F_t.erase(img, i, j, h, w, v, inplace=inplace)


def gaussian_blur(img, kernel_size, sigma=None):
    """kernel_size: odd ints (kx, ky) or one int; sigma: (sx, sy), one float, or None for
    0.15 * k + 0.35. A PIL image is blurred as a tensor and turned back, as torchvision does
    (PIL's own GaussianBlur uses another kernel, so its pixels would differ)."""
    if not isinstance(kernel_size, (int, list, tuple)):
        raise TypeError("kernel_size should be int or a sequence of integers. Got %s" % type(kernel_size))
    if isinstance(kernel_size, int):
        kernel_size = [kernel_size, kernel_size]
    if len(kernel_size) != 2:
        raise ValueError("If kernel_size is a sequence its length should be 2. Got %d" % len(kernel_size))
    if any(k % 2 == 0 or k < 0 for k in kernel_size):
        raise ValueError("kernel_size should have odd and positive integers. Got %s" % (kernel_size,))
    if sigma is None:
        sigma = [k * 0.15 + 0.35 for k in kernel_size]
    if not isinstance(sigma, (int, float, list, tuple)):
        raise TypeError("sigma should be either float or sequence of floats. Got %s" % type(sigma))
    if isinstance(sigma, (int, float)):
        sigma = [float(sigma)] * 2
    if len(sigma) == 1:
        sigma = [sigma[0], sigma[0]]
    if len(sigma) != 2:
        raise ValueError("If sigma is a sequence, its length should be 2. Got %d" % len(sigma))
    if any(s <= 0.0 for s in sigma):
        raise ValueError("sigma should have positive values. Got %s" % (sigma,))
    if _is_tensor(img):
        return F_t.gaussian_blur(img, list(kernel_size), list(sigma))
    if not _is_pil_image(img):
        raise TypeError("img should be PIL Image or Tensor. Got %s" % type(img))
    out = F_t.gaussian_blur(pil_to_tensor(img), list(kernel_size), list(sigma))
    return to_pil_image(out, mode=img.mode)



# rotate / affine and the autoaugment-family ops build on the functions above, hence last
from ._affine import _get_inverse_affine_matrix, affine, rotate  # noqa: E402,F401
from ._photometric import (_get_perspective_coeffs, adjust_sharpness, autocontrast,  # noqa: E402,F401
                           elastic_transform, equalize, invert, perspective, posterize, solarize)
