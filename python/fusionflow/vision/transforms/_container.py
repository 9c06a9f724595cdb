"""Transforms that compose other transforms: Compose, Lambda, RandomApply, RandomOrder and
RandomChoice. The random ones draw from fusionflow's generator, so manual_seed repeats them
(torchvision's RandomOrder / RandomChoice use Python's `random`; fusionflow keeps one source)."""
import bisect
import itertools
from collections.abc import Sequence

import fusionflow as ff
from fusionflow import nn


def _listing(name, transforms, head=()):
    lines = ["%s(" % name] + ["    %s" % h for h in head] + ["    %s" % t for t in transforms]
    return "\n".join(lines) + "\n)"


class Compose:
    """Applies the transforms in turn."""

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        return _listing(type(self).__name__, self.transforms)


class Lambda:
    """A user function as a transform."""

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError("Argument lambd should be callable, got %r" % type(lambd).__name__)
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)

    def __repr__(self):
        return "%s()" % type(self).__name__


class RandomTransforms:
    """Base of the transforms that pick among / reorder a sequence of transforms."""

    def __init__(self, transforms):
        if not isinstance(transforms, Sequence):
            raise TypeError("Argument transforms should be a sequence")
        self.transforms = transforms

    def __call__(self, *args, **kwargs):
        raise NotImplementedError()

    def __repr__(self):
        return _listing(type(self).__name__, self.transforms)


class RandomApply(nn.Module):
    """All of the transforms with probability p, else none."""

    def __init__(self, transforms, p=0.5):
        super().__init__()
        self.transforms = transforms
        self.p = p

    def forward(self, img):
        if self.p < ff.rand(1).item():
            return img
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        return _listing(type(self).__name__, self.transforms, head=["p=%s" % self.p])


class RandomOrder(RandomTransforms):
    """All the transforms, in a random order (a randperm)."""

    def __call__(self, img):
        for i in ff.randperm(len(self.transforms)).tolist():
            img = self.transforms[i](img)
        return img


class RandomChoice(RandomTransforms):
    """One of the transforms, picked with the relative weights p (uniformly if None)."""

    def __init__(self, transforms, p=None):
        super().__init__(transforms)
        if p is not None and not isinstance(p, Sequence):
            raise TypeError("Argument p should be a sequence")
        self.p = p

    def __call__(self, *args):
        u = ff.rand(1, dtype=ff.float64).item()
        n = len(self.transforms)
        if self.p is None:
            k = int(u * n)
        else:
            cum = list(itertools.accumulate(self.p))
            k = bisect.bisect_right(cum, u * cum[-1])
        return self.transforms[min(k, n - 1)](*args)

    def __repr__(self):
        return "%s(p=%s)" % (super().__repr__(), self.p)
