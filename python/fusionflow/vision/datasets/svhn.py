"""SVHN's cropped digits from root/{train,test,extra}_32x32.mat (md5-checked, as torchvision),
read with the MAT-file reader in _matlab (scipy, which torchvision uses, is not needed)."""
import os

import numpy as np
from PIL import Image

from ._matlab import loadmat
from .utils import check_integrity, download_url, verify_str_arg
from .vision import VisionDataset


class SVHN(VisionDataset):
    """`SVHN <http://ufldl.stanford.edu/housenumbers/>`_. The files label the digit 0 as 10;
    here, as in torchvision, it is 0, so that the labels are 0..9. .data is a numpy uint8 array
    [N, 3, 32, 32] and .labels a numpy int64 array."""

    split_list = {
        "train": ["http://ufldl.stanford.edu/housenumbers/train_32x32.mat", "train_32x32.mat",
                  "e26dedcc434d2e4c54c9b2d4a06d8373"],
        "test": ["http://ufldl.stanford.edu/housenumbers/test_32x32.mat", "test_32x32.mat",
                 "eb5a983be6a315427106f1b164d9cef3"],
        "extra": ["http://ufldl.stanford.edu/housenumbers/extra_32x32.mat", "extra_32x32.mat",
                  "a93ce644f1a588dc4d68dda5feec44a7"],
    }

    def __init__(self, root, split="train", transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.split = verify_str_arg(split, "split", tuple(self.split_list))
        self.url, self.filename, self.file_md5 = self.split_list[split]
        if download:
            self.download()
        if not self._check_integrity():
            path = os.path.join(self.root, self.filename)
            state = "missing" if not os.path.isfile(path) else "its md5 differs from %s" % self.file_md5
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it\n"
                               "(SVHN looked for %s: %s)" % (path, state))
        mat = loadmat(os.path.join(self.root, self.filename))
        self.labels = mat["y"].astype(np.int64).squeeze()
        self.labels[self.labels == 10] = 0
        # the file holds X as H x W x C x N; .data is N x C x H x W, as torchvision's
        self.data = np.transpose(mat["X"], (3, 2, 0, 1))

    def __getitem__(self, index):
        img, target = self.data[index], int(self.labels[index])
        img = Image.fromarray(np.transpose(img, (1, 2, 0)))
        return self._transformed(img, target)

    def __len__(self):
        return len(self.data)

    def _check_integrity(self):
        return check_integrity(os.path.join(self.root, self.filename), self.split_list[self.split][2])

    def download(self):
        download_url(self.url, self.root, self.filename, self.split_list[self.split][2])

    def extra_repr(self):
        return "Split: %s" % self.split
