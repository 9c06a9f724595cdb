"""Geometric transforms: Resize, CenterCrop, Pad, RandomCrop, RandomResizedCrop, the flips,
FiveCrop / TenCrop, RandomRotation, RandomAffine. Their get_params draw from fusionflow's
generator in torchvision's order and kind (randint for offsets, uniform_ for continuous
values), so a reader finds the same algorithm and manual_seed repeats it."""
import math
import numbers
import warnings
from collections.abc import Sequence

import fusionflow as ff
from fusionflow import nn
from . import functional as F
from .functional import InterpolationMode
from ._setup import _check_fill, _check_sequence_input, _randint, _setup_angle, _setup_size, _tensor_fill, _uniform

_SIZE_MSG = "Please provide only two dimensions (h, w) for size."


def _mode(interpolation):
    """The enum; an int (PIL's number) is taken with the deprecation warning."""
    if isinstance(interpolation, int):
        warnings.warn(F._INT_INTERPOLATION_WARNING)
        return F._interpolation_modes_from_int(interpolation)
    return interpolation


class Resize(nn.Module):
    """To (h, w), or the shorter edge to `size` keeping the aspect ratio."""

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=None):
        super().__init__()
        if not isinstance(size, (int, Sequence)):
            raise TypeError("Size should be int or sequence. Got %s" % type(size))
        if isinstance(size, Sequence) and len(size) not in (1, 2):
            raise ValueError("If size is a sequence, it should have 1 or 2 values")
        self.size, self.max_size, self.antialias = size, max_size, antialias
        self.interpolation = _mode(interpolation)

    def forward(self, img):
        return F.resize(img, self.size, self.interpolation, self.max_size, self.antialias)

    def __repr__(self):
        return "%s(size=%s, interpolation=%s, max_size=%s, antialias=%s)" % (
            type(self).__name__, self.size, self.interpolation.value, self.max_size, self.antialias)


class CenterCrop(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.size = _setup_size(size, error_msg=_SIZE_MSG)

    def forward(self, img):
        return F.center_crop(img, self.size)

    def __repr__(self):
        return "%s(size=%s)" % (type(self).__name__, self.size)


class Pad(nn.Module):
    def __init__(self, padding, fill=0, padding_mode="constant"):
        super().__init__()
        if not isinstance(padding, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate padding arg")
        if not isinstance(fill, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate fill arg")
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
        if isinstance(padding, Sequence) and len(padding) not in (1, 2, 4):
            raise ValueError("Padding must be an int or a 1, 2, or 4 element tuple, not a %d element tuple"
                             % len(padding))
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def forward(self, img):
        return F.pad(img, self.padding, self.fill, self.padding_mode)

    def __repr__(self):
        return "%s(padding=%s, fill=%s, padding_mode=%s)" % (type(self).__name__, self.padding, self.fill,
                                                             self.padding_mode)


class RandomCrop(nn.Module):
    """A crop at a uniformly random position, after optional padding."""

    @staticmethod
    def get_params(img, output_size):
        _, h, w = F.get_dimensions(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError("Required crop size %s is larger than input image size %s" % ((th, tw), (h, w)))
        if (h, w) == (th, tw):
            return 0, 0, h, w
        return _randint(h - th + 1), _randint(w - tw + 1), th, tw

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        super().__init__()
        self.size = tuple(_setup_size(size, error_msg=_SIZE_MSG))
        self.padding, self.pad_if_needed, self.fill, self.padding_mode = padding, pad_if_needed, fill, padding_mode

    def forward(self, img):
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        _, h, w = F.get_dimensions(img)
        if self.pad_if_needed and w < self.size[1]:
            img = F.pad(img, [self.size[1] - w, 0], self.fill, self.padding_mode)
        if self.pad_if_needed and h < self.size[0]:
            img = F.pad(img, [0, self.size[0] - h], self.fill, self.padding_mode)
        return F.crop(img, *self.get_params(img, self.size))

    def __repr__(self):
        return "%s(size=%s, padding=%s)" % (type(self).__name__, self.size, self.padding)


class RandomHorizontalFlip(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def forward(self, img):
        return F.hflip(img) if ff.rand(1).item() < self.p else img

    def __repr__(self):
        return "%s(p=%s)" % (type(self).__name__, self.p)


class RandomVerticalFlip(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def forward(self, img):
        return F.vflip(img) if ff.rand(1).item() < self.p else img

    def __repr__(self):
        return "%s(p=%s)" % (type(self).__name__, self.p)


class RandomResizedCrop(nn.Module):
    """A crop of random area (fraction `scale` of the image) and aspect ratio (`ratio`,
    drawn log-uniformly), resized to `size`; after 10 misses, a centre crop clamped to ratio."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=None):
        super().__init__()
        self.size = _setup_size(size, error_msg=_SIZE_MSG)
        if not isinstance(scale, Sequence):
            raise TypeError("Scale should be a sequence")
        if not isinstance(ratio, Sequence):
            raise TypeError("Ratio should be a sequence")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            warnings.warn("Scale and ratio should be of kind (min, max)")
        self.interpolation = _mode(interpolation)
        self.antialias, self.scale, self.ratio = antialias, scale, ratio

    @staticmethod
    def get_params(img, scale, ratio):
        _, height, width = F.get_dimensions(img)
        area = height * width
        log_ratio = ff.log(ff.tensor([float(r) for r in ratio])).tolist()
        for _ in range(10):
            target_area = area * _uniform(scale[0], scale[1])
            aspect = ff.exp(ff.empty(1).uniform_(log_ratio[0], log_ratio[1])).item()
            w = int(round(math.sqrt(target_area * aspect)))
            h = int(round(math.sqrt(target_area / aspect)))
            if 0 < w <= width and 0 < h <= height:
                return _randint(height - h + 1), _randint(width - w + 1), h, w
        in_ratio = float(width) / float(height)
        if in_ratio < min(ratio):
            w, h = width, int(round(width / min(ratio)))
        elif in_ratio > max(ratio):
            w, h = int(round(height * max(ratio))), height
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def forward(self, img):
        i, j, h, w = self.get_params(img, self.scale, self.ratio)
        return F.resized_crop(img, i, j, h, w, self.size, self.interpolation, antialias=self.antialias)

    def __repr__(self):
        return "%s(size=%s, scale=%s, ratio=%s, interpolation=%s), antialias=%s)" % (
            type(self).__name__, self.size, tuple(round(s, 4) for s in self.scale),
            tuple(round(r, 4) for r in self.ratio), self.interpolation.value, self.antialias)


class FiveCrop(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.size = _setup_size(size, error_msg=_SIZE_MSG)

    def forward(self, img):
        return F.five_crop(img, self.size)

    def __repr__(self):
        return "%s(size=%s)" % (type(self).__name__, self.size)


class TenCrop(nn.Module):
    def __init__(self, size, vertical_flip=False):
        super().__init__()
        self.size = _setup_size(size, error_msg=_SIZE_MSG)
        self.vertical_flip = vertical_flip

    def forward(self, img):
        return F.ten_crop(img, self.size, self.vertical_flip)

    def __repr__(self):
        return "%s(size=%s, vertical_flip=%s)" % (type(self).__name__, self.size, self.vertical_flip)


class RandomRotation(nn.Module):
    """Rotation by an angle drawn uniformly from `degrees` ([-d, d] for a number d)."""

    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=0):
        super().__init__()
        self.interpolation = _mode(interpolation)
        self.degrees = _setup_angle(degrees, name="degrees", req_sizes=(2,))
        if center is not None:
            _check_sequence_input(center, "center", req_sizes=(2,))
        self.center, self.expand = center, expand
        self.fill = _check_fill(fill)

    @staticmethod
    def get_params(degrees):
        return _uniform(degrees[0], degrees[1])

    def forward(self, img):
        channels = F.get_dimensions(img)[0]
        fill = _tensor_fill(self.fill, channels) if F._is_tensor(img) else self.fill
        angle = self.get_params(self.degrees)
        return F.rotate(img, angle, self.interpolation, self.expand, self.center, fill)

    def __repr__(self):
        s = "%s(degrees=%s, interpolation=%s, expand=%s" % (type(self).__name__, self.degrees,
                                                            self.interpolation.value, self.expand)
        if self.center is not None:
            s += ", center=%s" % (self.center,)
        if self.fill is not None:
            s += ", fill=%s" % (self.fill,)
        return s + ")"


class RandomAffine(nn.Module):
    """Rotation, translation (fractions of the size), scale and shear drawn uniformly from
    their ranges, applied about the image centre."""

    def __init__(self, degrees, translate=None, scale=None, shear=None, interpolation=InterpolationMode.NEAREST,
                 fill=0, center=None):
        super().__init__()
        self.interpolation = _mode(interpolation)
        self.degrees = _setup_angle(degrees, name="degrees", req_sizes=(2,))
        if translate is not None:
            _check_sequence_input(translate, "translate", req_sizes=(2,))
            if not all(0.0 <= t <= 1.0 for t in translate):
                raise ValueError("translation values should be between 0 and 1")
        self.translate = translate
        if scale is not None:
            _check_sequence_input(scale, "scale", req_sizes=(2,))
            if any(s <= 0 for s in scale):
                raise ValueError("scale values should be positive")
        self.scale = scale
        self.shear = None if shear is None else _setup_angle(shear, name="shear", req_sizes=(2, 4))
        self.fill = _check_fill(fill)
        if center is not None:
            _check_sequence_input(center, "center", req_sizes=(2,))
        self.center = center

    @staticmethod
    def get_params(degrees, translate, scale_ranges, shears, img_size):
        """img_size is [width, height]."""
        angle = _uniform(degrees[0], degrees[1])
        if translate is not None:
            max_dx, max_dy = float(translate[0] * img_size[0]), float(translate[1] * img_size[1])
            translations = (int(round(_uniform(-max_dx, max_dx))), int(round(_uniform(-max_dy, max_dy))))
        else:
            translations = (0, 0)
        scale = 1.0 if scale_ranges is None else _uniform(scale_ranges[0], scale_ranges[1])
        shear_x = shear_y = 0.0
        if shears is not None:
            shear_x = _uniform(shears[0], shears[1])
            if len(shears) == 4:
                shear_y = _uniform(shears[2], shears[3])
        return angle, translations, scale, (shear_x, shear_y)

    def forward(self, img):
        channels, height, width = F.get_dimensions(img)
        fill = _tensor_fill(self.fill, channels) if F._is_tensor(img) else self.fill
        params = self.get_params(self.degrees, self.translate, self.scale, self.shear, [width, height])
        return F.affine(img, *params, interpolation=self.interpolation, fill=fill, center=self.center)

    def __repr__(self):
        s = "%s(degrees=%s" % (type(self).__name__, self.degrees)
        for name in ("translate", "scale", "shear"):
            if getattr(self, name) is not None:
                s += ", %s=%s" % (name, getattr(self, name))
        if self.interpolation != InterpolationMode.NEAREST:
            s += ", interpolation=%s" % self.interpolation.value
        if self.fill != 0:
            s += ", fill=%s" % (self.fill,)
        if self.center is not None:
            s += ", center=%s" % (self.center,)
        return s + ")"



class RandomPerspective(nn.Module):
    """With probability p, a perspective warp moving each corner inwards by up to
    distortion_scale of half the image size."""

    def __init__(self, distortion_scale=0.5, p=0.5, interpolation=InterpolationMode.BILINEAR, fill=0):
        super().__init__()
        self.p, self.distortion_scale = p, distortion_scale
        self.interpolation = _mode(interpolation)
        self.fill = _check_fill(fill)

    def forward(self, img):
        channels, height, width = F.get_dimensions(img)
        fill = _tensor_fill(self.fill, channels) if F._is_tensor(img) else self.fill
        if ff.rand(1).item() < self.p:
            start, end = self.get_params(width, height, self.distortion_scale)
            return F.perspective(img, start, end, self.interpolation, fill)
        return img

    @staticmethod
    def get_params(width, height, distortion_scale):
        """([tl, tr, br, bl] of the image, the same corners moved inwards at random)."""
        dx, dy = int(distortion_scale * (width // 2)), int(distortion_scale * (height // 2))

        def near(lo_edge, d, size):  # within d pixels of an edge, drawn as torchvision draws it
            return _randint(d + 1) if lo_edge else int(ff.randint(size - d - 1, size, size=(1,)).item())
        tl = [near(True, dx, width), near(True, dy, height)]
        tr = [near(False, dx, width), near(True, dy, height)]
        br = [near(False, dx, width), near(False, dy, height)]
        bl = [near(True, dx, width), near(False, dy, height)]
        start = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
        return start, [tl, tr, br, bl]

    def __repr__(self):
        return "%s(p=%s)" % (type(self).__name__, self.p)


class ElasticTransform(nn.Module):
    """Displaces pixels by smoothed uniform noise: strength alpha, smoothness sigma (pixels)."""

    def __init__(self, alpha=50.0, sigma=5.0, interpolation=InterpolationMode.BILINEAR, fill=0):
        super().__init__()
        self.alpha = self._pair_of_floats(alpha, "alpha")
        self.sigma = self._pair_of_floats(sigma, "sigma")
        if isinstance(interpolation, int):
            warnings.warn("Argument interpolation should be of type InterpolationMode instead of int. "
                          "Please, use InterpolationMode enum.")
            interpolation = F._interpolation_modes_from_int(interpolation)
        self.interpolation = interpolation
        if not isinstance(fill, (int, float)):
            raise TypeError("fill should be int or float. Got %s" % type(fill))
        self.fill = fill

    @staticmethod
    def _pair_of_floats(value, name):
        if not isinstance(value, (float, Sequence)):
            raise TypeError("%s should be float or a sequence of floats. Got %s" % (name, type(value)))
        if isinstance(value, Sequence):
            if len(value) not in (1, 2):
                raise ValueError("If %s is a sequence its length should be 2. Got %d" % (name, len(value)))
            if not all(isinstance(v, float) for v in value):
                raise TypeError("%s should be a sequence of floats. Got %s" % (name, [type(v) for v in value]))
            return [value[0], value[-1]]
        return [float(value), float(value)]

    @staticmethod
    def get_params(alpha, sigma, size):
        """The [1, H, W, 2] displacement: per axis, uniform noise in [-1, 1] blurred with a
        Gaussian of `sigma` and scaled by alpha / size (grid_sample units)."""
        fields = []
        for k in range(2):
            d = ff.rand(1, 1, *size) * 2 - 1
            if sigma[k] > 0.0:
                ks = int(8 * sigma[k] + 1)
                ks += 1 - ks % 2  # odd
                d = F.gaussian_blur(d, [ks, ks], list(sigma))
            fields.append(d * alpha[k] / size[k])
        return ff.cat(fields, dim=1).permute(0, 2, 3, 1)

    def forward(self, tensor):
        _, height, width = F.get_dimensions(tensor)
        displacement = self.get_params(self.alpha, self.sigma, [height, width])
        return F.elastic_transform(tensor, displacement, self.interpolation, self.fill)

    def __repr__(self):
        return "%s(alpha=%s, sigma=%s, interpolation=%s, fill=%s)" % (
            type(self).__name__, self.alpha, self.sigma, self.interpolation.value, self.fill)
