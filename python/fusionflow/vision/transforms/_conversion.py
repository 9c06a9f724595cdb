"""PIL image / numpy array <-> fusionflow tensor (transforms.functional's to_tensor,
pil_to_tensor and to_pil_image). Pixels cross through numpy; PIL reads and builds the images.

Like torch 1.13, fusionflow has no unsigned 16/32-bit dtypes: such arrays (pil_to_tensor of an
'I;16' image reads as uint16, which torch refuses) come out as the signed type one size up."""
import numpy as np
from PIL import Image

import fusionflow as ff
from .functional_pil import _is_pil_image

# PIL mode -> the numpy dtype torchvision reads it as (anything else: uint8)
_MODE_DTYPE = {"I": np.int32, "I;16": np.int16, "F": np.float32}
_WIDEN = {np.dtype(np.uint16): np.int32, np.dtype(np.uint32): np.int64}


def _from_numpy(arr):
    arr = np.ascontiguousarray(arr)
    if arr.dtype in _WIDEN:
        arr = arr.astype(_WIDEN[arr.dtype])
    return ff.from_numpy(arr)


def to_tensor(pic):
    """PIL image or HWC ndarray -> CHW tensor; uint8 data becomes float32 in [0, 1], other
    dtypes keep their values."""
    if not (_is_pil_image(pic) or isinstance(pic, np.ndarray)):
        raise TypeError("pic should be PIL Image or ndarray. Got %s" % type(pic))
    if isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError("pic should be 2/3 dimensional. Got %d dimensions." % pic.ndim)
        arr = pic[:, :, None] if pic.ndim == 2 else pic
    else:
        arr = np.array(pic, _MODE_DTYPE.get(pic.mode, np.uint8), copy=True)
        if pic.mode == "1":
            arr = arr * np.uint8(255)  # bilevel pixels read as 0/1
        arr = arr.reshape(pic.size[1], pic.size[0], len(pic.getbands()))
    img = _from_numpy(arr.transpose(2, 0, 1))
    return img.to(ff.float32) / 255 if img.dtype == ff.uint8 else img


def pil_to_tensor(pic):
    """PIL image -> CHW tensor of the image's own dtype (no rescaling)."""
    if not _is_pil_image(pic):
        raise TypeError("pic should be PIL Image. Got %s" % type(pic))
    arr = np.array(pic, copy=True).reshape(pic.size[1], pic.size[0], len(pic.getbands()))
    return _from_numpy(arr.transpose(2, 0, 1))


# channels -> (modes allowed, mode taken for uint8 data when none is given)
_MODES = {2: (["LA"], "LA"), 3: (["RGB", "YCbCr", "HSV"], "RGB"), 4: (["RGBA", "CMYK", "RGBX"], "RGBA")}
_GRAY_MODE = {np.dtype(np.uint8): "L", np.dtype(np.int16): "I;16", np.dtype(np.uint16): "I;16",
              np.dtype(np.int32): "I", np.dtype(np.float32): "F"}


def to_pil_image(pic, mode=None):
    """CHW tensor or HWC ndarray -> PIL image; float tensors are scaled by 255 to uint8
    unless mode is 'F'."""
    if isinstance(pic, ff.Tensor):
        if pic.ndim not in (2, 3):
            raise ValueError("pic should be 2/3 dimensional. Got %d dimensions." % pic.ndim)
        if pic.ndim == 2:
            pic = pic.unsqueeze(0)
        if pic.shape[-3] > 4:
            raise ValueError("pic should not have > 4 channels. Got %d channels." % pic.shape[-3])
        if pic.is_floating_point() and mode != "F":
            pic = (pic * 255).to(ff.uint8)
        npimg = np.transpose(pic.numpy(), (1, 2, 0))
    elif isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError("pic should be 2/3 dimensional. Got %d dimensions." % pic.ndim)
        npimg = pic[:, :, None] if pic.ndim == 2 else pic
        if npimg.shape[-1] > 4:
            raise ValueError("pic should not have > 4 channels. Got %d channels." % npimg.shape[-1])
    else:
        raise TypeError("pic should be Tensor or ndarray. Got %s." % type(pic))

    channels = npimg.shape[2]
    if channels == 1:
        npimg = npimg[:, :, 0]
        if mode == "I;16" and npimg.dtype == np.int32:  # an 'I;16' image read by pil_to_tensor (see above)
            npimg = npimg.astype(np.uint16)
        expected = _GRAY_MODE.get(npimg.dtype)
        if mode is not None and mode != expected:
            raise ValueError("Incorrect mode (%s) supplied for input type %s. Should be %s"
                             % (mode, npimg.dtype, expected))
        mode = expected
    else:
        allowed, default = _MODES[channels]
        if mode is not None and mode not in allowed:
            raise ValueError("Only modes %s are supported for %dD inputs" % (allowed, channels))
        if mode is None and npimg.dtype == np.uint8:
            mode = default
    if mode is None:
        raise TypeError("Input type %s is not supported" % npimg.dtype)
    return Image.fromarray(npimg, mode=mode)
