"""Colour and pixel-value transforms: ColorJitter, Grayscale, RandomGrayscale, GaussianBlur,
RandomErasing. Random factors come from fusionflow's generator (uniform_, randperm, randint),
drawn in torchvision's order."""
import math
import numbers
import warnings
from collections.abc import Sequence

import fusionflow as ff
from fusionflow import nn
from . import functional as F
from ._setup import _randint, _setup_size, _uniform


class ColorJitter(nn.Module):
    """Brightness, contrast, saturation and hue factors drawn uniformly from their ranges and
    applied in a random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__()
        self.brightness = self._check_input(brightness, "brightness")
        self.contrast = self._check_input(contrast, "contrast")
        self.saturation = self._check_input(saturation, "saturation")
        self.hue = self._check_input(hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    def _check_input(self, value, name, center=1, bound=(0, float("inf")), clip_first_on_zero=True):
        """A number v -> [center - v, center + v] (clipped at 0); a pair within bound as is;
        a range that is only the centre -> None (that adjustment is skipped)."""
        if isinstance(value, numbers.Number):
            if value < 0:
                raise ValueError("If %s is a single number, it must be non negative." % name)
            value = [center - float(value), center + float(value)]
            if clip_first_on_zero:
                value[0] = max(value[0], 0.0)
        elif isinstance(value, (tuple, list)) and len(value) == 2:
            if not bound[0] <= value[0] <= value[1] <= bound[1]:
                raise ValueError("%s values should be between %s" % (name, bound))
        else:
            raise TypeError("%s should be a single number or a list/tuple with length 2." % name)
        return None if value[0] == value[1] == center else value

    @staticmethod
    def get_params(brightness, contrast, saturation, hue):
        """(order of the four adjustments, then each factor or None)."""
        fn_idx = ff.randperm(4)
        factors = [None if r is None else _uniform(r[0], r[1]) for r in (brightness, contrast, saturation, hue)]
        return (fn_idx, *factors)

    def forward(self, img):
        fn_idx, *factors = self.get_params(self.brightness, self.contrast, self.saturation, self.hue)
        adjust = (F.adjust_brightness, F.adjust_contrast, F.adjust_saturation, F.adjust_hue)
        for k in fn_idx.tolist():
            if factors[k] is not None:
                img = adjust[k](img, factors[k])
        return img

    def __repr__(self):
        return "%s(brightness=%s, contrast=%s, saturation=%s, hue=%s)" % (
            type(self).__name__, self.brightness, self.contrast, self.saturation, self.hue)


class Grayscale(nn.Module):
    def __init__(self, num_output_channels=1):
        super().__init__()
        self.num_output_channels = num_output_channels

    def forward(self, img):
        return F.rgb_to_grayscale(img, num_output_channels=self.num_output_channels)

    def __repr__(self):
        return "%s(num_output_channels=%s)" % (type(self).__name__, self.num_output_channels)


class RandomGrayscale(nn.Module):
    """Greyscale with probability p, keeping the number of channels."""

    def __init__(self, p=0.1):
        super().__init__()
        self.p = p

    def forward(self, img):
        channels = F.get_dimensions(img)[0]
        if ff.rand(1).item() < self.p:
            return F.rgb_to_grayscale(img, num_output_channels=channels)
        return img

    def __repr__(self):
        return "%s(p=%s)" % (type(self).__name__, self.p)


class GaussianBlur(nn.Module):
    """A Gaussian blur whose sigma is drawn uniformly from the (min, max) range."""

    def __init__(self, kernel_size, sigma=(0.1, 2.0)):
        super().__init__()
        self.kernel_size = _setup_size(kernel_size, "Kernel size should be a tuple/list of two integers")
        if any(k <= 0 or k % 2 == 0 for k in self.kernel_size):
            raise ValueError("Kernel size value should be an odd and positive number.")
        if isinstance(sigma, numbers.Number):
            if sigma <= 0:
                raise ValueError("If sigma is a single number, it must be positive.")
            sigma = (sigma, sigma)
        elif isinstance(sigma, Sequence) and len(sigma) == 2:
            if not 0.0 < sigma[0] <= sigma[1]:
                raise ValueError("sigma values should be positive and of the form (min, max).")
        else:
            raise ValueError("sigma should be a single number or a list/tuple with length 2.")
        self.sigma = sigma

    @staticmethod
    def get_params(sigma_min, sigma_max):
        return _uniform(sigma_min, sigma_max)

    def forward(self, img):
        sigma = self.get_params(self.sigma[0], self.sigma[1])
        return F.gaussian_blur(img, self.kernel_size, [sigma, sigma])

    def __repr__(self):
        return "%s(kernel_size=%s, sigma=%s)" % (type(self).__name__, self.kernel_size, self.sigma)


class RandomErasing(nn.Module):
    """With probability p, sets a random rectangle (area fraction `scale`, aspect `ratio`) of
    a tensor image to `value`: a number, one per channel, or 'random' (normal noise)."""

    def __init__(self, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False):
        super().__init__()
        if not isinstance(value, (numbers.Number, str, tuple, list)):
            raise TypeError("Argument value should be either a number or str or a sequence")
        if isinstance(value, str) and value != "random":
            raise ValueError("If value is str, it should be 'random'")
        if not isinstance(scale, (tuple, list)):
            raise TypeError("Scale should be a sequence")
        if not isinstance(ratio, (tuple, list)):
            raise TypeError("Ratio should be a sequence")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            warnings.warn("Scale and ratio should be of kind (min, max)")
        if scale[0] < 0 or scale[1] > 1:
            raise ValueError("Scale should be between 0 and 1")
        if p < 0 or p > 1:
            raise ValueError("Random erasing probability should be between 0 and 1")
        self.p, self.scale, self.ratio, self.value, self.inplace = p, scale, ratio, value, inplace

    @staticmethod
    def get_params(img, scale, ratio, value=None):
        """(i, j, h, w, v); after 10 rectangles that do not fit, the whole image with itself."""
        c, img_h, img_w = img.shape[-3], img.shape[-2], img.shape[-1]
        area = img_h * img_w
        log_ratio = ff.log(ff.tensor([float(r) for r in ratio])).tolist()
        for _ in range(10):
            erase_area = area * _uniform(scale[0], scale[1])
            aspect = ff.exp(ff.empty(1).uniform_(log_ratio[0], log_ratio[1])).item()
            h = int(round(math.sqrt(erase_area * aspect)))
            w = int(round(math.sqrt(erase_area / aspect)))
            if not (h < img_h and w < img_w):
                continue
            if value is None:
                v = ff.empty(c, h, w, dtype=ff.float32).normal_()
            else:
                v = ff.tensor(value).reshape(-1, 1, 1)
            return _randint(img_h - h + 1), _randint(img_w - w + 1), h, w, v
        return 0, 0, img_h, img_w, img

    def forward(self, img):
        if not isinstance(img, ff.Tensor):
            raise TypeError("RandomErasing: img should be a Tensor image (put it after ToTensor). Got %s" % type(img))
        if ff.rand(1).item() < self.p:
            if isinstance(self.value, (int, float)):
                value = [self.value]
            elif isinstance(self.value, str):
                value = None
            else:
                value = list(self.value)
            if value is not None and len(value) not in (1, img.shape[-3]):
                raise ValueError("If value is a sequence, it should have either a single value or %d (number of "
                                 "input channels)" % img.shape[-3])
            i, j, h, w, v = self.get_params(img, scale=self.scale, ratio=self.ratio, value=value)
            return F.erase(img, i, j, h, w, v, self.inplace)
        return img

    def __repr__(self):
        return "%s(p=%s, scale=%s, ratio=%s, value=%s, inplace=%s)" % (
            type(self).__name__, self.p, self.scale, self.ratio, self.value, self.inplace)


class _RandomlyApplied(nn.Module):
    """Applies `_op` with probability p (one ff.rand draw per call)."""
    _arg = None

    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def _op(self, img):
        raise NotImplementedError

    def forward(self, img):
        return self._op(img) if ff.rand(1).item() < self.p else img

    def __repr__(self):
        if self._arg is None:
            return "%s(p=%s)" % (type(self).__name__, self.p)
        return "%s(%s=%s,p=%s)" % (type(self).__name__, self._arg, getattr(self, self._arg), self.p)


class RandomInvert(_RandomlyApplied):
    def _op(self, img):
        return F.invert(img)


class RandomPosterize(_RandomlyApplied):
    _arg = "bits"

    def __init__(self, bits, p=0.5):
        super().__init__(p)
        self.bits = bits

    def _op(self, img):
        return F.posterize(img, self.bits)


class RandomSolarize(_RandomlyApplied):
    _arg = "threshold"

    def __init__(self, threshold, p=0.5):
        super().__init__(p)
        self.threshold = threshold

    def _op(self, img):
        return F.solarize(img, self.threshold)


class RandomAdjustSharpness(_RandomlyApplied):
    _arg = "sharpness_factor"

    def __init__(self, sharpness_factor, p=0.5):
        super().__init__(p)
        self.sharpness_factor = sharpness_factor

    def _op(self, img):
        return F.adjust_sharpness(img, self.sharpness_factor)


class RandomAutocontrast(_RandomlyApplied):
    def _op(self, img):
        return F.autocontrast(img)


class RandomEqualize(_RandomlyApplied):
    def _op(self, img):
        return F.equalize(img)
