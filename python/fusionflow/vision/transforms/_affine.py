"""rotate and affine (transforms.functional), and the inverse affine matrix both need.

PIL's Image.rotate / Image.transform take the map from output pixels back to input pixels
with the origin at the top-left corner; the tensor path samples with grid_sample in
coordinates centred on the image. The matrix is the same formula for both, only the centre
differs, so both paths put every pixel where torchvision puts it."""
import math
import numbers

from . import functional_pil as F_pil
from . import functional_tensor as F_t
from .functional import InterpolationMode, _interpolation, _is_tensor, get_dimensions, pil_modes_mapping


def _get_inverse_affine_matrix(center, angle, translate, scale, shear, inverted=True):
    """The 2x3 matrix (row-major, 6 floats) of M = T * C * R * S * ShY * ShX * C^-1, or of
    M^-1 when inverted: R rotates by `angle` degrees, S scales, ShX / ShY shear by shear[0] /
    shear[1] degrees, C moves the origin to `center`, T translates."""
    rot = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    # rotation * shear (determinant 1), before scaling
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    if inverted:
        m = [v / scale for v in (d, -b, 0.0, -c, a, 0.0)]  # the inverse of a det-1 2x2, unscaled
        m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty)
        m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty)
        m[2] += cx
        m[5] += cy
    else:
        m = [v * scale for v in (a, b, 0.0, c, d, 0.0)]
        m[2] += m[0] * (-cx) + m[1] * (-cy)
        m[5] += m[3] * (-cx) + m[4] * (-cy)
        m[2] += cx + tx
        m[5] += cy + ty
    return m


def _centre_offset(center, img):
    """A pixel position as an offset from the image centre (the tensor path's origin)."""
    if center is None:
        return [0.0, 0.0]
    _, h, w = get_dimensions(img)
    return [1.0 * (c - s * 0.5) for c, s in zip(center, (w, h))]


def rotate(img, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=None):
    """Counter-clockwise by `angle` degrees about `center` (default: the image centre);
    expand grows the output to hold the whole turned image."""
    interpolation = _interpolation(interpolation)
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError("Argument center should be a sequence")
    if not _is_tensor(img):
        return F_pil.rotate(img, angle=angle, interpolation=pil_modes_mapping[interpolation], expand=expand,
                            center=center, fill=fill)
    # the grid maps output to input, hence the opposite angle
    matrix = _get_inverse_affine_matrix(_centre_offset(center, img), -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
    return F_t.rotate(img, matrix=matrix, interpolation=interpolation.value, expand=expand, fill=fill)


def affine(img, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST, fill=None, center=None):
    """Rotation by `angle` degrees (clockwise), translation in pixels, scale, and shear in
    degrees (one value: along x; two: x then y), about `center` (default: the image centre)."""
    interpolation = _interpolation(interpolation)
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if not isinstance(translate, (list, tuple)):
        raise TypeError("Argument translate should be a sequence")
    if len(translate) != 2:
        raise ValueError("Argument translate should be a sequence of length 2")
    if scale <= 0.0:
        raise ValueError("Argument scale should be positive")
    if not isinstance(shear, (numbers.Number, list, tuple)):
        raise TypeError("Shear should be either a single value or a sequence of two values")
    angle = float(angle)
    shear = [shear, 0.0] if isinstance(shear, numbers.Number) else list(shear)
    if len(shear) == 1:
        shear = [shear[0], shear[0]]
    if len(shear) != 2:
        raise ValueError("Shear should be a sequence containing two values. Got %s" % (shear,))
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError("Argument center should be a sequence")
    translate = list(translate)
    if not _is_tensor(img):
        _, h, w = get_dimensions(img)
        # the centre without the half-pixel offset, so that 90-degree turns agree with the tensor path
        pil_center = [w * 0.5, h * 0.5] if center is None else center
        matrix = _get_inverse_affine_matrix(pil_center, angle, translate, scale, shear)
        return F_pil.affine(img, matrix=matrix, interpolation=pil_modes_mapping[interpolation], fill=fill)
    matrix = _get_inverse_affine_matrix(_centre_offset(center, img), angle, [1.0 * t for t in translate], scale,
                                        shear)
    return F_t.affine(img, matrix=matrix, interpolation=interpolation.value, fill=fill)
