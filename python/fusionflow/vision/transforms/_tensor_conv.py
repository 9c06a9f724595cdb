"""Conversions and per-pixel tensor maps: ToTensor, PILToTensor, ToPILImage, ConvertImageDtype,
Normalize, LinearTransformation."""
from fusionflow import nn
from . import functional as F


class ToTensor:
    """PIL image / HWC ndarray -> CHW float tensor in [0, 1] (for uint8 data)."""

    def __call__(self, pic):
        return F.to_tensor(pic)

    def __repr__(self):
        return "%s()" % type(self).__name__


class PILToTensor:
    """PIL image -> CHW tensor of the same dtype, unscaled."""

    def __call__(self, pic):
        return F.pil_to_tensor(pic)

    def __repr__(self):
        return "%s()" % type(self).__name__


class ToPILImage:
    """CHW tensor / HWC ndarray -> PIL image (mode inferred from channels and dtype if None)."""

    def __init__(self, mode=None):
        self.mode = mode

    def __call__(self, pic):
        return F.to_pil_image(pic, self.mode)

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, "" if self.mode is None else "mode=%s" % self.mode)


class ConvertImageDtype(nn.Module):
    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype

    def forward(self, image):
        return F.convert_image_dtype(image, self.dtype)


class Normalize(nn.Module):
    """(x - mean) / std per channel."""

    def __init__(self, mean, std, inplace=False):
        super().__init__()
        self.mean, self.std, self.inplace = mean, std, inplace

    def forward(self, tensor):
        return F.normalize(tensor, self.mean, self.std, self.inplace)

    def __repr__(self):
        return "%s(mean=%s, std=%s)" % (type(self).__name__, self.mean, self.std)


class LinearTransformation(nn.Module):
    """(flattened image - mean_vector) @ transformation_matrix, e.g. ZCA whitening."""

    def __init__(self, transformation_matrix, mean_vector):
        super().__init__()
        m = transformation_matrix
        if m.shape[0] != m.shape[1]:
            raise ValueError("transformation_matrix should be square. Got %s rectangular matrix." % (tuple(m.shape),))
        if mean_vector.shape[0] != m.shape[0]:
            raise ValueError("mean_vector should have the same length %d as any one of the dimensions of the "
                             "transformation_matrix [%s]" % (mean_vector.shape[0], tuple(m.shape)))
        self.transformation_matrix = m
        self.mean_vector = mean_vector

    def forward(self, tensor):
        shape = tuple(tensor.shape)
        n = shape[-3] * shape[-2] * shape[-1]
        if n != self.transformation_matrix.shape[0]:
            raise ValueError("Input tensor and transformation matrix have incompatible shape.[%d x %d x %d] != %d"
                             % (shape[-3], shape[-2], shape[-1], self.transformation_matrix.shape[0]))
        flat = tensor.reshape(-1, n) - self.mean_vector
        return flat.matmul(self.transformation_matrix).reshape(*shape)

    def __repr__(self):
        return "%s(transformation_matrix=%s, mean_vector=%s)" % (
            type(self).__name__, self.transformation_matrix.tolist(), self.mean_vector.tolist())
