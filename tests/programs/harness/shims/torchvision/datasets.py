"""datasets.MNIST from Debian's dataset-fashion-mnist (same IDX format and shapes as MNIST),
cut to the first LIMIT examples so that one epoch stays a few steps long; the driver sets LIMIT."""
import gzip
import os

import numpy as np
import torch

DATA_DIR = "/usr/share/datasets/fashion-mnist"
LIMIT = None


def _read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(shape)


class MNIST:
    def __init__(self, root=None, train=True, download=False, transform=None, target_transform=None):
        split = "train" if train else "t10k"
        images = _read_idx(os.path.join(DATA_DIR, "%s-images-idx3-ubyte.gz" % split))
        labels = _read_idx(os.path.join(DATA_DIR, "%s-labels-idx1-ubyte.gz" % split))
        if LIMIT is not None:
            images, labels = images[:LIMIT], labels[:LIMIT]
        self._images, self._labels = images, labels
        self.data = torch.tensor(images.copy())
        self.targets = torch.tensor(labels.astype(np.int64))
        self.transform, self.target_transform = transform, target_transform

    def __len__(self):
        return len(self._labels)

    def __getitem__(self, index):
        # the image is a uint8 HxW array where torchvision gives a PIL image: transforms here take both
        img, target = self._images[index], int(self._labels[index])
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target


FashionMNIST = MNIST
