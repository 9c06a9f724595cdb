"""DatasetFolder / ImageFolder: one sub-folder per class under root, samples found by walking
each (following links), classes and files in sorted order, as torchvision finds them."""
import os

from PIL import Image

from .vision import VisionDataset

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def has_file_allowed_extension(filename, extensions):
    """filename ends (case-insensitively) with one of extensions (lowercase, a str or a tuple)."""
    return filename.lower().endswith(extensions if isinstance(extensions, str) else tuple(extensions))


def is_image_file(filename):
    return has_file_allowed_extension(filename, IMG_EXTENSIONS)


def find_classes(directory):
    """(sorted class folder names, {name: index}) of directory's sub-folders."""
    classes = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
    if not classes:
        raise FileNotFoundError("Couldn't find any class folder in %s." % directory)
    return classes, {name: i for i, name in enumerate(classes)}


def make_dataset(directory, class_to_idx=None, extensions=None, is_valid_file=None):
    """[(path, class index)] of every valid file under each class folder; exactly one of
    extensions and is_valid_file says which files are valid. Every class must have one."""
    directory = os.path.expanduser(directory)
    if class_to_idx is None:
        _, class_to_idx = find_classes(directory)
    elif not class_to_idx:
        raise ValueError("'class_to_index' must have at least one entry to collect any samples.")
    if (extensions is None) == (is_valid_file is None):
        raise ValueError("Both extensions and is_valid_file cannot be None or not None at the same time")
    if extensions is not None:
        def is_valid_file(path):
            return has_file_allowed_extension(path, extensions)

    instances, found = [], set()
    for name in sorted(class_to_idx):
        target_dir = os.path.join(directory, name)
        if not os.path.isdir(target_dir):
            continue
        for root, _, fnames in sorted(os.walk(target_dir, followlinks=True)):
            for fname in sorted(fnames):
                path = os.path.join(root, fname)
                if is_valid_file(path):
                    instances.append((path, class_to_idx[name]))
                    found.add(name)
    empty = set(class_to_idx) - found
    if empty:
        msg = "Found no valid file for the classes %s. " % ", ".join(sorted(empty))
        if extensions is not None:
            listed = extensions if isinstance(extensions, str) else ", ".join(extensions)
            msg += "Supported extensions are: %s" % listed
        raise FileNotFoundError(msg)
    return instances


class DatasetFolder(VisionDataset):
    """Samples root/<class>/**/<file>, loaded by `loader(path)`; .classes, .class_to_idx,
    .samples [(path, index)] and .targets. Override find_classes / make_dataset to change the
    layout (make_dataset is given this class's class_to_idx, never recomputes it)."""

    def __init__(self, root, loader, extensions=None, transform=None, target_transform=None, is_valid_file=None):
        super().__init__(root, transform=transform, target_transform=target_transform)
        classes, class_to_idx = self.find_classes(self.root)
        samples = self.make_dataset(self.root, class_to_idx, extensions, is_valid_file)
        self.loader = loader
        self.extensions = extensions
        self.classes = classes
        self.class_to_idx = class_to_idx
        self.samples = samples
        self.targets = [s[1] for s in samples]

    @staticmethod
    def make_dataset(directory, class_to_idx, extensions=None, is_valid_file=None):
        if class_to_idx is None:
            raise ValueError("The class_to_idx parameter cannot be None.")
        return make_dataset(directory, class_to_idx, extensions=extensions, is_valid_file=is_valid_file)

    def find_classes(self, directory):
        return find_classes(directory)

    def __getitem__(self, index):
        path, target = self.samples[index]
        sample = self.loader(path)
        return self._transformed(sample, target)

    def __len__(self):
        return len(self.samples)


def pil_loader(path):
    """The image at path, in RGB (opened from a file object, so that it is closed at once)."""
    with open(path, "rb") as f:
        return Image.open(f).convert("RGB")


def accimage_loader(path):
    import accimage  # not in this distribution; kept for the name
    try:
        return accimage.Image(path)
    except OSError:
        return pil_loader(path)


def default_loader(path):
    from .. import get_image_backend
    return accimage_loader(path) if get_image_backend() == "accimage" else pil_loader(path)


class ImageFolder(DatasetFolder):
    """DatasetFolder of images (IMG_EXTENSIONS unless is_valid_file is given), PIL RGB by default;
    .imgs is .samples."""

    def __init__(self, root, transform=None, target_transform=None, loader=default_loader, is_valid_file=None):
        super().__init__(root, loader, IMG_EXTENSIONS if is_valid_file is None else None, transform=transform,
                         target_transform=target_transform, is_valid_file=is_valid_file)
        self.imgs = self.samples
