"""Colour and photometric ops on fusionflow tensors (part of functional_tensor): greyscale,
the blend-based adjustments, HSV hue rotation, gamma, and the autoaugment family (invert,
posterize, solarize, sharpness, autocontrast, equalize). Arithmetic runs in the order
torchvision's does, so uint8 results truncate where torchvision's truncate."""
import fusionflow as ff
import fusionflow.nn.functional as NF
from .functional_tensor import _Batched, _check_channels, _check_image, _float_of, convert_image_dtype, get_dimensions


def rgb_to_grayscale(img, num_output_channels=1):
    _check_image(img, "rgb_to_grayscale")
    if img.ndim < 3:
        raise TypeError("Input image tensor should have at least 3 dimensions, but found %d" % img.ndim)
    _check_channels(img, [1, 3])
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    if img.shape[-3] == 3:
        r, g, b = img.unbind(dim=-3)
        gray = (0.2989 * r + 0.587 * g + 0.114 * b).to(img.dtype).unsqueeze(-3)  # ITU-R 601-2 luma
    else:
        gray = img.clone()
    return gray.expand(*img.shape) if num_output_channels == 3 else gray


def _blend(img1, img2, ratio):
    bound = 1.0 if img1.is_floating_point() else 255.0
    ratio = float(ratio)
    return (ratio * img1 + (1.0 - ratio) * img2).clamp(0, bound).to(img1.dtype)


def _check_factor(name, value):
    if value < 0:
        raise ValueError("%s (%s) is not non-negative." % (name, value))


def adjust_brightness(img, factor):
    _check_factor("brightness_factor", factor)
    _check_image(img, "adjust_brightness")
    _check_channels(img, [1, 3])
    return _blend(img, ff.zeros_like(img), factor)


def adjust_contrast(img, factor):
    _check_factor("contrast_factor", factor)
    _check_image(img, "adjust_contrast")
    _check_channels(img, [1, 3])
    gray = rgb_to_grayscale(img) if img.shape[-3] == 3 else img
    mean = gray.to(_float_of(img)).mean(dim=(-3, -2, -1), keepdim=True)
    return _blend(img, mean, factor)


def adjust_saturation(img, factor):
    _check_factor("saturation_factor", factor)
    _check_image(img, "adjust_saturation")
    _check_channels(img, [1, 3])
    if get_dimensions(img)[0] == 1:  # no colour to saturate (as PIL)
        return img
    return _blend(img, rgb_to_grayscale(img), factor)


def _rgb_to_hsv(img):
    r, g, b = img.unbind(dim=-3)
    maxc, minc = img.max(dim=-3).values, img.min(dim=-3).values
    flat = maxc == minc
    span = maxc - minc
    ones = ff.ones_like(maxc)
    s = span / ff.where(flat, ones, maxc)
    span = ff.where(flat, ones, span)
    rc, gc, bc = (maxc - r) / span, (maxc - g) / span, (maxc - b) / span
    zero = ff.zeros_like(maxc)
    h = ff.where(maxc == r, bc - gc, zero) + ff.where((maxc == g) & (maxc != r), 2.0 + rc - bc, zero) + \
        ff.where((maxc != g) & (maxc != r), 4.0 + gc - rc, zero)
    h = ff.fmod(h / 6.0 + 1.0, 1.0)
    return ff.stack([h, s, maxc], dim=-3)


def _hsv_to_rgb(img):
    h, s, v = img.unbind(dim=-3)
    sector = (h * 6.0).floor()
    f = h * 6.0 - sector
    sector = sector.to(ff.int32) % 6
    p = (v * (1.0 - s)).clamp(0.0, 1.0)
    q = (v * (1.0 - s * f)).clamp(0.0, 1.0)
    t = (v * (1.0 - s * (1.0 - f))).clamp(0.0, 1.0)
    table = {"r": (v, q, p, p, t, v), "g": (t, v, v, q, p, p), "b": (p, p, t, v, v, q)}

    def pick(choices):
        out = choices[5]
        for k in range(4, -1, -1):
            out = ff.where(sector == k, choices[k], out)
        return out
    return ff.stack([pick(table[c]) for c in "rgb"], dim=-3)


def adjust_hue(img, hue_factor):
    if not -0.5 <= hue_factor <= 0.5:
        raise ValueError("hue_factor (%s) is not in [-0.5, 0.5]." % hue_factor)
    _check_image(img, "adjust_hue")
    _check_channels(img, [1, 3])
    if get_dimensions(img)[0] == 1:  # a grey image has no hue (as PIL)
        return img
    x = img.to(ff.float32) / 255.0 if img.dtype == ff.uint8 else img
    h, s, v = _rgb_to_hsv(x).unbind(dim=-3)
    out = _hsv_to_rgb(ff.stack([(h + hue_factor) % 1.0, s, v], dim=-3))
    return (out * 255.0).to(img.dtype) if img.dtype == ff.uint8 else out


def adjust_gamma(img, gamma, gain=1.0):
    _check_image(img, "adjust_gamma")
    _check_channels(img, [1, 3])
    if gamma < 0:
        raise ValueError("Gamma should be a non-negative real number")
    x = img if img.is_floating_point() else convert_image_dtype(img, ff.float32)
    return convert_image_dtype((gain * x ** gamma).clamp(0, 1), img.dtype)


def _check_3d(img, fn):
    _check_image(img, fn)
    if img.ndim < 3:
        raise TypeError("Input image tensor should have at least 3 dimensions, but found %d" % img.ndim)
    _check_channels(img, [1, 3])


def invert(img):
    _check_3d(img, "invert")
    return (1.0 if img.is_floating_point() else 255) - img


def posterize(img, bits):
    """Keeps the top `bits` bits of each uint8 value."""
    _check_3d(img, "posterize")
    if img.dtype != ff.uint8:
        raise TypeError("Only torch.uint8 image tensors are supported, but found %s" % img.dtype)
    return img & (0xFF ^ (2 ** (8 - bits) - 1))


def solarize(img, threshold):
    """Inverts the values at or above threshold."""
    _check_3d(img, "solarize")
    if threshold > (1 if img.is_floating_point() else 255):
        raise TypeError("Threshold should be less than bound of img.")
    return ff.where(img >= threshold, invert(img), img)


def _smoothed(img):
    """PIL's SMOOTH filter (3x3, centre weight 5) on the interior; the border stays."""
    dtype = _float_of(img)
    kernel = ff.ones(3, 3, dtype=dtype)
    kernel[1, 1] = 5.0
    kernel = kernel / kernel.sum()
    c = img.shape[-3]
    b = _Batched(img, (dtype,))
    inner = b.back(NF.conv2d(b.x, kernel.expand(c, 1, 3, 3), groups=c))
    out = img.clone()
    out[..., 1:-1, 1:-1] = inner
    return out


def adjust_sharpness(img, factor):
    """Blends with the smoothed image: 0 smooth, 1 the original, 2 sharper."""
    if factor < 0:
        raise ValueError("sharpness_factor (%s) is not non-negative." % factor)
    _check_image(img, "adjust_sharpness")
    _check_channels(img, [1, 3])
    if img.shape[-1] <= 2 or img.shape[-2] <= 2:
        return img
    return _blend(img, _smoothed(img), factor)


def autocontrast(img):
    """Stretches each channel so that its darkest value becomes 0 and its lightest the maximum."""
    _check_3d(img, "autocontrast")
    bound = 1.0 if img.is_floating_point() else 255.0
    dtype = _float_of(img)
    lo = img.amin(dim=(-2, -1), keepdim=True).to(dtype)
    hi = img.amax(dim=(-2, -1), keepdim=True).to(dtype)
    scale = (hi - lo).reciprocal() * bound  # torch's `bound / t` is this product: keep its rounding
    flat = ~ff.isfinite(scale)  # a constant channel stays as it is
    lo = ff.where(flat, ff.zeros_like(lo), lo)
    scale = ff.where(flat, ff.ones_like(scale), scale)
    return ((img - lo) * scale).clamp(0, bound).to(img.dtype)


def _equalize_channel(ch):
    """PIL's histogram equalization of one uint8 channel, through a 256-entry lookup table."""
    hist = ff.bincount(ch.reshape(-1).long(), minlength=256)
    nonzero = hist[hist != 0]
    step = int(nonzero[:-1].sum().item()) // 255
    if step == 0:
        return ch
    lut = (hist.cumsum(0) + step // 2) // step
    lut = ff.cat([ff.zeros(1, dtype=lut.dtype), lut[:-1]]).clamp(0, 255)
    return lut[ch.long()].to(ff.uint8)


def equalize(img):
    _check_3d(img, "equalize")
    if img.dtype != ff.uint8:
        raise TypeError("Only torch.uint8 image tensors are supported, but found %s" % img.dtype)
    flat = img.reshape(-1, *img.shape[-2:])
    return ff.stack([_equalize_channel(flat[k]) for k in range(flat.shape[0])]).reshape(*img.shape)
