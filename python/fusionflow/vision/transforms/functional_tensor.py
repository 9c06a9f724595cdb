"""The tensor side of transforms.functional, on fusionflow tensors shaped [..., C, H, W]
(uint8 or float). Resampling goes through fusionflow's F.interpolate / F.grid_sample, blur
through F.conv2d, in the order torchvision does it so the float rounding (and the rounding
back to integers) lands where torchvision's does. The colour ops are in _tensor_color.py and
re-exported at the end."""
import fusionflow as ff
import fusionflow.nn.functional as NF

_INT_MAX = {ff.uint8: 255, ff.int8: 2 ** 7 - 1, ff.int16: 2 ** 15 - 1, ff.int32: 2 ** 31 - 1, ff.int64: 2 ** 63 - 1}


def _check_image(img, fn="transforms"):
    if not isinstance(img, ff.Tensor):
        raise TypeError("%s: img should be a fusionflow Tensor. Got %s" % (fn, type(img)))
    if img.ndim < 2:
        raise TypeError("Tensor is not a torch image.")


def _check_channels(img, permitted):
    c = get_dimensions(img)[0]
    if c not in permitted:
        raise TypeError("Input image tensor permitted channel values are %s, but found %d" % (permitted, c))


def get_dimensions(img):
    _check_image(img, "get_dimensions")
    return [1 if img.ndim == 2 else img.shape[-3], img.shape[-2], img.shape[-1]]


def get_image_size(img):
    _check_image(img, "get_image_size")
    return [img.shape[-1], img.shape[-2]]


def get_image_num_channels(img):
    return get_dimensions(img)[0]


def _max_value(dtype):
    return _INT_MAX.get(dtype, 1)


def _float_of(img):
    return img.dtype if img.is_floating_point() else ff.float32


class _Batched:
    """Views an image as the 4-d float batch that interpolate / grid_sample / conv2d want, and
    turns results back: leading dims restored, integer images rounded (not truncated) back."""

    def __init__(self, img, work_dtypes):
        self.shape, self.dtype = tuple(img.shape), img.dtype
        x = img.reshape(1, 1, *self.shape) if img.ndim == 2 else img.reshape(-1, *self.shape[-3:])
        self.cast = img.dtype not in work_dtypes
        self.x = x.to(work_dtypes[0]) if self.cast else x

    def back(self, y):
        y = y.reshape(*self.shape[:-2], *y.shape[-2:])
        if self.cast:
            if not self.dtype.is_floating_point:
                y = y.round()
            y = y.to(self.dtype)
        return y


def convert_image_dtype(image, dtype=ff.float32):
    if image.dtype == dtype:
        return image
    if image.is_floating_point():
        if dtype.is_floating_point:
            return image.to(dtype)
        if (image.dtype == ff.float32 and dtype in (ff.int32, ff.int64)) or \
                (image.dtype == ff.float64 and dtype == ff.int64):
            raise RuntimeError("The cast from %s to %s cannot be performed safely." % (image.dtype, dtype))
        # scale by just under max+1 so that 1.0 lands on max and the bins stay equal in width
        return (image * (_max_value(dtype) + 1.0 - 1e-3)).to(dtype)
    in_max = _max_value(image.dtype)
    if dtype.is_floating_point:
        return image.to(dtype) / float(in_max)
    out_max = _max_value(dtype)
    if in_max > out_max:
        return (image // ((in_max + 1) // (out_max + 1))).to(dtype)
    return image.to(dtype) * ((out_max + 1) // (in_max + 1))


def hflip(img):
    _check_image(img, "hflip")
    return img.flip(-1)


def vflip(img):
    _check_image(img, "vflip")
    return img.flip(-2)


def crop(img, top, left, height, width):
    """Parts of the box outside the image come out as zeros (padding), as with PIL."""
    _check_image(img, "crop")
    _, h, w = get_dimensions(img)
    bottom, right = top + height, left + width
    if left < 0 or top < 0 or right > w or bottom > h:
        inside = img[..., max(top, 0):max(bottom, 0), max(left, 0):max(right, 0)]
        ltrb = [max(-left + min(0, right), 0), max(-top + min(0, bottom), 0),
                max(right - max(w, left), 0), max(bottom - max(h, top), 0)]
        return pad(inside, ltrb, fill=0)
    return img[..., top:bottom, left:right]


def _parse_padding(padding):
    """-> [left, right, top, bottom] (F.pad's order for the last two dims)."""
    if isinstance(padding, int):
        return [padding] * 4
    if len(padding) == 1:
        return [padding[0]] * 4
    if len(padding) == 2:
        return [padding[0], padding[0], padding[1], padding[1]]
    return [padding[0], padding[2], padding[1], padding[3]]


def _pad_symmetric(img, lrtb):
    """Mirror padding that repeats the edge pixel: an index_select of mirrored indices."""
    if min(lrtb) < 0:
        cl, cr, ct, cb = (max(-v, 0) for v in lrtb)
        img = img[..., ct:img.shape[-2] - cb, cl:img.shape[-1] - cr]
        lrtb = [max(v, 0) for v in lrtb]
    left, right, top, bottom = lrtb

    def mirrored(n, before, after):  # period 2n: 0..n-1 then n-1..0
        return ff.tensor([m if m < n else 2 * n - 1 - m for m in (i % (2 * n) for i in range(-before, n + after))],
                         dtype=ff.int64)

    out = img.index_select(-1, mirrored(img.shape[-1], left, right))
    return out.index_select(-2, mirrored(img.shape[-2], top, bottom))


def check_pad_args(padding, fill, padding_mode, padding_types, fill_types):
    """torchvision's argument checks of pad, shared by the PIL and the tensor paths (which
    take different padding and fill types)."""
    if not isinstance(padding, padding_types):
        raise TypeError("Got inappropriate padding arg")
    if not isinstance(fill, fill_types):
        raise TypeError("Got inappropriate fill arg")
    if not isinstance(padding_mode, str):
        raise TypeError("Got inappropriate padding_mode arg")
    if isinstance(padding, (tuple, list)) and len(padding) not in (1, 2, 4):
        raise ValueError("Padding must be an int or a 1, 2, or 4 element tuple, not a %d element tuple"
                         % len(padding))
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")


def pad(img, padding, fill=0, padding_mode="constant"):
    _check_image(img, "pad")
    if fill is None:
        fill = 0
    check_pad_args(padding, fill, padding_mode, (int, tuple, list), (int, float))
    p = _parse_padding(padding)
    if padding_mode == "symmetric":
        return _pad_symmetric(img, p)
    if padding_mode == "constant":
        return NF.pad(img, p, mode="constant", value=float(fill))
    b = _Batched(img, (ff.float32, ff.float64))  # reflect / replicate work on float batches
    mode = "replicate" if padding_mode == "edge" else "reflect"
    return b.back(NF.pad(b.x, p, mode=mode))


def resize(img, size, interpolation="bilinear", antialias=None):
    _check_image(img, "resize")
    antialias = bool(antialias)
    if antialias and interpolation not in ("bilinear", "bicubic"):
        raise ValueError("Antialias option is supported for bilinear and bicubic interpolation modes only")
    if interpolation not in ("nearest", "bilinear", "bicubic"):
        raise NotImplementedError("resize: interpolation mode %r is not offered for tensors (nearest, bilinear, "
                                  "bicubic are; PIL images take every mode)" % interpolation)
    b = _Batched(img, (ff.float32, ff.float64))
    align = None if interpolation == "nearest" else False
    y = NF.interpolate(b.x, size=[int(s) for s in size], mode=interpolation, align_corners=align,
                       antialias=antialias)
    if interpolation == "bicubic" and b.dtype == ff.uint8:
        y = y.clamp(0, 255)  # bicubic overshoots; keep the rounding from wrapping
    return b.back(y)


# ---- grid transforms (rotate, affine) -------------------------------------------------------
def _check_grid_inputs(img, interpolation, fill, matrix=None):
    _check_image(img, "affine")
    if matrix is not None and (not isinstance(matrix, list) or len(matrix) != 6):
        raise ValueError("Argument matrix should be a list of 6 float values")
    c = get_dimensions(img)[0]
    if isinstance(fill, (tuple, list)) and len(fill) > 1 and len(fill) != c:
        raise ValueError("The number of elements in 'fill' cannot broadcast to match the number of channels of "
                         "the image (%d != %d)" % (len(fill), c))
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError("Interpolation mode '%s' is unsupported with Tensor input" % interpolation)


def _affine_grid(matrix, w, h, ow, oh, dtype):
    """grid_sample's sampling grid for the inverse map `matrix`, which works in pixel units
    about the image centre: output pixel centres -> input positions, normalized by (w/2, h/2)."""
    xs = ff.linspace(-ow * 0.5 + 0.5, ow * 0.5 - 0.5, steps=ow).to(dtype)
    ys = ff.linspace(-oh * 0.5 + 0.5, oh * 0.5 - 0.5, steps=oh).to(dtype)
    base = ff.stack([xs.reshape(1, ow).expand(oh, ow), ys.reshape(oh, 1).expand(oh, ow),
                     ff.ones(oh, ow, dtype=dtype)], dim=-1).reshape(1, oh * ow, 3)
    theta = ff.tensor(matrix, dtype=dtype).reshape(2, 3).t() / ff.tensor([0.5 * w, 0.5 * h], dtype=dtype)
    return base.matmul(theta.unsqueeze(0)).reshape(1, oh, ow, 2)


def _grid_transform(img, grid, mode, fill):
    """Samples with zeros outside; with a fill, a ones channel rides along to tell outside
    from inside and the outside is painted with fill (blended by coverage for bilinear)."""
    b = _Batched(img, (grid.dtype,))
    x = b.x
    n = x.shape[0]
    if n > 1:
        grid = grid.expand(n, *grid.shape[1:])
    if fill is not None:
        x = ff.cat([x, ff.ones(n, 1, *x.shape[2:], dtype=x.dtype)], dim=1)
    y = NF.grid_sample(x, grid, mode=mode, padding_mode="zeros", align_corners=False)
    if fill is not None:
        y, mask = y[:, :-1], y[:, -1:]
        values = list(fill) if isinstance(fill, (tuple, list)) else [float(fill)]
        fill_img = ff.tensor(values, dtype=y.dtype).reshape(1, len(values), 1, 1)
        mask = mask.expand(*y.shape)
        if mode == "nearest":
            y = ff.where(mask < 0.5, fill_img.expand(*y.shape), y)
        else:
            y = y * mask + (1.0 - mask) * fill_img
    return b.back(y)


def affine(img, matrix, interpolation="nearest", fill=None):
    _check_grid_inputs(img, interpolation, fill, matrix)
    h, w = img.shape[-2], img.shape[-1]
    grid = _affine_grid(matrix, w, h, w, h, _float_of(img))
    return _grid_transform(img, grid, interpolation, fill)


def _expanded_size(matrix, w, h):
    """Output (w, h) that holds the whole rotated image: the bounding box of the mapped
    corners, snapped to 1e-4 before ceil/floor so that 90-degree turns stay exact."""
    corners = ff.tensor([[-0.5 * w, -0.5 * h, 1.0], [-0.5 * w, 0.5 * h, 1.0],
                         [0.5 * w, 0.5 * h, 1.0], [0.5 * w, -0.5 * h, 1.0]])
    pts = corners.matmul(ff.tensor(matrix).reshape(2, 3).t())
    centre = ff.tensor([w * 0.5, h * 0.5])
    lo, hi = pts.min(dim=0).values + centre, pts.max(dim=0).values + centre
    tol = 1e-4
    size = ((hi / tol).trunc() * tol).ceil() - ((lo / tol).trunc() * tol).floor()
    return int(size[0].item()), int(size[1].item())


def rotate(img, matrix, interpolation="nearest", expand=False, fill=None):
    _check_grid_inputs(img, interpolation, fill, matrix)
    h, w = img.shape[-2], img.shape[-1]
    ow, oh = _expanded_size(matrix, w, h) if expand else (w, h)
    grid = _affine_grid(matrix, w, h, ow, oh, _float_of(img))
    return _grid_transform(img, grid, interpolation, fill)


def _perspective_grid(coeffs, ow, oh, dtype):
    """Output pixel centres (x, y) -> ((a x + b y + c) / (g x + h y + 1), (d x + e y + f) / (...)),
    normalized to grid_sample's [-1, 1]."""
    xs = ff.linspace(0.5, ow - 0.5, steps=ow).to(dtype)
    ys = ff.linspace(0.5, oh - 0.5, steps=oh).to(dtype)
    base = ff.stack([xs.reshape(1, ow).expand(oh, ow), ys.reshape(oh, 1).expand(oh, ow),
                     ff.ones(oh, ow, dtype=dtype)], dim=-1).reshape(1, oh * ow, 3)
    num = ff.tensor([coeffs[0:3], coeffs[3:6]], dtype=dtype).t() / ff.tensor([0.5 * ow, 0.5 * oh], dtype=dtype)
    den = ff.tensor([[coeffs[6], coeffs[7], 1.0]] * 2, dtype=dtype).t()
    grid = base.matmul(num.unsqueeze(0)) / base.matmul(den.unsqueeze(0)) - 1.0
    return grid.reshape(1, oh, ow, 2)


def perspective(img, perspective_coeffs, interpolation="bilinear", fill=None):
    _check_image(img, "perspective")
    if len(perspective_coeffs) != 8:
        raise ValueError("Argument coeffs should have 8 float values")
    _check_grid_inputs(img, interpolation, fill)
    grid = _perspective_grid(perspective_coeffs, img.shape[-1], img.shape[-2], _float_of(img))
    return _grid_transform(img, grid, interpolation, fill)


def elastic_transform(img, displacement, interpolation="bilinear", fill=None):
    """Samples at the identity grid plus `displacement` ([1, H, W, 2], in grid units)."""
    _check_image(img, "elastic_transform")
    h, w = img.shape[-2], img.shape[-1]
    ys = ff.linspace((-h + 1) / h, (h - 1) / h, steps=h)
    xs = ff.linspace((-w + 1) / w, (w - 1) / w, steps=w)
    identity = ff.stack([xs.reshape(1, w).expand(h, w), ys.reshape(h, 1).expand(h, w)], dim=-1).unsqueeze(0)
    return _grid_transform(img, identity + displacement, interpolation, fill)


# ---- blur, normalize, erase -----------------------------------------------------------------
def _gaussian_kernel1d(size, sigma):
    half = (size - 1) * 0.5
    pdf = (-0.5 * (ff.linspace(-half, half, steps=size) / sigma) ** 2).exp()
    return pdf / pdf.sum()


def gaussian_blur(img, kernel_size, sigma):
    """A separable Gaussian as one depthwise conv2d over a reflect-padded image."""
    _check_image(img, "gaussian_blur")
    dtype = _float_of(img)
    kx = _gaussian_kernel1d(kernel_size[0], sigma[0]).to(dtype)
    ky = _gaussian_kernel1d(kernel_size[1], sigma[1]).to(dtype)
    kernel = ky.reshape(-1, 1).matmul(kx.reshape(1, -1))
    c = get_dimensions(img)[0]
    b = _Batched(img, (dtype,))
    x = NF.pad(b.x, [kernel_size[0] // 2] * 2 + [kernel_size[1] // 2] * 2, mode="reflect")
    y = NF.conv2d(x, kernel.expand(c, 1, *kernel.shape), groups=c)
    return b.back(y)


def normalize(tensor, mean, std, inplace=False):
    _check_image(tensor, "normalize")
    if not tensor.is_floating_point():
        raise TypeError("Input tensor should be a float tensor. Got %s." % tensor.dtype)
    if tensor.ndim < 3:
        raise ValueError("Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = %s"
                         % (tuple(tensor.shape),))
    mean = ff.as_tensor(mean, dtype=tensor.dtype)
    std = ff.as_tensor(std, dtype=tensor.dtype)
    if bool((std == 0).any()):
        raise ValueError("std evaluated to zero after conversion to %s, leading to division by zero." % tensor.dtype)
    if mean.ndim == 1:
        mean = mean.reshape(-1, 1, 1)
    if std.ndim == 1:
        std = std.reshape(-1, 1, 1)
    out = tensor if inplace else tensor.clone()
    return out.sub_(mean).div_(std)


def erase(img, i, j, h, w, v, inplace=False):
    _check_image(img, "erase")
    out = img if inplace else img.clone()
    out[..., i:i + h, j:j + w] = v
    return out


# the colour ops live in their own file; they are part of this module's namespace
from ._tensor_color import (adjust_brightness, adjust_contrast, adjust_gamma, adjust_hue,  # noqa: E402,F401
                            adjust_saturation, adjust_sharpness, autocontrast, equalize, invert, posterize,
                            rgb_to_grayscale, solarize)
