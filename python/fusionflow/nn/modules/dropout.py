"""Dropout modules: torch 1.13's p / inplace and repr; identity in eval mode."""
from .. import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class _DropoutNd(Module):
    _fn = None

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError("dropout probability has to be between 0 and 1, but got {}".format(p))
        self.p, self.inplace = p, inplace

    def forward(self, x):
        return type(self)._fn(x, self.p, self.training, self.inplace)

    def extra_repr(self):
        return "p={}, inplace={}".format(self.p, self.inplace)


class Dropout(_DropoutNd):
    _fn = staticmethod(F.dropout)


class Dropout1d(_DropoutNd):
    _fn = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    _fn = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    _fn = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    _fn = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    _fn = staticmethod(F.feature_alpha_dropout)
