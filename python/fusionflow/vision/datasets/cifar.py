"""CIFAR10 / CIFAR100 from the Python pickles of the official archives, in torchvision's layout:
root/cifar-10-batches-py/{data_batch_1..5, test_batch, batches.meta} and
root/cifar-100-python/{train, test, meta}. Every file is md5-checked, as torchvision does (set an
entry's md5 to None in train_list / test_list / meta to accept files of your own).
.data stays a numpy uint8 array [N, 32, 32, 3] and .targets a list of ints, as torchvision keeps them."""
import os
import pickle

import numpy as np
from PIL import Image

from .utils import check_integrity, download_and_extract_archive, offline_error
from .vision import VisionDataset


class CIFAR10(VisionDataset):
    """`CIFAR10 <https://www.cs.toronto.edu/~kriz/cifar.html>`_; root holds cifar-10-batches-py/."""

    base_folder = "cifar-10-batches-py"
    url = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
    filename = "cifar-10-python.tar.gz"
    tgz_md5 = "c58f30108f718f92721af3b95e74349a"
    train_list = [
        ["data_batch_1", "c99cafc152244af753f735de768cd75f"],
        ["data_batch_2", "d4bba439e000b95fd0a9bffe97cbabec"],
        ["data_batch_3", "54ebc095f3ab1f0389bbae665268c751"],
        ["data_batch_4", "634d18415352ddfa80567beed471001a"],
        ["data_batch_5", "482c414d41f54cd18b22e5b47cb7c3cb"],
    ]
    test_list = [["test_batch", "40351d587109b95175f43aff81a1287e"]]
    meta = {"filename": "batches.meta", "key": "label_names", "md5": "5ff9c542aee3614f3951f8cda6e48888"}

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it\n"
                               + self._problems())
        batches, self.targets = [], []
        for name, _ in (self.train_list if train else self.test_list):
            entry = self._unpickle(os.path.join(self.root, self.base_folder, name))
            batches.append(entry["data"])
            # CIFAR100 has fine and coarse labels; torchvision's targets are the fine ones
            self.targets.extend(entry["labels"] if "labels" in entry else entry["fine_labels"])
        # the pickles hold rows of 3072 bytes: the R plane, then G, then B; make it N x H x W x C
        self.data = np.vstack(batches).reshape(-1, 3, 32, 32).transpose((0, 2, 3, 1))
        self._load_meta()

    @staticmethod
    def _unpickle(path):
        with open(path, "rb") as f:
            return pickle.load(f, encoding="latin1")

    def _files(self):
        return [(os.path.join(self.root, self.base_folder, n), md5) for n, md5 in self.train_list + self.test_list]

    def _problems(self):
        """Which files fail the check, and why, for the error message."""
        lines = ["(%s looked in %s:" % (type(self).__name__, os.path.join(self.root, self.base_folder))]
        for path, md5 in self._files():
            if not check_integrity(path, md5):
                state = "missing" if not os.path.isfile(path) else "md5 differs from %s" % md5
                lines.append("  %s: %s" % (os.path.basename(path), state))
        return "\n".join(lines) + ")"

    def _load_meta(self):
        path = os.path.join(self.root, self.base_folder, self.meta["filename"])
        if not check_integrity(path, self.meta["md5"]):
            raise RuntimeError("Dataset metadata file not found or corrupted. You can use download=True to download "
                               "it\n(%s: %s)" % (path, "missing" if not os.path.isfile(path) else "md5 differs"))
        self.classes = self._unpickle(path)[self.meta["key"]]
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}

    def __getitem__(self, index):
        img, target = Image.fromarray(self.data[index]), self.targets[index]
        return self._transformed(img, target)

    def __len__(self):
        return len(self.data)

    def _check_integrity(self):
        return all(check_integrity(path, md5) for path, md5 in self._files())

    def download(self):
        """Nothing to do when the files check out; extracts the archive when it is in root (as
        torchvision after its download); else says what to fetch from where."""
        if self._check_integrity():
            print("Files already downloaded and verified")
            return
        archive = os.path.join(self.root, self.filename)
        if not check_integrity(archive, self.tgz_md5):
            hint = "(or put the extracted folder %s/ in %s)" % (self.base_folder, self.root)
            raise offline_error(type(self).__name__, [(archive, self.url, self.tgz_md5)], hint)
        download_and_extract_archive(self.url, self.root, filename=self.filename, md5=self.tgz_md5)

    def extra_repr(self):
        return "Split: %s" % ("Train" if self.train is True else "Test")


class CIFAR100(CIFAR10):
    """`CIFAR100 <https://www.cs.toronto.edu/~kriz/cifar.html>`_; root holds cifar-100-python/.
    targets and classes are the 100 fine labels, as torchvision."""

    base_folder = "cifar-100-python"
    url = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
    filename = "cifar-100-python.tar.gz"
    tgz_md5 = "eb9058c3a382ffc7106e4002c42a8d85"
    train_list = [["train", "16019d7e3df5f24257cddd939b257f8d"]]
    test_list = [["test", "f0ef6b0ae62326f3e7ffdfab6717acfc"]]
    meta = {"filename": "meta", "key": "fine_label_names", "md5": "7973b15100ade9c7d40fb424638fde48"}
