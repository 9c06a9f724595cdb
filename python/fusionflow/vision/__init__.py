"""fusionflow.vision: torchvision's layout and behaviour on fusionflow tensors, so that a vision
program runs with `import torchvision` changed to `import fusionflow.vision as torchvision`.

    datasets    MNIST, FashionMNIST, KMNIST, EMNIST, CIFAR10/100, SVHN, ImageFolder, FakeData
    transforms  the v1 API (and transforms.functional), on PIL images and tensors
    models      resnet, vgg, mobilenet_v2, alexnet, squeezenet, vit_b_16 (torchvision's names)
    ops         nms, box_iou, roi_align
    io          read_image, decode_png, decode_jpeg
    utils       make_grid, save_image

PIL (Debian's python3-pil) does everything that is about images; nothing here decodes or
resamples a picture by hand. Submodules load on first use, as `import torchvision` gives them
all without paying for the ones a program never touches."""
import importlib

__version__ = "0.14.1"  # the torchvision whose behaviour this follows (Debian bookworm's)

_SUBMODULES = ("datasets", "io", "models", "ops", "transforms", "utils")


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module("." + name, __name__)
    raise AttributeError("module 'fusionflow.vision' has no attribute %r" % name)


def __dir__():
    return sorted(list(globals()) + list(_SUBMODULES))


_image_backend = "PIL"


def get_image_backend():
    return _image_backend


def set_image_backend(backend):
    global _image_backend
    if backend not in ("PIL", "accimage"):
        raise ValueError("Invalid backend '%s'. Options are 'PIL' and 'accimage'" % backend)
    if backend == "accimage":
        raise ValueError("fusionflow.vision: the accimage backend is not available; use 'PIL'")
    _image_backend = backend
