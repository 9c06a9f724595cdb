"""fusionflow.vision.datasets against torchvision 0.14 on the same files, written here in
torchvision's layouts (IDX files, CIFAR pickles, SVHN .mat, an image tree), and on Debian's
Fashion-MNIST when it is installed: same lengths, classes, targets and pixel-identical images."""
import gzip
import os
import pickle
import shutil
import struct
import sys
import tarfile
import types
import zlib

import numpy as np
import pytest

torchvision = pytest.importorskip("torchvision")
import torch  # noqa: E402
from PIL import Image  # noqa: E402

import fusionflow as ff  # noqa: E402
from fusionflow.vision import datasets as fds  # noqa: E402
from fusionflow.vision.datasets._matlab import loadmat  # noqa: E402
from fusionflow.vision.datasets.utils import calculate_md5  # noqa: E402

tds = torchvision.datasets
DEBIAN_FASHION = "/usr/share/datasets/fashion-mnist"


class Named:
    """A transform with a fixed repr, so that both libraries' dataset reprs can be compared."""

    def __init__(self, fn, name):
        self.fn, self.name = fn, name

    def __call__(self, x):
        return self.fn(x)

    def __repr__(self):
        return self.name


def pixels_equal(ours, theirs):
    assert isinstance(ours, Image.Image) and ours.mode == theirs.mode and ours.size == theirs.size
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def same_samples(ours, theirs, indices):
    assert len(ours) == len(theirs)
    for i in indices:
        (img_o, t_o), (img_t, t_t) = ours[i], theirs[i]
        assert type(t_o) is type(t_t) is int and t_o == t_t
        pixels_equal(img_o, img_t)


# ---- MNIST family: IDX files -------------------------------------------------------------------

def write_idx(path, arr, gz=False):
    header = bytes([0, 0, 8, arr.ndim]) + b"".join(struct.pack(">I", d) for d in arr.shape)
    with (gzip.open if gz else open)(path, "wb") as f:
        f.write(header + arr.astype(np.uint8).tobytes())


def mnist_tree(root, folder, names, n_train=20, n_test=8, gz=False, seed=0):
    """root/folder/raw/ with the given (images, labels) file names per split; returns the arrays."""
    rng = np.random.default_rng(seed)
    raw = os.path.join(root, folder, "raw")
    os.makedirs(raw, exist_ok=True)
    arrays = {}
    for split, n in (("train", n_train), ("test", n_test)):
        images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, (n,), dtype=np.uint8)
        for name, arr in zip(names[split], (images, labels)):
            write_idx(os.path.join(raw, name + (".gz" if gz else "")), arr, gz)
        arrays[split] = images, labels
    return arrays


STD_NAMES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
             "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}


@pytest.mark.parametrize("name", ["MNIST", "FashionMNIST", "KMNIST"])
@pytest.mark.parametrize("train", [True, False])
def test_mnist_family_matches_torchvision(tmp_path, name, train):
    mnist_tree(str(tmp_path), name, STD_NAMES)
    shift = Named(lambda y: y + 100, "Shift()")
    ours = getattr(fds, name)(str(tmp_path), train=train, target_transform=shift)
    theirs = getattr(tds, name)(str(tmp_path), train=train, target_transform=shift)
    assert ours.data.dtype == ff.uint8 and ours.targets.dtype == ff.int64 and ours.train is train
    np.testing.assert_array_equal(ours.data.numpy(), theirs.data.numpy())
    np.testing.assert_array_equal(ours.targets.numpy(), theirs.targets.numpy())
    assert ours.classes == theirs.classes and ours.class_to_idx == theirs.class_to_idx
    assert ours.raw_folder == theirs.raw_folder and repr(ours) == repr(theirs)
    same_samples(ours, theirs, range(len(theirs)))
    assert ours[np.int64(3)][1] == theirs[3][1]  # sampler indices may be numpy integers


def test_mnist_reads_gzipped_raw_files_too(tmp_path):
    """torchvision reads only the extracted files; the .gz alone gives the same dataset here."""
    mnist_tree(str(tmp_path / "gz"), "MNIST", STD_NAMES, gz=True, seed=1)
    mnist_tree(str(tmp_path / "raw"), "MNIST", STD_NAMES, gz=False, seed=1)
    ours = fds.MNIST(str(tmp_path / "gz"), train=False, download=True)  # present: nothing to fetch
    same_samples(ours, tds.MNIST(str(tmp_path / "raw"), train=False), range(8))


@pytest.mark.parametrize("split", ["letters", "balanced", "digits"])
def test_emnist_matches_torchvision(tmp_path, split):
    names = {s: tuple("emnist-%s-%s-%s-ubyte" % (split, s, k) for k in ("images-idx3", "labels-idx1"))
             for s in ("train", "test")}
    mnist_tree(str(tmp_path), "EMNIST", names)
    for train in (True, False):
        ours, theirs = fds.EMNIST(str(tmp_path), split, train=train), tds.EMNIST(str(tmp_path), split, train=train)
        assert ours.classes == theirs.classes and ours.class_to_idx == theirs.class_to_idx
        np.testing.assert_array_equal(ours.targets.numpy(), theirs.targets.numpy())
        same_samples(ours, theirs, range(0, len(theirs), 3))
    with pytest.raises(ValueError, match="split"):
        fds.EMNIST(str(tmp_path), "bygone")
    with pytest.raises(ValueError, match="split"):
        tds.EMNIST(str(tmp_path), "bygone")


def test_mnist_processed_legacy_files(tmp_path):
    """torchvision's old cache, processed/training.pt and test.pt, is read before raw/."""
    folder = tmp_path / "MNIST" / "processed"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(2)
    for name, n in (("training.pt", 6), ("test.pt", 4)):
        torch.save((torch.from_numpy(rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)),
                    torch.from_numpy(rng.integers(0, 10, (n,)).astype(np.int64))), str(folder / name))
    for train in (True, False):
        ours, theirs = fds.MNIST(str(tmp_path), train=train), tds.MNIST(str(tmp_path), train=train)
        np.testing.assert_array_equal(ours.data.numpy(), theirs.data.numpy())
        same_samples(ours, theirs, range(len(theirs)))


def test_mnist_missing_and_offline_download(tmp_path):
    with pytest.raises(RuntimeError, match="Dataset not found. You can use download=True to download it"):
        tds.MNIST(str(tmp_path))
    with pytest.raises(RuntimeError, match="Dataset not found. You can use download=True") as err:
        fds.MNIST(str(tmp_path))
    assert os.path.join(str(tmp_path), "MNIST", "raw") in str(err.value)
    with pytest.raises(RuntimeError) as err:
        fds.MNIST(str(tmp_path), download=True)
    for name in ("train-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        assert os.path.join(str(tmp_path), "MNIST", "raw", name) in str(err.value)
        assert "http://yann.lecun.com/exdb/mnist/" + name in str(err.value)
    assert "network" in str(err.value)
    with pytest.raises(RuntimeError, match="gzip.zip"):
        fds.EMNIST(str(tmp_path), "mnist", download=True)
    with pytest.raises(RuntimeError, match="codh.rois.ac.jp"):
        fds.KMNIST(str(tmp_path), download=True)


def fashion_or_skip():
    if not os.path.isdir(DEBIAN_FASHION):
        if os.environ.get("FF_REQUIRE_TORCH"):
            pytest.fail("Debian's dataset-fashion-mnist is not installed (%s is missing)" % DEBIAN_FASHION)
        pytest.skip("Debian's dataset-fashion-mnist is not installed")


def test_fashion_mnist_from_debian(tmp_path):
    """download=True links Debian's files into root/FashionMNIST/raw/; torchvision is given them
    extracted (its download would check upstream's md5, which Debian's repacked .gz lack)."""
    fashion_or_skip()
    ours_root, tv_raw = tmp_path / "ours", tmp_path / "tv" / "FashionMNIST" / "raw"
    tv_raw.mkdir(parents=True)
    for name in os.listdir(DEBIAN_FASHION):
        with gzip.open(os.path.join(DEBIAN_FASHION, name)) as src, open(tv_raw / name[:-3], "wb") as dst:
            shutil.copyfileobj(src, dst)
    for train in (False, True):
        ours = fds.FashionMNIST(str(ours_root), train=train, download=True)
        theirs = tds.FashionMNIST(str(tmp_path / "tv"), train=train)
        assert len(ours) == len(theirs) == (60000 if train else 10000)
        np.testing.assert_array_equal(ours.targets.numpy(), theirs.targets.numpy())
        np.testing.assert_array_equal(ours.data.numpy(), theirs.data.numpy())
        same_samples(ours, theirs, range(0, len(theirs), len(theirs) // 300))
    assert os.path.islink(ours_root / "FashionMNIST" / "raw" / "train-images-idx3-ubyte.gz")


def test_dataloader_over_mnist(tmp_path):
    arrays = mnist_tree(str(tmp_path), "MNIST", STD_NAMES)
    to_tensor = Named(lambda img: ff.from_numpy(np.array(img, dtype=np.float32) / 255), "ToFloat()")
    ds = fds.MNIST(str(tmp_path), transform=to_tensor)
    batches = list(ff.utils.data.DataLoader(ds, batch_size=6))
    assert [tuple(x.shape) for x, _ in batches] == [(6, 28, 28)] * 3 + [(2, 28, 28)]
    images = np.concatenate([x.numpy() for x, _ in batches])
    targets = np.concatenate([y.numpy() for _, y in batches])
    assert batches[0][1].dtype == ff.int64
    np.testing.assert_array_equal(images, arrays["train"][0].astype(np.float32) / 255)
    np.testing.assert_array_equal(targets, arrays["train"][1])
    ds.data, ds.targets = ds.data[:5], ds.targets[:5]  # subsetting as scripts do
    assert len(ds) == 5 and len(list(ff.utils.data.DataLoader(ds, batch_size=2, shuffle=True))) == 3


# ---- CIFAR: pickles ------------------------------------------------------------------------------

def cifar_tree(root, hundred=False, n=4, seed=0):
    rng = np.random.default_rng(seed)
    folder = os.path.join(root, "cifar-100-python" if hundred else "cifar-10-batches-py")
    os.makedirs(folder, exist_ok=True)

    def dump(name, obj):
        with open(os.path.join(folder, name), "wb") as f:
            pickle.dump(obj, f)

    def batch(count):
        entry = {"data": rng.integers(0, 256, (count, 3072), dtype=np.uint8),
                 "filenames": ["img%d.png" % i for i in range(count)]}
        if hundred:
            entry["fine_labels"] = rng.integers(0, 100, count).tolist()
            entry["coarse_labels"] = rng.integers(0, 20, count).tolist()
        else:
            entry["labels"] = rng.integers(0, 10, count).tolist()
        return entry

    if hundred:
        dump("train", batch(3 * n))
        dump("test", batch(n))
        dump("meta", {"fine_label_names": ["f%02d" % i for i in range(100)],
                      "coarse_label_names": ["c%02d" % i for i in range(20)]})
    else:
        for i in range(1, 6):
            dump("data_batch_%d" % i, batch(n))
        dump("test_batch", batch(n))
        dump("batches.meta", {"label_names": ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog",
                                              "horse", "ship", "truck"]})
    return folder


@pytest.fixture
def no_md5(monkeypatch):
    """Accept files of our own in place of the official ones (their checksums cannot match)."""
    def patch(*classes):
        for cls in classes:
            for attr in ("train_list", "test_list"):
                monkeypatch.setattr(cls, attr, [[name, None] for name, _ in getattr(cls, attr)])
            monkeypatch.setattr(cls, "meta", dict(cls.meta, md5=None))
    return patch


@pytest.mark.parametrize("name", ["CIFAR10", "CIFAR100"])
def test_cifar_matches_torchvision(tmp_path, no_md5, name):
    no_md5(getattr(fds, name), getattr(tds, name))
    cifar_tree(str(tmp_path), hundred=name == "CIFAR100")
    flip = Named(lambda img: img.transpose(Image.FLIP_LEFT_RIGHT), "Flip()")
    theirs_train = getattr(tds, name)(str(tmp_path), train=True)
    for train in (True, False):
        ours = getattr(fds, name)(str(tmp_path), train=train, transform=flip)
        theirs = getattr(tds, name)(str(tmp_path), train=train, transform=flip)
        assert isinstance(ours.data, np.ndarray) and ours.data.shape == theirs.data.shape == (len(theirs), 32, 32, 3)
        np.testing.assert_array_equal(ours.data, theirs.data)
        assert isinstance(ours.targets, list) and ours.targets == theirs.targets
        assert ours.classes == theirs.classes and ours.class_to_idx == theirs.class_to_idx
        assert repr(ours) == repr(theirs)
        same_samples(ours, theirs, range(len(theirs)))
        assert ours[0][0].mode == "RGB"
    chw = Named(lambda img: ff.from_numpy(np.array(img).transpose(2, 0, 1).copy()), "CHW()")
    loader = ff.utils.data.DataLoader(getattr(fds, name)(str(tmp_path), transform=chw), batch_size=5)
    images, targets = zip(*loader)
    assert images[0].shape == (5, 3, 32, 32) and images[0].dtype == ff.uint8 and targets[0].dtype == ff.int64
    np.testing.assert_array_equal(np.concatenate([x.numpy() for x in images]), theirs_train.data.transpose(0, 3, 1, 2))
    assert np.concatenate([y.numpy() for y in targets]).tolist() == theirs_train.targets


def test_cifar_checks_md5_and_extracts_the_archive(tmp_path, monkeypatch):
    folder = cifar_tree(str(tmp_path / "build"))
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted") as err:
        fds.CIFAR10(str(tmp_path / "build"))  # the official checksums: our files fail them
    assert "data_batch_1: md5 differs" in str(err.value)
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        tds.CIFAR10(str(tmp_path / "build"))
    archive = tmp_path / "root" / "cifar-10-python.tar.gz"
    archive.parent.mkdir()
    with tarfile.open(str(archive), "w:gz") as tar:
        tar.add(folder, arcname="cifar-10-batches-py")
    with pytest.raises(RuntimeError) as err:
        fds.CIFAR10(str(tmp_path / "root"), download=True)
    assert "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz" in str(err.value)
    assert str(archive) in str(err.value) and "md5" in str(err.value)
    for cls in (fds.CIFAR10, tds.CIFAR10):  # the archive is "downloaded": extracted, no network
        monkeypatch.setattr(cls, "tgz_md5", calculate_md5(str(archive)))
        monkeypatch.setattr(cls, "train_list", [[n, calculate_md5(os.path.join(folder, n))] for n, _ in cls.train_list])
        monkeypatch.setattr(cls, "test_list", [[n, calculate_md5(os.path.join(folder, n))] for n, _ in cls.test_list])
        monkeypatch.setattr(cls, "meta", dict(cls.meta, md5=calculate_md5(os.path.join(folder, "batches.meta"))))
    ours = fds.CIFAR10(str(tmp_path / "root"), download=True)
    same_samples(ours, tds.CIFAR10(str(tmp_path / "root"), download=True), range(len(ours)))
    with pytest.raises(RuntimeError, match="cifar-100-python.tar.gz"):
        fds.CIFAR100(str(tmp_path / "none"), download=True)


# ---- SVHN: MAT-files -----------------------------------------------------------------------------

def mat_element(kind, payload):
    return struct.pack("<II", kind, len(payload)) + payload + b"\0" * (-len(payload) % 8)


def mat_variable(name, arr, mx_class, compress):
    """One MAT v5 variable (miMATRIX), stored in arr's own type, column-major."""
    mi = {np.dtype(np.uint8): 2, np.dtype(np.int32): 5, np.dtype(np.float64): 9}[arr.dtype]
    body = (mat_element(6, struct.pack("<II", mx_class, 0)) + mat_element(5, struct.pack("<%di" % arr.ndim, *arr.shape))
            + mat_element(1, name.encode()) + mat_element(mi, arr.tobytes(order="F")))
    element = struct.pack("<II", 14, len(body)) + body
    return struct.pack("<II", 15, len(zlib.compress(element))) + zlib.compress(element) if compress else element


def write_mat(path, variables, compress=True):
    header = b"MATLAB 5.0 MAT-file, written by fusionflow's tests".ljust(116) + b"\0" * 8 + b"\x00\x01IM"
    with open(path, "wb") as f:
        f.write(header + b"".join(mat_variable(n, a, c, compress) for n, (a, c) in variables.items()))


@pytest.mark.parametrize("compress", [True, False])
def test_loadmat_reads_level5_files(tmp_path, compress):
    rng = np.random.default_rng(3)
    variables = {"X": (rng.integers(0, 256, (4, 5, 3, 2), dtype=np.uint8), 9),
                 "y": (rng.integers(1, 11, (2, 1), dtype=np.uint8), 6),  # double class, stored as uint8
                 "w": (rng.standard_normal((3, 2)), 6), "k": (np.arange(6, dtype=np.int32).reshape(2, 3), 12)}
    write_mat(str(tmp_path / "a.mat"), variables, compress)
    got = loadmat(str(tmp_path / "a.mat"))
    for name, (arr, _) in variables.items():
        assert got[name].dtype == arr.dtype and got[name].shape == arr.shape
        np.testing.assert_array_equal(got[name], arr)
    assert loadmat(str(tmp_path / "a.mat"), mat_dtype=True)["y"].dtype == np.float64
    (tmp_path / "bad.mat").write_bytes(b"\x89HDF\r\n" + b"\0" * 200)
    with pytest.raises(ValueError, match="Level 5"):
        loadmat(str(tmp_path / "bad.mat"))


def test_svhn_matches_torchvision(tmp_path, monkeypatch):
    rng = np.random.default_rng(4)
    X = rng.integers(0, 256, (32, 32, 3, 7), dtype=np.uint8)
    y = rng.integers(1, 11, (7, 1), dtype=np.uint8)
    y[0] = 10  # SVHN's label of the digit 0
    write_mat(str(tmp_path / "test_32x32.mat"), {"X": (X, 9), "y": (y, 6)})
    # torchvision reads the file with scipy, which is not installed: hand its SVHN the very arrays
    # written, so that what is compared is our reading of the file and the rest of SVHN
    scipy = types.ModuleType("scipy")
    scipy.io = types.SimpleNamespace(loadmat=lambda path: {"X": X, "y": y})
    monkeypatch.setitem(sys.modules, "scipy", scipy)
    monkeypatch.setitem(sys.modules, "scipy.io", scipy.io)
    for cls in (fds.SVHN, tds.SVHN):
        monkeypatch.setattr(cls, "split_list", {k: [u, f, None] for k, (u, f, _) in cls.split_list.items()})
    ours, theirs = fds.SVHN(str(tmp_path), split="test"), tds.SVHN(str(tmp_path), split="test")
    np.testing.assert_array_equal(ours.data, theirs.data)
    np.testing.assert_array_equal(ours.labels, theirs.labels)
    assert ours.labels[0] == 0 and repr(ours) == repr(theirs)
    same_samples(ours, theirs, range(7))


def test_svhn_missing_and_offline(tmp_path):
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted") as err:
        fds.SVHN(str(tmp_path))
    assert str(tmp_path / "train_32x32.mat") in str(err.value)
    with pytest.raises(RuntimeError, match="http://ufldl.stanford.edu/housenumbers/extra_32x32.mat"):
        fds.SVHN(str(tmp_path), split="extra", download=True)
    with pytest.raises(ValueError, match="split"):
        fds.SVHN(str(tmp_path), split="validation")


# ---- ImageFolder / DatasetFolder -----------------------------------------------------------------

def image_tree(root):
    rng = np.random.default_rng(5)

    def put(rel, mode="RGB", fmt=None):
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        arr = rng.integers(0, 256, (6, 5, 3) if mode == "RGB" else (6, 5), dtype=np.uint8)
        Image.fromarray(arr).save(path, fmt)

    put("cat/b.png")
    put("cat/a.jpg")
    put("cat/deep/c.PNG", mode="L", fmt="PNG")
    put("dog/x.bmp")
    put("dog/y.jpeg", mode="L")
    put("emu/z.png")
    with open(os.path.join(root, "dog", "notes.txt"), "w") as f:
        f.write("not an image")
    os.makedirs(os.path.join(root, "empty_not_a_class_file_holder"), exist_ok=True)
    open(os.path.join(root, "empty_not_a_class_file_holder", "readme.md"), "w").close()


def test_image_folder_matches_torchvision(tmp_path):
    image_tree(str(tmp_path))
    with pytest.raises(FileNotFoundError, match="empty_not_a_class_file_holder"):
        tds.ImageFolder(str(tmp_path))
    with pytest.raises(FileNotFoundError, match="empty_not_a_class_file_holder"):
        fds.ImageFolder(str(tmp_path))
    shutil.rmtree(tmp_path / "empty_not_a_class_file_holder")
    ours, theirs = fds.ImageFolder(str(tmp_path)), tds.ImageFolder(str(tmp_path))
    assert ours.classes == theirs.classes == ["cat", "dog", "emu"] and ours.class_to_idx == theirs.class_to_idx
    assert ours.samples == theirs.samples == ours.imgs and ours.targets == theirs.targets
    same_samples(ours, theirs, range(len(theirs)))
    only_png = lambda p: p.endswith(".png")  # noqa: E731
    with pytest.raises(FileNotFoundError):
        tds.ImageFolder(str(tmp_path), is_valid_file=only_png)  # dog has no .png
    with pytest.raises(FileNotFoundError, match="dog"):
        fds.ImageFolder(str(tmp_path), is_valid_file=only_png)
    gray = Named(lambda img: img.convert("L"), "Gray()")
    ours = fds.ImageFolder(str(tmp_path), transform=gray, is_valid_file=lambda p: "a." in p or "x." in p or "z" in p)
    theirs = tds.ImageFolder(str(tmp_path), transform=gray, is_valid_file=lambda p: "a." in p or "x." in p or "z" in p)
    assert ours.samples == theirs.samples and repr(ours) == repr(theirs)
    same_samples(ours, theirs, range(len(theirs)))
    assert fds.folder.is_image_file("A.TIFF") and not fds.folder.is_image_file("a.gif")
    assert fds.folder.IMG_EXTENSIONS == tds.folder.IMG_EXTENSIONS


def test_dataset_folder_with_own_loader(tmp_path):
    for cls, n in (("a", 2), ("b", 3)):
        (tmp_path / cls).mkdir()
        for i in range(n):
            np.save(str(tmp_path / cls / ("%d.npy" % i)), np.full((2,), i + 10 * n))
    load = lambda p: ff.from_numpy(np.load(p))  # noqa: E731
    ours = fds.DatasetFolder(str(tmp_path), load, extensions=(".npy",))
    theirs = tds.DatasetFolder(str(tmp_path), np.load, extensions=(".npy",))
    assert ours.samples == theirs.samples and ours.classes == theirs.classes
    for i in range(len(theirs)):
        assert ours[i][1] == theirs[i][1]
        np.testing.assert_array_equal(ours[i][0].numpy(), theirs[i][0])
    for kw in ({}, {"extensions": (".npy",), "is_valid_file": bool}):
        with pytest.raises(ValueError, match="Both extensions and is_valid_file"):
            fds.folder.make_dataset(str(tmp_path), {"a": 0}, **kw)
    with pytest.raises(ValueError, match="Only transforms or transform/target_transform"):
        tds.VisionDataset(".", transforms=max, transform=str)
    with pytest.raises(ValueError, match="Only transforms or transform/target_transform"):
        fds.VisionDataset(".", transforms=max, transform=str)
    with pytest.raises(FileNotFoundError, match="class folder"):
        fds.ImageFolder(str(tmp_path / "a"))


# ---- FakeData ----------------------------------------------------------------------------------

@pytest.mark.parametrize("image_size,mode", [((3, 6, 5), "RGB"), ((1, 4, 7), "L"), ((4, 3, 3), "RGBA")])
def test_fake_data_contract(image_size, mode):
    ours = fds.FakeData(size=12, image_size=image_size, num_classes=3, random_offset=5)
    theirs = tds.FakeData(size=12, image_size=image_size, num_classes=3, random_offset=5)
    ff.manual_seed(7)
    before = ff.rand(4).numpy()
    ff.manual_seed(7)
    samples = [ours[i] for i in range(len(ours))]
    np.testing.assert_array_equal(ff.rand(4).numpy(), before)  # the global generator is left alone
    assert len(ours) == len(theirs) == 12 and repr(ours) == repr(theirs)
    for (img, target), (t_img, t_target) in zip(samples, (theirs[i] for i in range(12))):
        assert img.mode == t_img.mode == mode and img.size == t_img.size == image_size[:0:-1]
        assert type(target) is type(t_target) is int and 0 <= target < 3
    again = fds.FakeData(size=12, image_size=image_size, num_classes=3, random_offset=5)
    for i in (0, 7, 11):
        np.testing.assert_array_equal(np.asarray(again[i][0]), np.asarray(samples[i][0]))
        assert again[i][1] == samples[i][1]
    assert not np.array_equal(np.asarray(samples[0][0]), np.asarray(samples[1][0]))
    assert len({t for _, t in samples}) > 1
    shifted = fds.FakeData(size=12, image_size=image_size, num_classes=3, random_offset=6)
    np.testing.assert_array_equal(np.asarray(shifted[0][0]), np.asarray(samples[1][0]))
    with pytest.raises(IndexError):
        ours[12]
    plus = fds.FakeData(size=2, image_size=image_size, target_transform=lambda t: t + 1)
    assert plus[0][1] == fds.FakeData(size=2, image_size=image_size)[0][1] + 1
