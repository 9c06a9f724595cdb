"""fusionflow.vision.transforms, random transforms: (a) fusionflow.manual_seed repeats them,
(b) their draws follow torchvision's contract (checked by statistics over many draws, with
bounds a correct implementation fails with probability < 1e-4), and (c) with the parameters
they drew, the output equals torchvision's functional output for the same parameters."""
import itertools
import math

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

_RGB = np.random.default_rng(21).integers(0, 256, size=(9, 11, 3), dtype=np.uint8)
PIL_RGB = Image.fromarray(_RGB, "RGB")
U8 = np.ascontiguousarray(_RGB.transpose(2, 0, 1))
F32 = np.random.default_rng(22).random((3, 8, 10), dtype=np.float32)


def ours_and_ref(kind):
    if kind == "pil":
        return PIL_RGB.copy(), PIL_RGB.copy()
    arr = U8 if kind == "u8" else F32
    return ff.from_numpy(arr.copy()), torch.from_numpy(arr.copy())


def as_array(img):
    if isinstance(img, Image.Image):
        return np.asarray(img)
    if isinstance(img, (tuple, list)):
        return [as_array(i) for i in img]
    return img.numpy()


def assert_same(ours, ref, tol=0.0):
    a, b = as_array(ours), as_array(ref)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=0, atol=tol)


def binomial_ok(k, n, p, z=4.5):
    """k successes of n plausible for probability p (a normal bound at z sigmas)."""
    return abs(k - n * p) <= z * math.sqrt(n * p * (1 - p)) + 1


def chi2_ok(counts, limit):
    """Counts plausible as uniform over their cells (limit: the chi-square critical value)."""
    counts = np.asarray(counts, dtype=np.float64)
    expected = counts.sum() / counts.size
    return (counts > 0).all() and ((counts - expected) ** 2 / expected).sum() < limit


RANDOM_TRANSFORMS = [
    ("hflip", lambda: T.RandomHorizontalFlip()),
    ("vflip", lambda: T.RandomVerticalFlip()),
    ("crop", lambda: T.RandomCrop(5, padding=2, fill=4)),
    ("resized_crop", lambda: T.RandomResizedCrop((6, 5))),
    ("rotation", lambda: T.RandomRotation(40)),
    ("affine", lambda: T.RandomAffine(20, translate=(0.2, 0.1), scale=(0.8, 1.2), shear=(-5, 5, -3, 3))),
    ("jitter", lambda: T.ColorJitter(0.4, 0.4, 0.4, 0.1)),
    ("grayscale", lambda: T.RandomGrayscale(0.5)),
    ("blur", lambda: T.GaussianBlur(3)),
    ("apply", lambda: T.RandomApply([T.ColorJitter(0.5)], p=0.5)),
    ("choice", lambda: T.RandomChoice([T.RandomHorizontalFlip(1.0), T.RandomVerticalFlip(1.0), T.Pad(1)])),
    ("order", lambda: T.RandomOrder([T.Pad(1), T.RandomCrop(7), T.RandomHorizontalFlip()])),
    ("perspective", lambda: T.RandomPerspective(0.5, p=0.7)),
    ("elastic", lambda: T.ElasticTransform(alpha=30.0, sigma=1.0)),
    ("invert", lambda: T.RandomInvert()),
    ("solarize", lambda: T.RandomSolarize(0.5)),
    ("sharpness", lambda: T.RandomAdjustSharpness(2.0)),
    ("autocontrast", lambda: T.RandomAutocontrast()),
]


@pytest.mark.parametrize("kind", ["pil", "u8", "f32"])
@pytest.mark.parametrize("name,make", RANDOM_TRANSFORMS, ids=[r[0] for r in RANDOM_TRANSFORMS])
def test_manual_seed_repeats(name, make, kind):
    t = make()

    def run(seed):
        ff.manual_seed(seed)
        return [as_array(t(ours_and_ref(kind)[0])) for _ in range(6)]

    first, again, other = run(5), run(5), run(6)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not all(a.shape == b.shape and np.array_equal(a, b) for a, b in zip(first, other))


def test_random_erasing_repeats():
    t = T.RandomErasing(p=0.7, value="random")
    outs = []
    for _ in range(2):
        ff.manual_seed(3)
        outs.append([t(ff.from_numpy(F32.copy())).numpy() for _ in range(5)])
    assert all(np.array_equal(a, b) for a, b in zip(*outs))


# ---- (b) the draws' distribution ---------------------------------------------------------------
@pytest.mark.parametrize("make,changed", [
    (lambda p: T.RandomHorizontalFlip(p), lambda x, y: not np.array_equal(x, y)),
    (lambda p: T.RandomVerticalFlip(p), lambda x, y: not np.array_equal(x, y)),
    (lambda p: T.RandomGrayscale(p), lambda x, y: not np.array_equal(x, y)),
    (lambda p: T.RandomApply([T.Lambda(lambda im: im + 1)], p), lambda x, y: not np.array_equal(x, y)),
    (lambda p: T.RandomInvert(p), lambda x, y: not np.array_equal(x, y)),
    (lambda p: T.RandomPerspective(0.6, p), lambda x, y: not np.array_equal(x, y)),
], ids=["hflip", "vflip", "grayscale", "apply", "invert", "perspective"])
def test_probability(make, changed):
    x = (np.arange(48, dtype=np.float32).reshape(3, 4, 4) / 48) ** 2  # each of these changes it
    img = ff.from_numpy(x.copy())
    ff.manual_seed(0)
    t = make(0.3)
    n = 2000
    k = sum(changed(x, t(img).numpy()) for _ in range(n))
    assert binomial_ok(k, n, 0.3), k


def test_random_crop_offsets_uniform():
    img = ff.zeros(1, 6, 7)
    ff.manual_seed(1)
    draws = np.array([T.RandomCrop.get_params(img, (3, 3)) for _ in range(2000)])
    assert (draws[:, 2:] == 3).all()
    rows, cols = np.bincount(draws[:, 0], minlength=4), np.bincount(draws[:, 1], minlength=5)
    assert len(rows) == 4 and len(cols) == 5  # offsets in [0, h - th] and [0, w - tw] only
    assert chi2_ok(rows, 21.1) and chi2_ok(cols, 23.5), (rows, cols)  # chi2 p = 1e-4, df 3 and 4
    assert T.RandomCrop.get_params(img, (6, 7)) == (0, 0, 6, 7)
    with pytest.raises(ValueError):
        T.RandomCrop.get_params(img, (7, 7))


def test_random_resized_crop_area_and_ratio():
    img = ff.zeros(1, 40, 50)
    scale, ratio = (0.2, 0.9), (0.5, 2.0)
    ff.manual_seed(2)
    draws = np.array([T.RandomResizedCrop.get_params(img, scale, ratio) for _ in range(1000)])
    i, j, h, w = draws.T
    assert (i >= 0).all() and (j >= 0).all() and (i + h <= 40).all() and (j + w <= 50).all()
    area = h * w / 2000.0
    assert area.min() >= scale[0] - 0.02 and area.max() <= scale[1] + 0.02  # h, w are rounded
    assert area.min() < scale[0] + 0.05 and area.max() > scale[1] - 0.1  # the whole range is used
    r = w / h
    assert r.min() >= ratio[0] * 0.9 and r.max() <= ratio[1] * 1.1
    assert (r < 0.7).any() and (r > 1.4).any()
    # the accepted draws (a crop must fit) follow torchvision's distribution: same mean log-aspect
    torch.manual_seed(2)
    ref = np.array([TT.RandomResizedCrop.get_params(torch.zeros(1, 40, 50), scale, ratio) for _ in range(1000)])
    ref_r = ref[:, 3] / ref[:, 2]
    sd = math.sqrt((np.log(r).var() + np.log(ref_r).var()) / 1000)
    assert abs(np.log(r).mean() - np.log(ref_r).mean()) < 4.5 * sd
    assert abs(area.mean() - (ref[:, 2] * ref[:, 3] / 2000.0).mean()) < 4.5 * math.sqrt(2 * area.var() / 1000)


@pytest.mark.parametrize("hw,ratio", [((10, 40), (0.5, 2.0)), ((40, 10), (0.5, 2.0)), ((20, 25), (0.75, 1.33))])
def test_random_resized_crop_fallback_is_torchvision_center_crop(hw, ratio):
    """With an impossible scale every try misses and the crop is the deterministic centre one."""
    ours = T.RandomResizedCrop.get_params(ff.zeros(1, *hw), (2.0, 3.0), ratio)
    ref = TT.RandomResizedCrop.get_params(torch.zeros(1, *hw), (2.0, 3.0), ratio)
    assert tuple(ours) == tuple(ref)


def test_rotation_and_affine_ranges():
    ff.manual_seed(3)
    angles = np.array([T.RandomRotation.get_params([-30.0, 30.0]) for _ in range(2000)])
    assert angles.min() >= -30 and angles.max() <= 30 and angles.min() < -29 and angles.max() > 29
    assert abs(angles.mean()) < 4.5 * 60 / math.sqrt(12 * 2000)
    assert chi2_ok(np.histogram(angles, bins=6, range=(-30, 30))[0], 25.7)  # chi2 p = 1e-4, df 5
    assert T.RandomRotation(15).degrees == [-15.0, 15.0]
    params = [T.RandomAffine.get_params([-10.0, 10.0], [0.2, 0.1], [0.8, 1.2], [-5.0, 5.0, -2.0, 2.0], [30, 20])
              for _ in range(500)]
    angle, scale = np.array([p[0] for p in params]), np.array([p[2] for p in params])
    (tx, ty), (sx, sy) = np.array([p[1] for p in params]).T, np.array([p[3] for p in params]).T
    assert np.abs(angle).max() <= 10 and np.abs(tx).max() <= 6 and np.abs(ty).max() <= 2
    assert set(tx.tolist()) == set(range(-6, 7)) and tx.dtype.kind == "i"
    assert scale.min() >= 0.8 and scale.max() <= 1.2 and np.abs(sx).max() <= 5 and np.abs(sy).max() <= 2
    assert np.abs(sy).max() > 1.8


def test_color_jitter_factors_recovered_from_constant_image():
    """On a constant grey image brightness scales the level: the factor is out / in."""
    grey = ff.full((3, 2, 2), 0.4)
    t = T.ColorJitter(brightness=0.5)
    ff.manual_seed(4)
    factors = np.array([t(grey).numpy()[0, 0, 0] / 0.4 for _ in range(1000)])
    assert factors.min() >= 0.5 - 1e-5 and factors.max() <= 1.5 + 1e-5
    assert factors.min() < 0.52 and factors.max() > 1.48 and abs(factors.mean() - 1.0) < 0.05
    ff.manual_seed(4)
    drawn = [T.ColorJitter.get_params([0.5, 1.5], [0.7, 1.3], [0.0, 2.0], [-0.1, 0.1]) for _ in range(500)]
    orders = [tuple(d[0].tolist()) for d in drawn]
    assert all(sorted(o) == [0, 1, 2, 3] for o in orders) and len(set(orders)) == 24
    for k, (lo, hi) in enumerate([(0.5, 1.5), (0.7, 1.3), (0.0, 2.0), (-0.1, 0.1)], start=1):
        v = np.array([d[k] for d in drawn])
        assert v.min() >= lo and v.max() <= hi and v.min() < lo + 0.1 * (hi - lo) and v.max() > hi - 0.1 * (hi - lo)
    assert T.ColorJitter(0.5).contrast is None and T.ColorJitter(hue=0.2).hue == [-0.2, 0.2]
    assert T.ColorJitter(brightness=2).brightness == [0.0, 3.0]
    with pytest.raises(ValueError):
        T.ColorJitter(hue=(-0.7, 0.2))
    with pytest.raises(TypeError):
        T.ColorJitter(brightness="x")


def test_random_erasing_probability_region_and_value():
    img = ff.zeros(3, 10, 10)
    t = T.RandomErasing(p=0.4, scale=(0.1, 0.3), ratio=(0.5, 2.0), value=(7, 8, 9))
    ff.manual_seed(5)
    n, hits = 1000, 0
    for _ in range(n):
        out = t(img).numpy()
        mask = out[0] != 0
        if mask.any():
            hits += 1
            rows, cols = np.nonzero(mask)
            h, w = rows.max() - rows.min() + 1, cols.max() - cols.min() + 1
            assert mask.sum() == h * w and 0.05 <= h * w / 100 <= 0.4  # one rectangle, area ~ scale
            assert (out[:, mask] == np.array([[7], [8], [9]])).all()
    assert binomial_ok(hits, n, 0.4), hits
    ff.manual_seed(6)
    noisy = [T.RandomErasing(p=1.0, value="random")(ff.zeros(1, 20, 20)).numpy() for _ in range(20)]
    vals = np.concatenate([v[v != 0] for v in noisy])
    assert abs(vals.mean()) < 0.1 and abs(vals.std() - 1) < 0.1  # standard normal noise
    with pytest.raises(ValueError):
        T.RandomErasing(value="noise")
    with pytest.raises(ValueError):
        T.RandomErasing(p=1.5)


def test_gaussian_blur_sigma_and_choice_order():
    ff.manual_seed(7)
    sig = np.array([T.GaussianBlur.get_params(0.1, 2.0) for _ in range(1000)])
    assert sig.min() >= 0.1 and sig.max() <= 2.0 and abs(sig.mean() - 1.05) < 0.06
    picks = T.RandomChoice([lambda x: 0, lambda x: 1], p=[1, 3])
    k = sum(picks(None) for _ in range(2000))
    assert binomial_ok(k, 2000, 0.75), k
    uniform = T.RandomChoice([lambda x: 0, lambda x: 1, lambda x: 2])
    assert chi2_ok(np.bincount([uniform(None) for _ in range(1500)], minlength=3), 18.4)
    order = T.RandomOrder([lambda s: s + "a", lambda s: s + "b", lambda s: s + "c"])
    counts = {p: 0 for p in ("".join(q) for q in itertools.permutations("abc"))}
    for _ in range(1200):
        counts[order("")] += 1
    assert chi2_ok(list(counts.values()), 25.7), counts


# ---- (c) with the drawn parameters, torchvision's functional output -----------------------------
def _drawn(seed, draw):
    ff.manual_seed(seed)
    return draw()


@pytest.mark.parametrize("kind", ["pil", "u8", "f32"])
@pytest.mark.parametrize("opts", [dict(padding=2, fill=3), dict(padding=(1, 2), padding_mode="reflect"),
                                  dict(pad_if_needed=True, padding_mode="edge"), dict(padding=1, pad_if_needed=True,
                                                                                      padding_mode="symmetric")])
def test_random_crop_equals_functional(kind, opts):
    size = (12, 6)  # taller than the image: pad_if_needed pads rows
    ours_in, ref_in = ours_and_ref(kind)
    ref = ref_in
    if "padding" in opts:
        ref = TF.pad(ref, opts["padding"], opts.get("fill", 0), opts.get("padding_mode", "constant"))
    if opts.get("pad_if_needed"):
        h = TF.get_dimensions(ref)[1]
        ref = TF.pad(ref, [0, max(size[0] - h, 0)], opts.get("fill", 0), opts.get("padding_mode", "constant"))
    elif TF.get_dimensions(ref)[1] < size[0]:
        size = (5, 6)
    _, h, w = TF.get_dimensions(ref)
    params = _drawn(8, lambda: T.RandomCrop.get_params(ff.zeros(1, h, w), size))
    ours = _drawn(8, lambda: T.RandomCrop(size, **opts)(ours_in))
    assert_same(ours, TF.crop(ref, *params))


@pytest.mark.parametrize("kind", ["pil", "u8", "f32"])
def test_random_resized_crop_equals_functional(kind):
    ours_in, ref_in = ours_and_ref(kind)
    tol = {"pil": 0, "f32": 1e-5, "u8": 1}[kind]  # tensors: interpolate's float rounding
    for seed in range(4):
        params = _drawn(seed, lambda: T.RandomResizedCrop.get_params(ours_in, (0.08, 1.0), (0.75, 4 / 3)))
        ours = _drawn(seed, lambda: T.RandomResizedCrop((7, 6))(ours_in))
        assert_same(ours, TF.resized_crop(ref_in, *params, [7, 6]), tol)


@pytest.mark.parametrize("kind", ["pil", "u8", "f32"])
def test_random_rotation_and_affine_equal_functional(kind):
    ours_in, ref_in = ours_and_ref(kind)
    c = 3
    tensor_fill = None if kind == "pil" else [1.0] * c
    angle = _drawn(9, lambda: T.RandomRotation.get_params([-40.0, 40.0]))
    ours = _drawn(9, lambda: T.RandomRotation(40, fill=1)(ours_in))
    assert_same(ours, TF.rotate(ref_in, angle, fill=1 if kind == "pil" else tensor_fill))
    args = ([-20.0, 20.0], [0.2, 0.1], [0.8, 1.2], [-5.0, 5.0])
    w, h = F.get_image_size(ours_in)
    p = _drawn(10, lambda: T.RandomAffine.get_params(*args, [w, h]))
    ours = _drawn(10, lambda: T.RandomAffine(20, translate=(0.2, 0.1), scale=(0.8, 1.2), shear=5,
                                             interpolation=T.InterpolationMode.BILINEAR)(ours_in))
    ref = TF.affine(ref_in, *p, interpolation=TT.InterpolationMode.BILINEAR, fill=None if kind == "pil" else [0.0] * c)
    assert_same(ours, ref, 0 if kind == "pil" else 1e-4 if kind == "f32" else 1)


@pytest.mark.parametrize("kind", ["pil", "u8", "f32"])
def test_color_jitter_and_blur_equal_functional(kind):
    ours_in, ref_in = ours_and_ref(kind)
    ranges = ([0.6, 1.4], [0.6, 1.4], [0.6, 1.4], [-0.1, 0.1])
    for seed in range(3):
        order, *factors = _drawn(seed, lambda: T.ColorJitter.get_params(*ranges))
        ours = _drawn(seed, lambda: T.ColorJitter(0.4, 0.4, 0.4, 0.1)(ours_in))
        ref = ref_in
        fns = (TF.adjust_brightness, TF.adjust_contrast, TF.adjust_saturation, TF.adjust_hue)
        for k in order.tolist():
            ref = fns[k](ref, factors[k])
        assert_same(ours, ref, 0 if kind == "pil" else 1e-5 if kind == "f32" else 1)
    sigma = _drawn(11, lambda: T.GaussianBlur.get_params(0.1, 2.0))
    ours = _drawn(11, lambda: T.GaussianBlur(5)(ours_in))
    assert_same(ours, TF.gaussian_blur(ref_in, [5, 5], [sigma, sigma]), 1e-5 if kind == "f32" else 1)


def test_random_erasing_equals_functional():
    ours_in, ref_in = ours_and_ref("f32")

    def draw():
        assert ff.rand(1).item() < 1.0  # forward's coin
        return T.RandomErasing.get_params(ours_in, (0.02, 0.33), (0.3, 3.3), [0.5])
    i, j, h, w, v = _drawn(12, draw)
    ours = _drawn(12, lambda: T.RandomErasing(p=1.0, value=0.5)(ours_in))
    assert_same(ours, TF.erase(ref_in, i, j, h, w, torch.tensor([0.5])[:, None, None]))
    assert np.array_equal(ours_in.numpy(), F32)


def test_seeded_pipeline_on_pil():
    pipe = T.Compose([T.RandomResizedCrop(8), T.RandomHorizontalFlip(), T.ColorJitter(0.3, 0.3, 0.3, 0.05),
                      T.RandomRotation(10), T.ToTensor(), T.Normalize([0.5] * 3, [0.25] * 3),
                      T.RandomErasing(p=0.5)])
    runs = []
    for _ in range(2):
        ff.manual_seed(13)
        runs.append([pipe(PIL_RGB).numpy() for _ in range(4)])
    assert all(a.shape == (3, 8, 8) and np.array_equal(a, b) for a, b in zip(*runs))


def test_random_perspective_corners_and_functional():
    """Each corner moves inwards by at most distortion_scale * half the size, every offset in
    that range occurs; with the drawn corners the output is torchvision's perspective."""
    ff.manual_seed(14)
    w, h, scale = 11, 9, 0.5
    draws = [T.RandomPerspective.get_params(w, h, scale) for _ in range(400)]
    assert all(start == [[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]] for start, _ in draws)
    ends = np.array([end for _, end in draws])  # (n, 4 corners, xy)
    dx, dy = int(scale * (w // 2)), int(scale * (h // 2))
    assert set(ends[:, 0, 0]) == set(range(dx + 1)) and set(ends[:, 0, 1]) == set(range(dy + 1))
    assert set(ends[:, 2, 0]) == set(range(w - dx - 1, w)) and set(ends[:, 2, 1]) == set(range(h - dy - 1, h))
    for kind in ("pil", "u8", "f32"):
        ours_in, ref_in = ours_and_ref(kind)
        iw, ih = F.get_image_size(ours_in)

        def draw():
            assert ff.rand(1).item() < 1.0  # forward's coin
            return T.RandomPerspective.get_params(iw, ih, scale)
        start, end = _drawn(15, draw)
        ours = _drawn(15, lambda: T.RandomPerspective(scale, p=1.0, fill=2)(ours_in))
        coeffs = F._get_perspective_coeffs(start, end)  # torchvision's float32 solve differs in the 7th digit
        if kind == "pil":
            ref = TT.functional_pil.perspective(ref_in, coeffs, 2, 2)
        else:
            ref = TT.functional_tensor.perspective(ref_in, coeffs, "bilinear", [2.0] * 3)
        assert_same(ours, ref, 0 if kind == "pil" else 1e-4 if kind == "f32" else 1)


def test_elastic_transform_displacement_and_functional():
    ff.manual_seed(16)
    t = T.ElasticTransform(alpha=40.0, sigma=1.0)
    d = t.get_params(t.alpha, t.sigma, [9, 11]).numpy()
    assert d.shape == (1, 9, 11, 2) and np.abs(d[..., 0]).max() <= 40.0 / 9 and np.abs(d).max() > 0
    for kind in ("pil", "u8", "f32"):
        ours_in, ref_in = ours_and_ref(kind)
        _, h, w = F.get_dimensions(ours_in)
        disp = _drawn(17, lambda: t.get_params(t.alpha, t.sigma, [h, w]))
        ours = _drawn(17, lambda: t(ours_in))
        ref = TF.elastic_transform(ref_in, torch.from_numpy(disp.numpy()), fill=[0.0])
        assert_same(ours, ref, 0 if kind == "pil" else 1e-5 if kind == "f32" else 1)


# ---- autoaugment ------------------------------------------------------------------------------
AA = torchvision.transforms.autoaugment


def test_autoaugment_policies_and_spaces_are_torchvision_s():
    for policy in T.AutoAugmentPolicy:
        assert T.AutoAugment(policy).policies == TT.AutoAugment(TT.AutoAugmentPolicy(policy.value)).policies
    pairs = [(T.AutoAugment()._augmentation_space(10, (13, 17)), TT.AutoAugment()._augmentation_space(10, (13, 17))),
             (T.RandAugment()._augmentation_space(31, (9, 5)), TT.RandAugment()._augmentation_space(31, (9, 5))),
             (T.TrivialAugmentWide()._augmentation_space(31), TT.TrivialAugmentWide()._augmentation_space(31))]
    for all_ops in (True, False):
        pairs.append((T.AugMix(all_ops=all_ops)._augmentation_space(10, (13, 17)),
                      TT.AugMix(all_ops=all_ops)._augmentation_space(10, (13, 17))))
    for ours, ref in pairs:
        assert list(ours) == list(ref)  # the order decides which op an index draws
        for name, (mags, signed) in ours.items():
            ref_mags, ref_signed = ref[name]
            assert signed == ref_signed
            if ref_mags.ndim == 0:
                assert mags is None
            else:
                np.testing.assert_allclose(mags, ref_mags.numpy(), rtol=1e-6, atol=1e-5)


# magnitudes off the values where a nearest sample lands exactly on a pixel edge (shear 0.2
# puts every 5th row there), where float rounding alone would pick the pixel
OPS = [("ShearX", 0.23), ("ShearY", -0.25), ("TranslateX", 3.0), ("TranslateY", -2.0), ("Rotate", 17.0),
       ("Brightness", 0.4), ("Color", -0.5), ("Contrast", 0.3), ("Sharpness", 0.8), ("Posterize", 3.0),
       ("Solarize", 120.0), ("AutoContrast", 0.0), ("Equalize", 0.0), ("Invert", 0.0), ("Identity", 0.0)]


@pytest.mark.parametrize("kind", ["pil", "u8"])
@pytest.mark.parametrize("op,magnitude", OPS, ids=[o[0] for o in OPS])
def test_autoaugment_ops_equal_torchvision(op, magnitude, kind):
    ours_in, ref_in = ours_and_ref(kind)
    fill = None if kind == "pil" else [3.0] * 3
    ours = T.autoaugment._apply_op(ours_in, op, magnitude, T.InterpolationMode.NEAREST, fill)
    ref = AA._apply_op(ref_in, op, magnitude, TT.InterpolationMode.NEAREST, fill)
    assert_same(ours, ref, 0 if kind == "pil" or op in ("ShearX", "ShearY", "TranslateX", "TranslateY") else 1)


@pytest.mark.parametrize("kind", ["pil", "u8"])
@pytest.mark.parametrize("make", [lambda: T.AutoAugment(), lambda: T.AutoAugment(T.AutoAugmentPolicy.CIFAR10),
                                  lambda: T.AutoAugment(T.AutoAugmentPolicy.SVHN), lambda: T.RandAugment(),
                                  lambda: T.TrivialAugmentWide(), lambda: T.AugMix()],
                         ids=["imagenet", "cifar10", "svhn", "randaugment", "trivialaugment", "augmix"])
def test_autoaugment_family_repeats_under_seed(make, kind):
    t = make()

    def run(seed):
        ff.manual_seed(seed)
        return [as_array(t(ours_and_ref(kind)[0])) for _ in range(8)]
    first, again, other = run(21), run(21), run(22)
    assert all(a.shape == as_array(ours_and_ref(kind)[0]).shape for a in first)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other))


def test_autoaugment_draws():
    """get_params: a uniform sub-policy index, two uniform coins, two fair signs."""
    ff.manual_seed(23)
    draws = [T.AutoAugment.get_params(25) for _ in range(2500)]
    assert chi2_ok(np.bincount([d[0] for d in draws], minlength=25), 60.0)  # chi2 p = 1e-4, df 24
    coins = np.array([d[1].tolist() for d in draws])
    signs = np.array([d[2].tolist() for d in draws])
    assert coins.min() >= 0 and coins.max() < 1 and abs(coins.mean() - 0.5) < 0.02
    assert set(signs.ravel().tolist()) == {0, 1} and binomial_ok(int(signs.sum()), signs.size, 0.5)
