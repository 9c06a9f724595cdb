"""fusionflow.vision.io and fusionflow.vision.utils (make_grid, save_image, draw_bounding_boxes)
against torchvision 0.14 on the same bytes.

PNG decoding must give torchvision's pixels exactly in every mode. JPEG too: PIL and
torchvision both call the system's libjpeg(-turbo) with the same settings, so decoded pixels and
even encoded bytes agree exactly here; a difference would mean the two link different libjpeg
builds, which is worth a failure rather than a tolerance."""
import io

import numpy as np
import pytest

torchvision = pytest.importorskip("torchvision")
import torch  # noqa: E402
from PIL import Image  # noqa: E402
from torchvision import io as tio  # noqa: E402

import fusionflow as ff  # noqa: E402
import fusionflow.vision as fv  # noqa: E402
from fusionflow.vision import io as fio  # noqa: E402

MODES = [m.name for m in tio.ImageReadMode]


def encoded(img, fmt, **options):
    buf = io.BytesIO()
    img.save(buf, fmt, **options)
    return buf.getvalue()


def both(data):
    """The bytes as a torch and a fusionflow uint8 1-D tensor."""
    arr = np.frombuffer(bytearray(data), dtype=np.uint8)
    return torch.from_numpy(arr.copy()), ff.from_numpy(arr.copy())


def same(t, f):
    assert tuple(t.shape) == tuple(f.shape) and f.dtype == ff.uint8
    np.testing.assert_array_equal(t.numpy(), f.numpy())


def raises_like(fn_t, fn_f, exc=RuntimeError):
    """Both calls fail with exc."""
    with pytest.raises(exc):
        fn_t()
    with pytest.raises(exc):
        fn_f()


def smooth_rgb(h=24, w=30):
    yy, xx = np.mgrid[0:h, 0:w]
    return np.stack([(xx * 7) % 256, (yy * 9) % 256, ((xx + yy) * 4) % 256], -1).astype(np.uint8)


def png_images():
    rng = np.random.default_rng(0)
    rgb = Image.fromarray(rng.integers(0, 256, (7, 9, 3), dtype=np.uint8))
    gray = Image.fromarray(rng.integers(0, 256, (7, 9), dtype=np.uint8))
    return {
        "RGB": encoded(rgb, "PNG"),
        "RGBA": encoded(Image.fromarray(rng.integers(0, 256, (7, 9, 4), dtype=np.uint8)), "PNG"),
        "L": encoded(gray, "PNG"),
        "LA": encoded(Image.merge("LA", (gray, gray.point(lambda v: 255 - v))), "PNG"),
        "P 8-bit": encoded(rgb.quantize(200), "PNG"),
        "P 4-bit": encoded(rgb.quantize(16), "PNG", bits=4),
        "P 4-bit+tRNS": encoded(rgb.quantize(16), "PNG", bits=4, transparency=3),
        "1-bit": encoded(gray.point(lambda v: 255 if v > 128 else 0).convert("1"), "PNG"),
        "4-bit gray": encoded(gray, "PNG", bits=4),
    }


# Where torchvision 0.14's decode_png gives no image: a palette PNG asked for an alpha channel
# comes back as its RGB bytes spread over 4 (or 2) channels plus uninitialised memory; a palette
# of under 8 bits, UNCHANGED, as its packed rows misread; 1-bit gray with alpha gets alpha 1 (the
# filler at the 1-bit depth). Ours gives the image those modes mean (checked in the test below).
TORCHVISION_WRONG = {("P 8-bit", "GRAY_ALPHA"), ("P 8-bit", "RGB_ALPHA"), ("P 4-bit", "GRAY_ALPHA"),
                     ("P 4-bit", "RGB_ALPHA"), ("P 4-bit", "UNCHANGED"), ("P 4-bit+tRNS", "UNCHANGED"),
                     ("1-bit", "GRAY_ALPHA"), ("1-bit", "RGB_ALPHA")}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", list(png_images()))
def test_decode_png_matches_torchvision(kind, mode):
    t, f = both(png_images()[kind])
    ours = fio.decode_png(f, fio.ImageReadMode[mode])
    same(ours, fio.decode_image(f, fio.ImageReadMode[mode]))
    if (kind, mode) not in TORCHVISION_WRONG:
        same(tio.decode_png(t, tio.ImageReadMode[mode]), ours)
    elif mode == "UNCHANGED":  # the palette indices, as PIL reads them
        with Image.open(io.BytesIO(png_images()[kind])) as img:
            np.testing.assert_array_equal(ours.numpy()[0], np.asarray(img))
    else:  # the mode without alpha (which torchvision gets right), plus an opaque alpha channel
        plain = tio.decode_png(t, tio.ImageReadMode[mode.replace("_ALPHA", "")]).numpy()
        np.testing.assert_array_equal(ours.numpy(), np.concatenate([plain, np.full_like(plain[:1], 255)]))


def test_decode_png_refuses_16_bit_as_torchvision():
    data = encoded(Image.fromarray(np.arange(63, dtype=np.uint16).reshape(7, 9) * 1000), "PNG")
    t, f = both(data)
    raises_like(lambda: tio.decode_png(t), lambda: fio.decode_png(f))


def jpeg_sources():
    rgb = smooth_rgb()
    t_rgb = torch.from_numpy(rgb).permute(2, 0, 1).contiguous()
    return {
        "pil rgb q75": encoded(Image.fromarray(rgb), "JPEG", quality=75),
        "pil rgb q95": encoded(Image.fromarray(rgb), "JPEG", quality=95),
        "pil gray": encoded(Image.fromarray(rgb[..., 1]), "JPEG", quality=80),
        "torchvision rgb": bytes(tio.encode_jpeg(t_rgb, quality=60).numpy()),
    }


@pytest.mark.parametrize("mode", ["UNCHANGED", "GRAY", "RGB"])
@pytest.mark.parametrize("kind", list(jpeg_sources()))
def test_decode_jpeg_matches_torchvision_exactly(kind, mode):
    t, f = both(jpeg_sources()[kind])
    same(tio.decode_jpeg(t, tio.ImageReadMode[mode]), fio.decode_jpeg(f, fio.ImageReadMode[mode]))
    same(tio.decode_image(t, tio.ImageReadMode[mode]), fio.decode_image(f, fio.ImageReadMode[mode]))


@pytest.mark.parametrize("quality", [30, 75, 95])
@pytest.mark.parametrize("channels", [1, 3])
def test_encode_jpeg_gives_torchvision_bytes(channels, quality):
    chw = np.ascontiguousarray(smooth_rgb().transpose(2, 0, 1)[:channels])
    ours = fio.encode_jpeg(ff.from_numpy(chw.copy()), quality=quality)
    theirs = tio.encode_jpeg(torch.from_numpy(chw.copy()), quality=quality)
    assert ours.dtype == ff.uint8 and ours.dim() == 1
    assert ours.numpy().tobytes() == theirs.numpy().tobytes()


@pytest.mark.parametrize("level", [0, 6, 9])
@pytest.mark.parametrize("channels", [1, 3])
def test_encode_png_round_trips_through_torchvision(channels, level):
    chw = np.random.default_rng(1).integers(0, 256, (channels, 5, 7), dtype=np.uint8)
    png = fio.encode_png(ff.from_numpy(chw.copy()), compression_level=level)
    t_png = torch.from_numpy(png.numpy().copy())
    np.testing.assert_array_equal(tio.decode_png(t_png).numpy(), chw)
    np.testing.assert_array_equal(fio.decode_png(png).numpy(), chw)


def test_files_read_write(tmp_path):
    chw = np.ascontiguousarray(smooth_rgb(10, 12).transpose(2, 0, 1))
    fio.write_png(ff.from_numpy(chw.copy()), str(tmp_path / "a.png"))
    fio.write_jpeg(ff.from_numpy(chw.copy()), str(tmp_path / "a.jpg"), quality=90)
    tio.write_jpeg(torch.from_numpy(chw.copy()), str(tmp_path / "b.jpg"), quality=90)
    assert (tmp_path / "a.jpg").read_bytes() == (tmp_path / "b.jpg").read_bytes()
    for name in ("a.png", "a.jpg"):
        path = str(tmp_path / name)
        raw = fio.read_file(path)
        assert raw.dtype == ff.uint8 and raw.numpy().tobytes() == (tmp_path / name).read_bytes()
        same(tio.read_file(path), raw)
        for mode in ("UNCHANGED", "GRAY", "RGB"):
            same(tio.read_image(path, tio.ImageReadMode[mode]), fio.read_image(path, fio.ImageReadMode[mode]))
    fio.write_file(str(tmp_path / "copy.png"), fio.read_file(str(tmp_path / "a.png")))
    assert (tmp_path / "copy.png").read_bytes() == (tmp_path / "a.png").read_bytes()


def test_bad_input_fails_as_torchvision(tmp_path):
    png_t, png_f = both(png_images()["RGB"])
    jpg_t, jpg_f = both(jpeg_sources()["pil rgb q75"])
    gif_t, gif_f = both(encoded(Image.new("RGB", (4, 4)), "GIF"))
    raises_like(lambda: tio.decode_png(jpg_t), lambda: fio.decode_png(jpg_f))
    raises_like(lambda: tio.decode_jpeg(png_t), lambda: fio.decode_jpeg(png_f))
    raises_like(lambda: tio.decode_image(gif_t), lambda: fio.decode_image(gif_f))
    raises_like(lambda: tio.decode_png(png_t.float()), lambda: fio.decode_png(png_f.to(ff.float32)))
    raises_like(lambda: tio.decode_png(png_t[:0]), lambda: fio.decode_png(png_f[:0]))
    raises_like(lambda: tio.decode_jpeg(jpg_t, tio.ImageReadMode.RGB_ALPHA),
                lambda: fio.decode_jpeg(jpg_f, fio.ImageReadMode.RGB_ALPHA))
    raises_like(lambda: tio.read_file(str(tmp_path / "none.png")), lambda: fio.read_file(str(tmp_path / "none.png")))
    img_t = torch.zeros(3, 4, 4, dtype=torch.uint8)
    img_f = ff.zeros(3, 4, 4, dtype=ff.uint8)
    raises_like(lambda: tio.encode_png(img_t.float()), lambda: fio.encode_png(img_f.to(ff.float32)))
    raises_like(lambda: tio.encode_png(img_t[0]), lambda: fio.encode_png(img_f[0]))
    raises_like(lambda: tio.encode_png(torch.zeros(2, 4, 4, dtype=torch.uint8)),
                lambda: fio.encode_png(ff.zeros(2, 4, 4, dtype=ff.uint8)))
    raises_like(lambda: tio.encode_png(img_t, 10), lambda: fio.encode_png(img_f, 10))
    raises_like(lambda: tio.encode_jpeg(img_t, 0), lambda: fio.encode_jpeg(img_f, 0), ValueError)
    with pytest.raises(RuntimeError, match="decode_png: Content is not png"):
        fio.decode_png(jpg_f)
    with pytest.raises(TypeError, match="decode_png"):
        fio.decode_png(b"\x89PNG")


GRID_CASES = [
    ((5, 3, 4, 6), {}),
    ((5, 3, 4, 6), dict(nrow=2, padding=1, pad_value=0.5)),
    ((5, 3, 4, 6), dict(normalize=True)),
    ((4, 3, 3, 5), dict(normalize=True, scale_each=True, padding=0)),
    ((3, 1, 5, 5), dict(normalize=True, value_range=(-1.0, 1.0), nrow=3)),
    ((1, 1, 4, 4), {}),
    ((3, 4, 4), {}),
    ((1, 4, 4), dict(normalize=True)),
    ((4, 4), {}),
    ((9, 3, 2, 2), dict(nrow=4, padding=3, pad_value=1.0)),
]


@pytest.mark.parametrize("shape,kwargs", GRID_CASES)
def test_make_grid_and_save_image_match_torchvision(shape, kwargs, tmp_path):
    a = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    ours = fv.utils.make_grid(ff.from_numpy(a.copy()), **kwargs)
    theirs = torchvision.utils.make_grid(torch.from_numpy(a.copy()), **kwargs)
    same_float = ours.numpy(), theirs.numpy()
    assert same_float[0].shape == same_float[1].shape
    np.testing.assert_array_equal(*same_float)
    fv.utils.save_image(ff.from_numpy(a.copy()), str(tmp_path / "ours.png"), **kwargs)
    torchvision.utils.save_image(torch.from_numpy(a.copy()), str(tmp_path / "theirs.png"), **kwargs)
    buf = io.BytesIO()
    fv.utils.save_image(ff.from_numpy(a.copy()), buf, format="png", **kwargs)
    with Image.open(tmp_path / "ours.png") as o, Image.open(tmp_path / "theirs.png") as t, Image.open(buf) as b:
        assert o.mode == t.mode and o.size == t.size
        np.testing.assert_array_equal(np.asarray(o), np.asarray(t))
        np.testing.assert_array_equal(np.asarray(b), np.asarray(t))


def test_make_grid_of_a_list_and_of_uint8():
    rng = np.random.default_rng(3)
    imgs = [rng.integers(0, 256, (3, 4, 5), dtype=np.uint8) for _ in range(3)]
    ours = fv.utils.make_grid([ff.from_numpy(i.copy()) for i in imgs], nrow=2, pad_value=7)
    theirs = torchvision.utils.make_grid([torch.from_numpy(i.copy()) for i in imgs], nrow=2, pad_value=7)
    assert ours.dtype == ff.uint8
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(TypeError, match="make_grid"):
        fv.utils.make_grid([ff.zeros(3, 2, 2), np.zeros((3, 2, 2))])
    with pytest.raises(TypeError, match="make_grid"):
        fv.utils.make_grid(np.zeros((3, 2, 2)))
    with pytest.raises(TypeError):
        torchvision.utils.make_grid(torch.zeros(2, 3, 2, 2), normalize=True, value_range=[0, 1])
    with pytest.raises(TypeError, match="value_range"):
        fv.utils.make_grid(ff.zeros(2, 3, 2, 2), normalize=True, value_range=[0, 1])


@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("kwargs", [{}, dict(fill=True, width=2), dict(labels=["a", "bc", "d"], colors="red"),
                                    dict(colors=[(10, 200, 30), "#00ff88", "blue"], labels=["x", "y", "z"])])
def test_draw_bounding_boxes_matches_torchvision(channels, kwargs):
    img = np.random.default_rng(4).integers(0, 256, (channels, 30, 40), dtype=np.uint8)
    boxes = np.array([[1, 2, 20, 25], [5.7, 3.2, 39, 29], [0, 0, 10, 10]], dtype=np.float32)
    ours = fv.utils.draw_bounding_boxes(ff.from_numpy(img.copy()), ff.from_numpy(boxes.copy()), **kwargs)
    theirs = torchvision.utils.draw_bounding_boxes(torch.from_numpy(img.copy()), torch.from_numpy(boxes.copy()),
                                                   **kwargs)
    same(theirs, ours)


def test_draw_bounding_boxes_bad_input():
    img, box = ff.zeros(3, 8, 8, dtype=ff.uint8), ff.tensor([[4.0, 4.0, 2.0, 6.0]])
    with pytest.raises(ValueError, match="xmin, ymin, xmax, ymax"):
        fv.utils.draw_bounding_boxes(img, box)
    with pytest.raises(ValueError, match="uint8"):
        fv.utils.draw_bounding_boxes(img.to(ff.float32), ff.tensor([[1.0, 1.0, 2.0, 2.0]]))
    with pytest.raises(ValueError, match="labels"):
        fv.utils.draw_bounding_boxes(img, ff.tensor([[1.0, 1.0, 2.0, 2.0]]), labels=["a", "b"])
