"""Embedding and EmbeddingBag: torch 1.13's options, N(0, 1) init with the padding row
zeroed, repr and from_pretrained."""
from ..._tensor import no_grad, normal
from ... import _dtype
from .. import functional as F
from ..parameter import Parameter
from .module import Module

__all__ = ["Embedding", "EmbeddingBag"]


def _check_padding_idx(padding_idx, num):
    if padding_idx is None:
        return None
    if padding_idx >= num or padding_idx < -num:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx + num if padding_idx < 0 else padding_idx


class _EmbeddingBase(Module):
    def _init_weight(self, num_embeddings, embedding_dim, _weight, device, dtype, seed):
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if _weight is None:
            self.weight = Parameter(normal((num_embeddings, embedding_dim), dtype=dtype or _dtype.float32,
                                           device=device, seed=seed))
            self._fill_padding_idx_with_zero()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight)

    def reset_parameters(self):
        from .. import init
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self):
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0.0)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, **kwargs):
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        m = cls(rows, cols, _weight=embeddings, **kwargs)
        m.weight.requires_grad_(not freeze)
        return m


class Embedding(_EmbeddingBase):
    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, _weight=None, device=None, dtype=None, seed=None):
        super().__init__()
        self.padding_idx = _check_padding_idx(padding_idx, num_embeddings)
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        self._init_weight(num_embeddings, embedding_dim, _weight, device, dtype, seed)

    def forward(self, idx):
        return F.embedding(idx, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self):
        s = "{}, {}".format(self.num_embeddings, self.embedding_dim)
        if self.padding_idx is not None:
            s += ", padding_idx={}".format(self.padding_idx)
        if self.max_norm is not None:
            s += ", max_norm={}".format(self.max_norm)
        if self.norm_type != 2:
            s += ", norm_type={}".format(self.norm_type)
        if self.scale_grad_by_freq is not False:
            s += ", scale_grad_by_freq={}".format(self.scale_grad_by_freq)
        if self.sparse is not False:
            s += ", sparse=True"
        return s


class EmbeddingBag(_EmbeddingBase):
    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                 mode="mean", sparse=False, _weight=None, include_last_offset=False, padding_idx=None, device=None,
                 dtype=None, seed=None):
        super().__init__()
        self.padding_idx = _check_padding_idx(padding_idx, num_embeddings)
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.mode, self.sparse = scale_grad_by_freq, mode, sparse
        self.include_last_offset = include_last_offset
        self._init_weight(num_embeddings, embedding_dim, _weight, device, dtype, seed)

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                               self.mode, self.sparse, per_sample_weights, self.include_last_offset,
                               self.padding_idx)

    def extra_repr(self):
        s = "{}, {}".format(self.num_embeddings, self.embedding_dim)
        if self.max_norm is not None:
            s += ", max_norm={}".format(self.max_norm)
        if self.norm_type != 2:
            s += ", norm_type={}".format(self.norm_type)
        if self.scale_grad_by_freq is not False:
            s += ", scale_grad_by_freq={}".format(self.scale_grad_by_freq)
        s += ", mode={}".format(self.mode)
        if self.padding_idx is not None:
            s += ", padding_idx={}".format(self.padding_idx)
        return s
