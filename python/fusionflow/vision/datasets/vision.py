"""VisionDataset: the base every dataset here derives from, as torchvision's, so that code which
subclasses it (or reads .root, .transform, .transforms, repr) behaves the same."""
import os

from fusionflow.utils.data import Dataset


class VisionDataset(Dataset):
    """root, and either one joint `transforms(img, target)` or the pair transform /
    target_transform (wrapped into a StandardTransform as .transforms), never both."""

    _repr_indent = 4

    def __init__(self, root, transforms=None, transform=None, target_transform=None):
        if isinstance(root, (str, bytes)):
            root = os.path.expanduser(root)
        self.root = root
        separate = transform is not None or target_transform is not None
        if transforms is not None and separate:
            raise ValueError("Only transforms or transform/target_transform can be passed as argument")
        self.transform = transform
        self.target_transform = target_transform
        self.transforms = StandardTransform(transform, target_transform) if separate else transforms

    def __getitem__(self, index):
        raise NotImplementedError

    def _transformed(self, img, target):
        """(img, target) through transform and target_transform: how every dataset's
        __getitem__ ends."""
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self):
        raise NotImplementedError

    def __repr__(self):
        body = ["Number of datapoints: %d" % len(self)]
        if self.root is not None:
            body.append("Root location: %s" % self.root)
        body += self.extra_repr().splitlines()
        if getattr(self, "transforms", None) is not None:
            body.append(repr(self.transforms))  # one entry: only its first line is indented, as torchvision's
        pad = " " * self._repr_indent
        return "\n".join(["Dataset " + type(self).__name__] + [pad + line for line in body])

    def _format_transform_repr(self, transform, head):
        return _indented(transform, head)

    def extra_repr(self):
        return ""


def _indented(transform, head):
    """repr(transform) with `head` before its first line and the rest aligned under it."""
    lines = repr(transform).splitlines()
    return [head + lines[0]] + [" " * len(head) + line for line in lines[1:]]


class StandardTransform:
    """transform on the sample and target_transform on the target, as one joint callable."""

    def __init__(self, transform=None, target_transform=None):
        self.transform = transform
        self.target_transform = target_transform

    def __call__(self, input, target):
        if self.transform is not None:
            input = self.transform(input)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return input, target

    def _format_transform_repr(self, transform, head):
        return _indented(transform, head)

    def __repr__(self):
        body = [type(self).__name__]
        if self.transform is not None:
            body += _indented(self.transform, "Transform: ")
        if self.target_transform is not None:
            body += _indented(self.target_transform, "Target transform: ")
        return "\n".join(body)
