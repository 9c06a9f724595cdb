"""fusionflow.vision.transforms against torchvision 0.14, deterministic transforms: each one on
the same PIL images (RGB and L, odd sizes) and the same uint8 / float tensors.

PIL results must be pixel-identical (both sides make the same PIL calls). Tensor results are
exact where the arithmetic is the same op for op; where a float result goes through a resampler
or a reduction (interpolate, grid_sample, conv2d, mean) whose summation order is the library's
own, floats agree to ~1e-5 and uint8 results to 1 level (a value landing within rounding noise
of .5 may round the other way)."""
import warnings

import numpy as np
import pytest

torchvision = pytest.importorskip("torchvision")
torch = pytest.importorskip("torch")
from PIL import Image  # noqa: E402

import fusionflow as ff  # noqa: E402
from fusionflow.vision import transforms as T  # noqa: E402

F = T.functional
TT = torchvision.transforms
TF = TT.functional


def _pil(mode, w, h, seed):
    rng = np.random.default_rng(seed)
    bands = {"L": 1, "RGB": 3, "RGBA": 4}[mode]
    arr = rng.integers(0, 256, size=(h, w, bands), dtype=np.uint8)
    return Image.fromarray(arr[:, :, 0] if bands == 1 else arr, mode)


PIL_RGB = _pil("RGB", 13, 11, 1)
PIL_L = _pil("L", 9, 14, 2)
_U8 = np.random.default_rng(3).integers(0, 256, size=(3, 11, 13), dtype=np.uint8)
_U8_BATCH = np.random.default_rng(4).integers(0, 256, size=(2, 3, 9, 12), dtype=np.uint8)
_F32 = np.random.default_rng(5).random((3, 10, 13), dtype=np.float32)
_F32_GRAY = np.random.default_rng(6).random((1, 12, 9), dtype=np.float32)
INPUTS = {"pil_rgb": PIL_RGB, "pil_l": PIL_L, "u8": _U8, "u8_batch": _U8_BATCH, "f32": _F32, "f32_gray": _F32_GRAY}
PIL_KINDS = ("pil_rgb", "pil_l")
TENSOR_KINDS = ("u8", "u8_batch", "f32", "f32_gray")
ALL_KINDS = PIL_KINDS + TENSOR_KINDS
RGB_KINDS = ("pil_rgb", "u8", "u8_batch", "f32")


def pair(kind):
    """The same input for each library: (ours, torchvision's)."""
    x = INPUTS[kind]
    if isinstance(x, Image.Image):
        return x.copy(), x.copy()
    return ff.from_numpy(x.copy()), torch.from_numpy(x.copy())


def assert_same(ours, ref, tol=0.0):
    """PIL: same mode, size and pixels. Tensors: same shape and dtype, values within tol."""
    if isinstance(ref, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(ref)
        for a, b in zip(ours, ref):
            assert_same(a, b, tol)
        return
    if isinstance(ref, Image.Image):
        assert isinstance(ours, Image.Image), type(ours)
        assert (ours.mode, ours.size) == (ref.mode, ref.size)
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(ref))
        return
    assert isinstance(ours, ff.Tensor), type(ours)
    a, b = ours.numpy(), ref.numpy()
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
    if tol == 0:
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=0, atol=tol)


def tol_for(kind, uint8_tol=1, float_tol=1e-5):
    return 0 if kind in PIL_KINDS else (uint8_tol if kind.startswith("u8") else float_tol)


# (id, build(module) -> transform or function of one image, kinds, rounding-sensitive?)
# `build` gets torchvision.transforms or ours, so both sides name the same thing.
CASES = [
    ("resize_hw", lambda M: M.Resize((7, 5)), ALL_KINDS, True),
    ("resize_short", lambda M: M.Resize(6), ALL_KINDS, True),
    ("resize_up_bicubic", lambda M: M.Resize((15, 17), M.InterpolationMode.BICUBIC), ALL_KINDS, True),
    ("resize_nearest", lambda M: M.Resize((5, 6), M.InterpolationMode.NEAREST), ALL_KINDS, False),
    ("resize_max_size", lambda M: M.Resize(8, max_size=10), ALL_KINDS, True),
    ("resize_antialias", lambda M: M.Resize((5, 4), antialias=True), ALL_KINDS, True),
    ("resize_bicubic_aa", lambda M: M.Resize((6, 5), M.InterpolationMode.BICUBIC, antialias=True), ALL_KINDS, True),
    ("resize_box", lambda M: M.Resize((6, 5), M.InterpolationMode.BOX), PIL_KINDS, False),
    ("resize_lanczos", lambda M: M.Resize((16, 7), M.InterpolationMode.LANCZOS), PIL_KINDS, False),
    ("resize_hamming", lambda M: M.Resize((4, 9), M.InterpolationMode.HAMMING), PIL_KINDS, False),
    ("center_crop", lambda M: M.CenterCrop(5), ALL_KINDS, False),
    ("center_crop_rect", lambda M: M.CenterCrop((4, 7)), ALL_KINDS, False),
    ("center_crop_pads", lambda M: M.CenterCrop((15, 16)), ALL_KINDS, False),
    ("pad_int", lambda M: M.Pad(2), ALL_KINDS, False),
    ("pad_pair_fill", lambda M: M.Pad((1, 3), fill=7), ALL_KINDS, False),
    ("pad_ltrb", lambda M: M.Pad((1, 2, 3, 4)), ALL_KINDS, False),
    ("pad_edge", lambda M: M.Pad((2, 1, 0, 3), padding_mode="edge"), ALL_KINDS, False),
    ("pad_reflect", lambda M: M.Pad(3, padding_mode="reflect"), ALL_KINDS, False),
    ("pad_symmetric", lambda M: M.Pad((4, 1, 2, 3), padding_mode="symmetric"), ALL_KINDS, False),
    ("pad_rgb_fill", lambda M: M.Pad(2, fill=(10, 20, 30)), ("pil_rgb",), False),
    ("hflip", lambda M: M.RandomHorizontalFlip(p=1.0), ALL_KINDS, False),
    ("vflip", lambda M: M.RandomVerticalFlip(p=1.0), ALL_KINDS, False),
    ("five_crop", lambda M: M.FiveCrop(4), ALL_KINDS, False),
    ("ten_crop", lambda M: M.TenCrop((4, 5)), ALL_KINDS, False),
    ("ten_crop_v", lambda M: M.TenCrop(3, vertical_flip=True), ALL_KINDS, False),
    ("gray1", lambda M: M.Grayscale(), ALL_KINDS, False),
    ("gray3", lambda M: M.Grayscale(3), RGB_KINDS, False),
    ("crop_inside", lambda M: (lambda im: M.functional.crop(im, 2, 3, 5, 4)), ALL_KINDS, False),
    ("crop_outside", lambda M: (lambda im: M.functional.crop(im, -2, 4, 9, 12)), ALL_KINDS, False),
    ("resized_crop", lambda M: (lambda im: M.functional.resized_crop(im, 1, 2, 6, 5, [8, 7])), ALL_KINDS, True),
    ("brightness", lambda M: (lambda im: M.functional.adjust_brightness(im, 1.3)), ALL_KINDS, False),
    ("darken", lambda M: (lambda im: M.functional.adjust_brightness(im, 0.45)), ALL_KINDS, False),
    ("contrast", lambda M: (lambda im: M.functional.adjust_contrast(im, 0.6)), ALL_KINDS, True),
    ("contrast_up", lambda M: (lambda im: M.functional.adjust_contrast(im, 1.8)), ALL_KINDS, True),
    ("saturation", lambda M: (lambda im: M.functional.adjust_saturation(im, 1.7)), ALL_KINDS, False),
    ("desaturate", lambda M: (lambda im: M.functional.adjust_saturation(im, 0.3)), ALL_KINDS, False),
    ("hue_pos", lambda M: (lambda im: M.functional.adjust_hue(im, 0.2)), ALL_KINDS, True),
    ("hue_neg", lambda M: (lambda im: M.functional.adjust_hue(im, -0.35)), ALL_KINDS, True),
    ("gamma", lambda M: (lambda im: M.functional.adjust_gamma(im, 0.7, gain=1.1)), ALL_KINDS, True),
    ("gamma_dark", lambda M: (lambda im: M.functional.adjust_gamma(im, 2.2)), ALL_KINDS, True),
    ("blur", lambda M: (lambda im: M.functional.gaussian_blur(im, [3, 5], [0.8, 1.3])), ALL_KINDS, True),
    ("blur_default_sigma", lambda M: (lambda im: M.functional.gaussian_blur(im, 5)), ALL_KINDS, True),
    ("blur_class", lambda M: M.GaussianBlur(3, sigma=(1.1, 1.1)), ALL_KINDS, True),
    ("invert", lambda M: M.RandomInvert(p=1.0), ALL_KINDS, False),
    ("posterize", lambda M: M.RandomPosterize(3, p=1.0), PIL_KINDS + ("u8", "u8_batch"), False),
    ("posterize0", lambda M: (lambda im: M.functional.posterize(im, 0)), PIL_KINDS + ("u8",), False),
    ("solarize_u8", lambda M: M.RandomSolarize(100, p=1.0), PIL_KINDS + ("u8", "u8_batch"), False),
    ("solarize_f", lambda M: M.RandomSolarize(0.4, p=1.0), ("f32", "f32_gray"), False),
    ("sharpness", lambda M: M.RandomAdjustSharpness(1.7, p=1.0), ALL_KINDS, True),
    ("blunt", lambda M: (lambda im: M.functional.adjust_sharpness(im, 0.2)), ALL_KINDS, True),
    ("autocontrast", lambda M: M.RandomAutocontrast(p=1.0), ALL_KINDS, False),
    ("equalize", lambda M: M.RandomEqualize(p=1.0), PIL_KINDS + ("u8", "u8_batch"), False),
]


@pytest.mark.parametrize("kind", ALL_KINDS)
@pytest.mark.parametrize("name,build,kinds,rounding", CASES, ids=[c[0] for c in CASES])
def test_matches_torchvision(name, build, kinds, rounding, kind):
    if kind not in kinds:
        pytest.skip("%s does not take %s" % (name, kind))
    ours_in, ref_in = pair(kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = build(TT)(ref_in)
        ours = build(T)(ours_in)
    assert_same(ours, ref, tol_for(kind) if rounding else 0.0)


# Rotations and affine maps: PIL exact. Tensors sample through grid_sample on a grid built by
# a matmul whose last float bit is the library's own: a nearest sample sitting exactly on a
# pixel boundary could pick the neighbour (none does on these inputs, but the bound allows 1%),
# and bilinear results agree within float rounding (uint8: 1 level).
GRID_CASES = [
    ("rotate", lambda M: (lambda im: M.functional.rotate(im, 30.0))),
    ("rotate_90", lambda M: (lambda im: M.functional.rotate(im, 90))),
    ("rotate_expand", lambda M: (lambda im: M.functional.rotate(im, 45.0, expand=True))),
    ("rotate_bilinear", lambda M: (lambda im: M.functional.rotate(im, -25.0, M.InterpolationMode.BILINEAR))),
    ("rotate_center_fill", lambda M: (lambda im: M.functional.rotate(im, 17.0, center=[2, 3], fill=9))),
    ("affine", lambda M: (lambda im: M.functional.affine(im, 15.0, [2, -1], 1.2, [10.0, 5.0]))),
    ("affine_bilinear", lambda M: (lambda im: M.functional.affine(im, -40.0, [1, 2], 0.8, 7.0,
                                                                  M.InterpolationMode.BILINEAR))),
    ("affine_fill_center", lambda M: (lambda im: M.functional.affine(im, 33.0, [0, 0], 1.0, [0.0, 12.0],
                                                                     fill=5, center=[4, 6]))),
    ("elastic_bilinear", lambda M: (lambda im: M.functional.elastic_transform(im, _displacement(M, im)))),
    ("elastic_nearest", lambda M: (lambda im: M.functional.elastic_transform(im, _displacement(M, im),
                                                                             M.InterpolationMode.NEAREST))),
]


def _corners(M, im):
    """Start and end corners of a perspective warp of this image. Fractional end points keep
    the samples off pixel edges, where float rounding alone would decide a nearest pick."""
    w, h = M.functional.get_image_size(im)
    start = [[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]]
    return start, [[1.37, 2.21], [w - 2.13, 0.29], [w - 1.08, h - 3.31], [2.17, h - 1.43]]


def _displacement(M, im):
    w, h = M.functional.get_image_size(im)
    d = np.random.default_rng(w * h).random((1, h, w, 2), dtype=np.float32) * 0.2 - 0.1
    return torch.from_numpy(d) if M is TT else ff.from_numpy(d)


def _assert_grid_close(ours, ref, kind, bilinear):
    if kind in PIL_KINDS:
        return assert_same(ours, ref)
    a, b = ours.numpy().astype(np.float64), ref.numpy().astype(np.float64)
    assert a.shape == b.shape and ours.numpy().dtype == ref.numpy().dtype
    if bilinear:
        np.testing.assert_allclose(a, b, rtol=0, atol=tol_for(kind, 1, 1e-4))
    else:
        assert np.mean(a != b) <= 0.01, "nearest: %d of %d pixels differ" % ((a != b).sum(), a.size)


@pytest.mark.parametrize("kind", ALL_KINDS)
@pytest.mark.parametrize("name,build", GRID_CASES, ids=[c[0] for c in GRID_CASES])
def test_grid_transforms_match_torchvision(name, build, kind):
    ours_in, ref_in = pair(kind)
    ours, ref = build(T)(ours_in), build(TT)(ref_in)
    _assert_grid_close(ours, ref, kind, "bilinear" in name)


@pytest.mark.parametrize("kind", ALL_KINDS)
@pytest.mark.parametrize("mode,fill", [("BILINEAR", None), ("NEAREST", None), ("BILINEAR", 7)])
def test_perspective_matches_torchvision_given_the_coefficients(kind, mode, fill):
    """torchvision solves the corner equations in float32 LAPACK (sgels), we in float64: the
    coefficients agree to ~1e-6, but a warp whose samples sit on pixel edges then picks other
    pixels. So the coefficients are compared, and the warp against torchvision's own
    functional_pil / functional_tensor perspective given the same coefficients."""
    ours_in, ref_in = pair(kind)
    start, end = _corners(T, ours_in)
    coeffs = F._get_perspective_coeffs(start, end)
    np.testing.assert_allclose(coeffs, TF._get_perspective_coeffs(start, end), rtol=1e-4, atol=1e-5)
    interp = getattr(T.InterpolationMode, mode)
    ours = F.perspective(ours_in, start, end, interp, fill)
    if kind in PIL_KINDS:
        ref = TT.functional_pil.perspective(ref_in, coeffs, TF.pil_modes_mapping[getattr(TT.InterpolationMode, mode)],
                                            fill)
    else:
        ref = TT.functional_tensor.perspective(ref_in, coeffs, mode.lower(), fill)
    _assert_grid_close(ours, ref, kind, mode == "BILINEAR")


def test_rotate_expand_size_and_quarter_turn_exact():
    """A quarter turn lands on pixel centres: exact on tensors too, and expand swaps h and w."""
    for kind in ("u8", "f32", "pil_rgb"):
        ours_in, ref_in = pair(kind)
        assert_same(F.rotate(ours_in, 90, expand=True), TF.rotate(ref_in, 90, expand=True))
    x = ff.from_numpy(_U8.copy())
    assert tuple(F.rotate(x, 90, expand=True).shape) == (3, 13, 11)


# ---- conversions ------------------------------------------------------------------------------
def _mode_image(mode):
    rng = np.random.default_rng(7)
    if mode == "1":
        return Image.fromarray(rng.integers(0, 2, size=(5, 7), dtype=np.uint8) * 255).convert("1")
    if mode == "I":
        return Image.fromarray(rng.integers(-70000, 70000, size=(5, 7), dtype=np.int32), "I")
    if mode == "I;16":
        return Image.fromarray(rng.integers(0, 30000, size=(5, 7), dtype=np.uint16), "I;16")
    if mode == "F":
        return Image.fromarray(rng.random((5, 7), dtype=np.float32) * 100, "F")
    return _pil("RGB", 7, 5, 8).convert(mode)


@pytest.mark.parametrize("mode", ["L", "RGB", "RGBA", "LA", "P", "CMYK", "YCbCr", "1", "I", "F"])
def test_to_tensor_modes(mode):
    img = _mode_image(mode)
    ours, ref = F.to_tensor(img), TF.to_tensor(img)
    assert_same(ours, ref)
    assert_same(T.ToTensor()(img), TT.ToTensor()(img))


def test_16bit_mode():
    """'I;16': to_tensor reads int16 as torchvision; pil_to_tensor reads numpy's uint16, which
    torch 1.13 refuses and fusionflow widens to int32; to_pil_image takes it back."""
    img = _mode_image("I;16")
    assert_same(F.to_tensor(img), TF.to_tensor(img))
    t = F.pil_to_tensor(img)
    assert t.dtype == ff.int32
    np.testing.assert_array_equal(t.numpy()[0], np.asarray(img))
    assert_same(F.to_pil_image(t, mode="I;16"), img)


@pytest.mark.parametrize("arr", [_U8[0], np.transpose(_U8, (1, 2, 0)), np.transpose(_F32, (1, 2, 0)),
                                 np.arange(20, dtype=np.int32).reshape(4, 5)], ids=["hw", "hwc", "f32", "i32"])
def test_to_tensor_numpy(arr):
    assert_same(F.to_tensor(arr.copy()), TF.to_tensor(arr.copy()))


@pytest.mark.parametrize("mode", ["L", "RGB", "RGBA", "I", "F", "1"])
def test_pil_to_tensor(mode):
    img = _mode_image(mode)
    assert_same(T.PILToTensor()(img), TT.PILToTensor()(img))


@pytest.mark.parametrize("kind", ["u8", "f32", "f32_gray"])
@pytest.mark.parametrize("mode", [None, "F"])
def test_to_pil_image(kind, mode):
    ours_in, ref_in = pair(kind)
    if mode == "F":
        if kind != "f32_gray":
            pytest.skip("mode F is single-channel float")
    assert_same(T.ToPILImage(mode)(ours_in), TT.ToPILImage(mode)(ref_in))


@pytest.mark.parametrize("mode", ["RGB", "HSV", "YCbCr"])
def test_to_pil_image_modes_and_numpy(mode):
    arr = np.transpose(_U8, (1, 2, 0)).copy()
    assert_same(F.to_pil_image(arr, mode), TF.to_pil_image(arr, mode))
    rgba = np.random.default_rng(9).integers(0, 256, size=(4, 5, 6), dtype=np.uint8)
    assert_same(F.to_pil_image(ff.from_numpy(rgba)), TF.to_pil_image(torch.from_numpy(rgba)))
    two = rgba[:2].copy()
    assert_same(F.to_pil_image(ff.from_numpy(two)), TF.to_pil_image(torch.from_numpy(two)))


@pytest.mark.parametrize("src,dst", [("uint8", "float32"), ("uint8", "float64"), ("float32", "uint8"),
                                     ("float64", "uint8"), ("uint8", "int32"), ("int32", "uint8"),
                                     ("int64", "int32"), ("float32", "float64"), ("uint8", "uint8"),
                                     ("int16", "uint8"), ("uint8", "int16"), ("int16", "float32"),
                                     ("float32", "int16"), ("int8", "int16")])
def test_convert_image_dtype(src, dst):
    rng = np.random.default_rng(10)
    if src.startswith("float"):
        arr = rng.random((2, 4, 5)).astype(src)
    else:
        hi = {"uint8": 256, "int8": 128, "int16": 2 ** 15, "int32": 2 ** 31 - 1, "int64": 2 ** 62}[src]
        arr = rng.integers(0, hi, size=(2, 4, 5)).astype(src)
    ours = T.ConvertImageDtype(getattr(ff, dst))(ff.from_numpy(arr.copy()))
    ref = TT.ConvertImageDtype(getattr(torch, dst))(torch.from_numpy(arr.copy()))
    assert_same(ours, ref)


def test_convert_image_dtype_refuses_unsafe_casts():
    with pytest.raises(RuntimeError):
        F.convert_image_dtype(ff.rand(3, 2, 2), ff.int32)
    with pytest.raises(TypeError):
        F.convert_image_dtype(PIL_RGB, ff.float32)


@pytest.mark.parametrize("inplace", [False, True])
def test_normalize(inplace):
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    ours_in, ref_in = pair("f32")
    ours, ref = T.Normalize(mean, std, inplace)(ours_in), TT.Normalize(mean, std, inplace)(ref_in)
    assert_same(ours, ref, 1e-6)
    changed = not np.array_equal(ours_in.numpy(), _F32)
    assert changed == inplace
    batch = np.random.default_rng(11).random((2, 3, 4, 4), dtype=np.float32)
    assert_same(F.normalize(ff.from_numpy(batch.copy()), mean, std), TF.normalize(torch.from_numpy(batch), mean, std),
                1e-6)


def test_compose_to_tensor_normalize_pipeline():
    pipe = lambda M: M.Compose([M.Resize(8), M.CenterCrop(7), M.ToTensor(),  # noqa: E731
                                M.Normalize([0.5, 0.4, 0.3], [0.2, 0.25, 0.3])])
    ours, ref = pipe(T)(PIL_RGB), pipe(TT)(PIL_RGB)
    assert_same(ours, ref, 1e-6)
    assert "Normalize" in repr(pipe(T))


def test_erase_and_linear_transformation():
    ours_in, ref_in = pair("f32")
    v = np.array([0.1, 0.2, 0.3], dtype=np.float32).reshape(3, 1, 1)
    assert_same(F.erase(ours_in, 2, 3, 4, 5, ff.from_numpy(v)), TF.erase(ref_in, 2, 3, 4, 5, torch.from_numpy(v)))
    assert np.array_equal(ours_in.numpy(), _F32)  # not in place by default
    n = 3 * 10 * 13
    m = np.random.default_rng(12).random((n, n), dtype=np.float32) / n
    mu = np.random.default_rng(13).random(n, dtype=np.float32)
    ours = T.LinearTransformation(ff.from_numpy(m), ff.from_numpy(mu))(ours_in)
    ref = TT.LinearTransformation(torch.from_numpy(m), torch.from_numpy(mu))(ref_in)
    assert_same(ours, ref, 1e-4)


def test_lambda_and_get_dimensions():
    assert T.Lambda(lambda x: x + 1)(1) == 2
    for kind in ALL_KINDS:
        ours_in, ref_in = pair(kind)
        assert F.get_dimensions(ours_in) == TF.get_dimensions(ref_in)
        assert F.get_image_size(ours_in) == TF.get_image_size(ref_in)
        assert F.get_image_num_channels(ours_in) == TF.get_image_num_channels(ref_in)


def test_to_grayscale_pil_only():
    for n in (1, 3):
        assert_same(F.to_grayscale(PIL_RGB, n), TF.to_grayscale(PIL_RGB, n))
    with pytest.raises(TypeError):
        F.to_grayscale(ff.from_numpy(_U8.copy()))


# ---- deprecated int interpolation, antialias, errors -------------------------------------------
def test_int_interpolation_is_deprecated_but_works():
    with pytest.warns(UserWarning, match="deprecated"):
        t = T.Resize((6, 5), interpolation=3)
    assert t.interpolation == T.InterpolationMode.BICUBIC
    with pytest.warns(UserWarning, match="deprecated"):
        ours = F.resize(PIL_RGB, [6, 5], 0)
    assert_same(ours, TF.resize(PIL_RGB, [6, 5], TT.InterpolationMode.NEAREST))
    with pytest.warns(UserWarning, match="deprecated"):
        F.rotate(PIL_RGB, 10.0, 2)
    with pytest.raises(TypeError):
        F.resize(PIL_RGB, [6, 5], "bilinear")


def test_antialias_rules():
    with pytest.warns(UserWarning, match="Anti-alias"):
        F.resize(PIL_RGB, [6, 5], antialias=False)
    with pytest.raises(ValueError):
        F.resize(ff.from_numpy(_F32.copy()), [6, 5], T.InterpolationMode.NEAREST, antialias=True)
    with pytest.raises(NotImplementedError):
        F.resize(ff.from_numpy(_F32.copy()), [6, 5], T.InterpolationMode.LANCZOS)


@pytest.mark.parametrize("call,exc", [
    (lambda M, t: M.functional.resize(PIL_RGB, [1, 2, 3]), ValueError),
    (lambda M, t: M.functional.resize(PIL_RGB, [4, 5], max_size=9), ValueError),
    (lambda M, t: M.functional.resize(PIL_RGB, 8, max_size=8), ValueError),
    (lambda M, t: M.Resize(2.5), TypeError),
    (lambda M, t: M.CenterCrop((1, 2, 3)), ValueError),
    (lambda M, t: M.functional.pad(PIL_RGB, (1, 2, 3)), ValueError),
    (lambda M, t: M.functional.pad(PIL_RGB, 2, padding_mode="wrap"), ValueError),
    (lambda M, t: M.functional.pad(PIL_RGB, 2, fill=(1, 2)), ValueError),
    (lambda M, t: M.functional.pad(t(_F32.copy()), 2, fill=(1, 2)), TypeError),
    (lambda M, t: M.Pad(2, padding_mode="wrap"), ValueError),
    (lambda M, t: M.functional.to_tensor(t(_F32.copy())), TypeError),
    (lambda M, t: M.functional.to_tensor(np.zeros((2, 2, 2, 2))), ValueError),
    (lambda M, t: M.functional.pil_to_tensor(_U8), TypeError),
    (lambda M, t: M.functional.to_pil_image(PIL_RGB), TypeError),
    (lambda M, t: M.functional.to_pil_image(t(np.zeros((5, 2, 2), np.float32))), ValueError),
    (lambda M, t: M.functional.normalize(PIL_RGB, [0.5], [0.5]), TypeError),
    (lambda M, t: M.functional.normalize(t(_U8.copy()), [0.5], [0.5]), TypeError),
    (lambda M, t: M.functional.normalize(t(np.zeros((2, 2), np.float32)), [0.5], [0.5]), ValueError),
    (lambda M, t: M.functional.normalize(t(np.zeros((3, 2, 2), np.float32)), [0.5], [0.0]), ValueError),
    (lambda M, t: M.functional.hflip("not an image"), TypeError),
    (lambda M, t: M.functional.adjust_hue(PIL_RGB, 0.7), ValueError),
    (lambda M, t: M.functional.adjust_brightness(t(_F32.copy()), -1.0), ValueError),
    (lambda M, t: M.functional.adjust_gamma(PIL_RGB, -1.0), ValueError),
    (lambda M, t: M.functional.rgb_to_grayscale(t(np.zeros((2, 4, 4), np.float32))), TypeError),
    (lambda M, t: M.functional.rgb_to_grayscale(PIL_RGB, 2), ValueError),
    (lambda M, t: M.functional.gaussian_blur(PIL_RGB, 4), ValueError),
    (lambda M, t: M.functional.gaussian_blur(PIL_RGB, 3, -1.0), ValueError),
    (lambda M, t: M.functional.gaussian_blur(PIL_RGB, 3.0), TypeError),
    (lambda M, t: M.functional.rotate(PIL_RGB, "30"), TypeError),
    (lambda M, t: M.functional.affine(PIL_RGB, 0.0, [1], 1.0, 0.0), ValueError),
    (lambda M, t: M.functional.affine(PIL_RGB, 0.0, [1, 1], 0.0, 0.0), ValueError),
    (lambda M, t: M.functional.rotate(t(_F32.copy()), 10.0, M.InterpolationMode.BICUBIC), ValueError),
    (lambda M, t: M.functional.five_crop(PIL_RGB, 20), ValueError),
    (lambda M, t: M.functional.erase(PIL_RGB, 0, 0, 1, 1, 0), TypeError),
    (lambda M, t: M.Lambda(3), TypeError),
])
def test_errors_as_torchvision(call, exc):
    """Each bad call raises the same exception type here as in torchvision."""
    with pytest.raises(exc):
        call(TT, torch.from_numpy)
    with pytest.raises(exc):
        call(T, ff.from_numpy)


# ---- layout and repr -------------------------------------------------------------------------
def test_names_where_torchvision_has_them():
    import inspect
    from fusionflow.vision.transforms import autoaugment, functional_pil, functional_tensor  # noqa: F401
    missing = [n for n in TT.transforms.__all__ + TT.autoaugment.__all__ if not hasattr(T, n)]
    public = [n for n, f in vars(TF).items() if inspect.isfunction(f) and not n.startswith("_")
              and f.__module__ == TF.__name__]
    missing += ["functional." + n for n in public if not hasattr(F, n)]
    assert not missing, missing


def test_repr_as_torchvision():
    def build(M):
        return [M.Resize(5), M.CenterCrop(3), M.Pad(2), M.RandomCrop(3, padding=1), M.RandomHorizontalFlip(),
                M.RandomResizedCrop(4), M.FiveCrop(2), M.TenCrop(2), M.ColorJitter(0.2), M.RandomRotation(10),
                M.RandomAffine(5, translate=(0.1, 0.1)), M.Grayscale(), M.RandomGrayscale(), M.RandomErasing(),
                M.GaussianBlur(3), M.ToTensor(), M.PILToTensor(), M.ToPILImage(), M.Normalize([0.5], [0.5]),
                M.RandomApply([M.Pad(1)]), M.RandomChoice([M.Pad(1)]), M.RandomOrder([M.Pad(1)]),
                M.Compose([M.Pad(1), M.ToTensor()]), M.RandomPerspective(), M.RandomInvert(), M.RandomPosterize(3),
                M.RandomSolarize(9), M.RandomAdjustSharpness(2), M.RandomAutocontrast(), M.RandomEqualize(),
                M.AutoAugment(), M.RandAugment(), M.TrivialAugmentWide(), M.AugMix()]
    for ours, ref in zip(build(T), build(TT)):
        assert repr(ours) == repr(ref)


def test_module_transforms_compose_pickle_and_sequential():
    """The nn.Module transforms chain in nn.Sequential (torchvision's scriptable form) and
    survive pickling (DataLoader workers)."""
    import pickle
    mean, std = [0.4, 0.5, 0.6], [0.2, 0.3, 0.25]
    ours = ff.nn.Sequential(T.CenterCrop(6), T.Normalize(mean, std))(ff.from_numpy(_F32.copy()))
    ref = torch.nn.Sequential(TT.CenterCrop(6), TT.Normalize(mean, std))(torch.from_numpy(_F32.copy()))
    assert_same(ours, ref, 1e-6)
    pipe = T.Compose([T.AutoAugment(), T.Resize(8), T.RandomCrop(7), T.ToTensor(), T.Normalize(mean, std)])
    again = pickle.loads(pickle.dumps(pipe))
    assert repr(again) == repr(pipe)
    outs = []
    for t in (pipe, again):
        ff.manual_seed(1)
        outs.append(t(PIL_RGB).numpy())
    assert np.array_equal(*outs)
