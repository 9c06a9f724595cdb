"""MNIST and its look-alikes (FashionMNIST, KMNIST, EMNIST), read from torchvision's layout:

    root/<ClassName>/raw/train-images-idx3-ubyte   (and train-labels-idx1-ubyte, t10k-...)
    root/<ClassName>/processed/training.pt, test.pt (torchvision's old cache; used first if both exist)

The raw files may also stay gzipped (`...-idx3-ubyte.gz`, as they are distributed), which
torchvision would first extract. .data is a uint8 tensor [N, 28, 28], .targets an int64 tensor."""
import gzip
import os
import string
import warnings

import numpy as np
from PIL import Image

import fusionflow as ff
from .utils import check_integrity, download_and_extract_archive, extract_archive, offline_error, verify_str_arg
from .vision import VisionDataset

# IDX ("SN3 Pascal Vincent") element types: the third byte of the magic number
_IDX_TYPES = {8: np.uint8, 9: np.int8, 11: np.int16, 12: np.int32, 13: np.float32, 14: np.float64}


def _read_bytes(path):
    """The file's bytes, gunzipped when it is gzip (by its magic number, whatever its name)."""
    with open(path, "rb") as f:
        head = f.read(2)
    opener = gzip.open if head == b"\x1f\x8b" else open
    with opener(path, "rb") as f:
        return bytearray(f.read())  # writable, so the tensor can share it


def read_sn3_pascalvincent_tensor(path, strict=True):
    """An IDX file as a tensor of its element type and shape (big-endian values made native)."""
    raw = _read_bytes(path)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise ValueError("read_sn3_pascalvincent_tensor: %s is not an IDX file (bad magic number)" % path)
    kind, ndim = raw[2], raw[3]
    if kind not in _IDX_TYPES or not 1 <= ndim <= 3:
        raise ValueError("read_sn3_pascalvincent_tensor: %s has element type %d and %d dimensions; expected a "
                         "type in %s and 1 to 3 dimensions" % (path, kind, ndim, sorted(_IDX_TYPES)))
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    values = np.frombuffer(raw, dtype=np.dtype(_IDX_TYPES[kind]).newbyteorder(">"), offset=4 + 4 * ndim)
    count = int(np.prod(shape))
    if strict and values.size != count:
        raise ValueError("read_sn3_pascalvincent_tensor: %s holds %d values, its header says %s"
                         % (path, values.size, shape))
    values = values[:count]
    if values.dtype.itemsize > 1:
        values = values.astype(values.dtype.newbyteorder("="))
    return ff.from_numpy(values.reshape(shape))


def read_label_file(path):
    x = read_sn3_pascalvincent_tensor(path, strict=False)
    if x.dtype != ff.uint8:
        raise TypeError("x should be of dtype uint8 instead of %s (%s)" % (x.dtype, path))
    if x.dim() != 1:
        raise ValueError("x should have 1 dimension instead of %d (%s)" % (x.dim(), path))
    return x.to(ff.int64)


def read_image_file(path):
    x = read_sn3_pascalvincent_tensor(path, strict=False)
    if x.dtype != ff.uint8:
        raise TypeError("x should be of dtype uint8 instead of %s (%s)" % (x.dtype, path))
    if x.dim() != 3:
        raise ValueError("x should have 3 dimension instead of %d (%s)" % (x.dim(), path))
    return x


def _present(path):
    """path, or path.gz when only the gzipped file is there, or None."""
    for p in (path, path + ".gz"):
        if check_integrity(p):
            return p
    return None


class MNIST(VisionDataset):
    """`MNIST <http://yann.lecun.com/exdb/mnist/>`_: root/MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte."""

    mirrors = ["http://yann.lecun.com/exdb/mnist/", "https://ossci-datasets.s3.amazonaws.com/mnist/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
        ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
        ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"),
    ]
    # directories a distribution installs the same .gz files into; download=True links from them
    local_mirrors = []
    training_file = "training.pt"
    test_file = "test.pt"
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four",
               "5 - five", "6 - six", "7 - seven", "8 - eight", "9 - nine"]

    @property
    def train_labels(self):
        warnings.warn("train_labels has been renamed targets")
        return self.targets

    @property
    def test_labels(self):
        warnings.warn("test_labels has been renamed targets")
        return self.targets

    @property
    def train_data(self):
        warnings.warn("train_data has been renamed data")
        return self.data

    @property
    def test_data(self):
        warnings.warn("test_data has been renamed data")
        return self.data

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if self._check_legacy_exist():
            self.data, self.targets = self._load_legacy_data()
            return
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it\n"
                               "(%s looked for %s, or the same names with .gz, in %s)"
                               % (type(self).__name__, ", ".join(os.path.basename(p) for p in self._raw_files()),
                                  self.raw_folder))
        self.data, self.targets = self._load_data()

    @property
    def raw_folder(self):
        return os.path.join(self.root, type(self).__name__, "raw")

    @property
    def processed_folder(self):
        return os.path.join(self.root, type(self).__name__, "processed")

    @property
    def class_to_idx(self):
        return {c: i for i, c in enumerate(self.classes)}

    def _check_legacy_exist(self):
        files = (self.training_file, self.test_file)
        return all(check_integrity(os.path.join(self.processed_folder, f)) for f in files)

    def _load_legacy_data(self):
        name = self.training_file if self.train else self.test_file
        data, targets = ff.load(os.path.join(self.processed_folder, name))
        return data, targets

    def _raw_files(self):
        """The uncompressed files this split reads (any of them may be there gzipped instead)."""
        prefix = "train" if self.train else "t10k"
        return [os.path.join(self.raw_folder, "%s-%s-ubyte" % (prefix, kind))
                for kind in ("images-idx3", "labels-idx1")]

    def _check_exists(self):
        # as torchvision: every file of both splits must be there, whichever split is asked for
        return all(_present(os.path.join(self.raw_folder, os.path.splitext(name)[0])) for name, _ in self.resources)

    def _load_data(self):
        images, labels = self._raw_files()
        return read_image_file(_present(images)), read_label_file(_present(labels))

    def download(self):
        """Nothing to do when the files are there; links them from a local mirror when one has
        them all; else says which files to fetch from where (there is no network)."""
        if self._check_exists():
            return
        names = [name for name, _ in self.resources]
        for mirror in self.local_mirrors:
            if all(os.path.isfile(os.path.join(mirror, n)) for n in names):
                os.makedirs(self.raw_folder, exist_ok=True)
                for n in names:
                    link = os.path.join(self.raw_folder, n)
                    if not _present(os.path.splitext(link)[0]):
                        print("Linking %s to %s" % (link, os.path.join(mirror, n)))
                        if os.path.lexists(link):
                            os.remove(link)
                        os.symlink(os.path.join(mirror, n), link)
                return
        missing = [(os.path.join(self.raw_folder, name), self.mirrors[0] + name, md5) for name, md5 in self.resources
                   if not _present(os.path.join(self.raw_folder, os.path.splitext(name)[0]))]
        hint = "(the same files are at %s; gzipped or extracted both do)" % ", ".join(self.mirrors)
        raise offline_error(type(self).__name__, missing, hint)

    def __getitem__(self, index):
        img, target = self.data[index], int(self.targets[index])
        img = Image.fromarray(img.numpy(), mode="L")
        return self._transformed(img, target)

    def __len__(self):
        return len(self.data)

    def extra_repr(self):
        return "Split: %s" % ("Train" if self.train is True else "Test")


class FashionMNIST(MNIST):
    """`Fashion-MNIST <https://github.com/zalandoresearch/fashion-mnist>`_: root/FashionMNIST/raw/...
    download=True links Debian's dataset-fashion-mnist files when they are installed."""

    mirrors = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
        ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"),
        ("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
        ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310"),
    ]
    local_mirrors = ["/usr/share/datasets/fashion-mnist"]
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]


class KMNIST(MNIST):
    """`Kuzushiji-MNIST <https://github.com/rois-codh/kmnist>`_: root/KMNIST/raw/..."""

    mirrors = ["http://codh.rois.ac.jp/kmnist/dataset/kmnist/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "bdb82020997e1d708af4cf47b453dcf7"),
        ("train-labels-idx1-ubyte.gz", "e144d726b3acfaa3e44228e80efcd344"),
        ("t10k-images-idx3-ubyte.gz", "5c965bf0a639b31b8f53240b1b52f4d7"),
        ("t10k-labels-idx1-ubyte.gz", "7320c461ea6c1c855c0b718fb2a4b134"),
    ]
    classes = ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"]


class EMNIST(MNIST):
    """`EMNIST <https://www.westernsydney.edu.au/bens/home/reproducible_research/emnist>`_:
    root/EMNIST/raw/emnist-<split>-{train,test}-{images-idx3,labels-idx1}-ubyte. The images stay
    as the files store them (transposed), as torchvision leaves them."""

    url = "https://www.itl.nist.gov/iaui/vip/cs_links/EMNIST/gzip.zip"
    md5 = "58c8d27c78d21e728a6bc7b3cc06412e"
    splits = ("byclass", "bymerge", "balanced", "letters", "digits", "mnist")
    # the lowercase letters drawn like their capitals, merged with them in bymerge / balanced
    _merged_classes = {"c", "i", "j", "k", "l", "m", "o", "p", "s", "u", "v", "w", "x", "y", "z"}
    _all_classes = set(string.digits + string.ascii_letters)
    classes_split_dict = {
        "byclass": sorted(_all_classes),
        "bymerge": sorted(_all_classes - _merged_classes),
        "balanced": sorted(_all_classes - _merged_classes),
        "letters": ["N/A"] + list(string.ascii_lowercase),
        "digits": list(string.digits),
        "mnist": list(string.digits),
    }

    def __init__(self, root, split, **kwargs):
        self.split = verify_str_arg(split, "split", self.splits)
        self.training_file = self._training_file(split)
        self.test_file = self._test_file(split)
        super().__init__(root, **kwargs)
        self.classes = self.classes_split_dict[self.split]

    @staticmethod
    def _training_file(split):
        return "training_%s.pt" % split

    @staticmethod
    def _test_file(split):
        return "test_%s.pt" % split

    @property
    def _file_prefix(self):
        return "emnist-%s-%s" % (self.split, "train" if self.train else "test")

    @property
    def images_file(self):
        return os.path.join(self.raw_folder, self._file_prefix + "-images-idx3-ubyte")

    @property
    def labels_file(self):
        return os.path.join(self.raw_folder, self._file_prefix + "-labels-idx1-ubyte")

    def _raw_files(self):
        return [self.images_file, self.labels_file]

    def _check_exists(self):
        return all(_present(f) for f in self._raw_files())

    def download(self):
        """Unpacks gzip.zip when it is in raw/ (as torchvision, after its download); else refuses."""
        if self._check_exists():
            return
        archive = os.path.join(self.raw_folder, os.path.basename(self.url))
        if not check_integrity(archive, self.md5):
            hint = ("(or put the archive %s itself in %s: its gzip/ folder holds these files as .gz)"
                    % (self.url, self.raw_folder))
            raise offline_error("EMNIST", [(f + ".gz", None, None) for f in self._raw_files() if not _present(f)], hint)
        download_and_extract_archive(self.url, download_root=self.raw_folder, md5=self.md5)
        gzip_folder = os.path.join(self.raw_folder, "gzip")
        for name in os.listdir(gzip_folder):
            if name.endswith(".gz"):
                extract_archive(os.path.join(gzip_folder, name), self.raw_folder)
        for name in os.listdir(gzip_folder):
            os.remove(os.path.join(gzip_folder, name))
        os.rmdir(gzip_folder)
