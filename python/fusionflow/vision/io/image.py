"""torchvision.io's image functions, through PIL: files and encoded images are uint8 1-D tensors
of their bytes; decoded images are uint8 tensors [C, H, W].

What torchvision does in libpng / libjpeg is matched with PIL, which uses the same libjpeg:
JPEG decoding and encoding give torchvision's pixels and bytes. PNG's GRAY mode is libpng's
rgb_to_gray with the weights torchvision asks for (0.2989, 0.587), which PIL reproduces as a
conversion matrix: the weights in libpng's 15-bit fixed point, the sum truncated."""
import io as _pyio
from enum import Enum

import numpy as np
from PIL import Image

import fusionflow as ff

__all__ = ["ImageReadMode", "read_file", "write_file", "decode_png", "encode_png", "write_png", "decode_jpeg",
           "encode_jpeg", "write_jpeg", "decode_image", "read_image"]


class ImageReadMode(Enum):
    """How a decoder converts the image: as stored, or to gray / gray+alpha / RGB / RGBA."""
    UNCHANGED = 0
    GRAY = 1
    GRAY_ALPHA = 2
    RGB = 3
    RGB_ALPHA = 4


# libpng's fixed-point weights (of 32768) for torchvision's png_set_rgb_to_gray(0.2989, 0.587);
# the -0.5 cancels the rounding PIL adds, as libpng truncates. The sums are exact in float32.
_PNG_GRAY_MATRIX = (9794 / 32768, 19234 / 32768, 3740 / 32768, -0.5)


def _check_bytes(fn, data):
    """The bytes of a non-empty uint8 1-D tensor (the form encoded images and files take)."""
    if not isinstance(data, ff.Tensor):
        raise TypeError("%s: expected a uint8 1-D fusionflow tensor of file bytes, got %s" % (fn, type(data).__name__))
    if data.dtype != ff.uint8:
        raise RuntimeError("%s: Expected a uint8 tensor, got one of %s" % (fn, data.dtype))
    if data.dim() != 1 or data.numel() == 0:
        raise RuntimeError("%s: Expected a non empty 1-dimensional tensor, got shape %s"
                           % (fn, tuple(data.shape)))
    return data.numpy().tobytes()


def _check_mode(fn, mode, allowed=tuple(ImageReadMode)):
    if not isinstance(mode, ImageReadMode):
        raise TypeError("%s: mode should be an ImageReadMode, got %r" % (fn, mode))
    if mode not in allowed:
        raise RuntimeError("%s: The provided mode is not supported for %s files (got %s; supported: %s)"
                           % (fn, "JPEG" if fn == "decode_jpeg" else "PNG", mode.name,
                              ", ".join(m.name for m in allowed)))
    return mode


def _as_tensor(img):
    """A PIL image as a uint8 tensor [C, H, W]."""
    arr = np.asarray(img, dtype=np.uint8)
    arr = arr[None] if arr.ndim == 2 else arr.transpose(2, 0, 1)
    return ff.from_numpy(np.array(arr, order="C"))  # a copy: PIL's arrays are read-only


def _png_gray(img):
    """The gray band of an L / LA / RGB / RGBA image, as libpng makes it for torchvision."""
    if img.mode in ("L", "LA"):
        return img.getchannel("L")
    return img.convert("RGB").convert("L", matrix=_PNG_GRAY_MATRIX)


def _opaque(img):
    return Image.new("L", img.size, 255)


def decode_png(input, mode=ImageReadMode.UNCHANGED):
    """A PNG's pixels [C, H, W]. UNCHANGED keeps its channels (a palette image gives its indices,
    1/2/4-bit gray is scaled to 0..255); 16-bit PNGs are refused, as torchvision 0.14 does."""
    data, mode = _check_bytes("decode_png", input), _check_mode("decode_png", mode)
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        raise RuntimeError("decode_png: Content is not png! (it starts with %r)" % data[:8])
    img = Image.open(_pyio.BytesIO(data))
    img.load()
    if img.mode not in ("1", "L", "LA", "P", "PA", "RGB", "RGBA"):
        raise RuntimeError("decode_png: At most 8-bit PNG images are supported currently (this one is %s)"
                           % img.mode)
    if img.mode == "1":
        img = img.convert("L")
    if mode == ImageReadMode.UNCHANGED:
        return _as_tensor(img)
    if img.mode in ("P", "PA"):  # libpng expands the palette (and tRNS to alpha) first
        img = img.convert("RGBA" if img.mode == "PA" or "transparency" in img.info else "RGB")
    has_alpha = img.mode in ("LA", "RGBA")
    if mode == ImageReadMode.GRAY:
        return _as_tensor(_png_gray(img))
    if mode == ImageReadMode.GRAY_ALPHA:
        alpha = img.getchannel("A") if has_alpha else _opaque(img)
        return _as_tensor(Image.merge("LA", (_png_gray(img), alpha)))
    return _as_tensor(img.convert("RGB" if mode == ImageReadMode.RGB else "RGBA"))


def decode_jpeg(input, mode=ImageReadMode.UNCHANGED, device="cpu"):
    """A JPEG's pixels [C, H, W] (1 channel for a gray JPEG, else 3): decoded by libjpeg through
    PIL, GRAY asking libjpeg for its luma directly, as torchvision does."""
    data = _check_bytes("decode_jpeg", input)
    mode = _check_mode("decode_jpeg", mode, (ImageReadMode.UNCHANGED, ImageReadMode.GRAY, ImageReadMode.RGB))
    if not data.startswith(b"\xff\xd8"):
        head = (data + b"\0")[:2]
        raise RuntimeError("decode_jpeg: Not a JPEG file: starts with 0x%02x 0x%02x" % (head[0], head[1]))
    img = Image.open(_pyio.BytesIO(data))
    if mode == ImageReadMode.GRAY:
        img.draft("L", img.size)  # libjpeg's grayscale output (the Y plane), no rescaling
    unchanged = "L" if img.mode == "L" else "RGB"  # gray JPEGs stay 1 channel; YCbCr, CMYK become RGB
    img = img.convert({ImageReadMode.GRAY: "L", ImageReadMode.RGB: "RGB"}.get(mode, unchanged))
    out = _as_tensor(img)
    return out if str(device) == "cpu" else out.to(device)


def decode_image(input, mode=ImageReadMode.UNCHANGED):
    """decode_png or decode_jpeg, by the bytes' signature (only those two formats, as torchvision)."""
    data = _check_bytes("decode_image", input)
    if data.startswith(b"\x89PNG"):
        return decode_png(input, mode)
    if data.startswith(b"\xff\xd8\xff"):
        return decode_jpeg(input, mode)
    raise RuntimeError("decode_image: Unsupported image file. Only jpeg and png are currently supported.")


def read_file(path):
    """The file's bytes as a uint8 1-D tensor."""
    try:
        with open(path, "rb") as f:
            raw = bytearray(f.read())
    except OSError as e:
        raise RuntimeError("read_file: %s" % e) from e
    return ff.from_numpy(np.frombuffer(raw, dtype=np.uint8))


def write_file(filename, data):
    """Writes a uint8 1-D tensor's bytes to filename."""
    if not isinstance(data, ff.Tensor) or data.dtype != ff.uint8 or data.dim() != 1:
        raise RuntimeError("write_file: Input data should be a 1-dimensional uint8 tensor, got %s"
                           % (("a %s tensor of shape %s" % (data.dtype, tuple(data.shape)))
                              if isinstance(data, ff.Tensor) else type(data).__name__))
    with open(filename, "wb") as f:
        f.write(data.numpy().tobytes())


def read_image(path, mode=ImageReadMode.UNCHANGED):
    """A PNG or JPEG file's pixels, uint8 [C, H, W]."""
    return decode_image(read_file(path), mode)


def _pil_of(fn, input):
    """A uint8 [1 or 3, H, W] tensor as a PIL L / RGB image."""
    if not isinstance(input, ff.Tensor):
        raise TypeError("%s: expected a uint8 [C, H, W] fusionflow tensor, got %s" % (fn, type(input).__name__))
    if input.dtype != ff.uint8:
        raise RuntimeError("%s: Input tensor dtype should be uint8, got %s" % (fn, input.dtype))
    if input.dim() != 3:
        raise RuntimeError("%s: Input data should be a 3-dimensional tensor, got shape %s" % (fn, tuple(input.shape)))
    if input.shape[0] not in (1, 3):
        raise RuntimeError("%s: The number of channels should be 1 or 3, got: %d" % (fn, input.shape[0]))
    arr = np.ascontiguousarray(input.numpy().transpose(1, 2, 0))
    return Image.fromarray(arr[..., 0], "L") if arr.shape[2] == 1 else Image.fromarray(arr, "RGB")


def _encoded(img, fmt, **options):
    buf = _pyio.BytesIO()
    img.save(buf, fmt, **options)
    return ff.from_numpy(np.frombuffer(bytearray(buf.getvalue()), dtype=np.uint8))


def encode_png(input, compression_level=6):
    """The bytes of a PNG of a uint8 [1 or 3, H, W] tensor (zlib level compression_level, 0..9)."""
    img = _pil_of("encode_png", input)
    if not isinstance(compression_level, int) or not 0 <= compression_level <= 9:
        raise RuntimeError("encode_png: Compression level should be between 0 and 9, got %r" % (compression_level,))
    return _encoded(img, "PNG", compress_level=compression_level)


def write_png(input, filename, compression_level=6):
    write_file(filename, encode_png(input, compression_level))


def encode_jpeg(input, quality=75):
    """The bytes of a JPEG of a uint8 [1 or 3, H, W] tensor: libjpeg with the settings
    torchvision uses (PIL's defaults), so the bytes are torchvision's."""
    if not 1 <= quality <= 100:
        raise ValueError("encode_jpeg: Image quality should be a positive number between 1 and 100, got %r"
                         % (quality,))
    return _encoded(_pil_of("encode_jpeg", input), "JPEG", quality=quality)


def write_jpeg(input, filename, quality=75):
    write_file(filename, encode_jpeg(input, quality))
