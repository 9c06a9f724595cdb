"""Embedding."""
from .. import functional as F
from ..parameter import Parameter
from .module import Module


class Embedding(Module):
    def __init__(self, num_embeddings, embedding_dim, seed=None):
        super().__init__()
        from ..._tensor import normal
        self.weight = Parameter(normal((num_embeddings, embedding_dim), seed=seed))

    def forward(self, idx):
        return F.embedding(idx, self.weight)
