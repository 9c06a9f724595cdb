"""The transforms the harness programs use, on uint8 HxW[xC] arrays (torchvision's PIL images)
and on tensors. Resize is nearest-neighbour: a stand-in, the same on both sides, not torchvision's
filter."""
import numpy as np
import torch


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x


class Lambda:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, x):
        return self.fn(x)


class ToTensor:
    def __call__(self, img):
        a = np.asarray(img)
        a = a[:, :, None] if a.ndim == 2 else a
        return torch.tensor(np.ascontiguousarray(a.transpose(2, 0, 1)).astype(np.float32) / 255.0)


class Normalize:
    def __init__(self, mean, std):
        self.mean, self.std = mean, std

    def __call__(self, t):
        c = t.shape[0]
        mean = torch.tensor(np.resize(np.asarray(self.mean, np.float32), c)).view(c, 1, 1)
        std = torch.tensor(np.resize(np.asarray(self.std, np.float32), c)).view(c, 1, 1)
        return (t - mean) / std


class Resize:
    def __init__(self, size):
        self.size = size

    def __call__(self, img):
        a = np.asarray(img)
        h, w = a.shape[:2]
        oh, ow = (self.size, self.size) if isinstance(self.size, int) else self.size
        rows = (np.arange(oh) * h) // oh
        cols = (np.arange(ow) * w) // ow
        return a[rows][:, cols]


class CenterCrop:
    def __init__(self, size):
        self.size = size

    def __call__(self, img):
        a = np.asarray(img)
        oh, ow = (self.size, self.size) if isinstance(self.size, int) else self.size
        top, left = (a.shape[0] - oh) // 2, (a.shape[1] - ow) // 2
        return a[top:top + oh, left:left + ow]
