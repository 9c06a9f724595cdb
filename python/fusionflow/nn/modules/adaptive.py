"""AdaptiveLogSoftmaxWithLoss (Grave et al.'s adaptive softmax), torch 1.13's layout: a head
Linear over the shortlist plus one entry per cluster, and per cluster a two-Linear tail."""
import collections

import numpy as np

from ..._tensor import as_tensor, cat, zeros
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = collections.namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if (cutoffs != sorted(cutoffs) or not cutoffs or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        kw = {} if dtype is None else {"dtype": dtype}
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, device=device, **kw),
                                        Linear(hsz, osz, bias=False, device=device, **kw)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        tdim = target_.ndim if hasattr(target_, "ndim") else np.ndim(target_)
        if tdim == 1:
            if input_.shape[0] != np.shape(target_)[0]:
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.ndim != 2:
                raise RuntimeError("1D target tensor expects 2D input tensors, but found inputs with size %s"
                                   % (tuple(input_.shape),))
        elif tdim == 0:
            if input_.ndim != 1:
                raise RuntimeError("0D target tensor expects 1D input tensors, but found inputs with size %s"
                                   % (tuple(input_.shape),))
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        x = input_ if tdim else input_.unsqueeze(0)
        t = as_tensor(target_)
        tv = np.asarray(t.cpu().numpy(), dtype=np.int64).reshape(-1)  # class ids pick the clusters (host)
        b = len(tv)
        if b and (tv.min() < 0 or tv.max() >= self.n_classes):
            raise RuntimeError("Target values should be in [0, %d], but values in range [%d, %d] were found. "
                               % (self.n_classes - 1, tv.min(), tv.max()))
        dev = x.device
        output = zeros(b, dtype=x.dtype, device=dev)
        gather = tv.copy()
        bounds = [0] + self.cutoffs
        for i in range(1, len(bounds) - 1):
            rows = np.nonzero((tv >= bounds[i]) & (tv < bounds[i + 1]))[0]
            if rows.size == 0:
                continue
            ridx = as_tensor(rows).to(dev)
            rel = as_tensor(tv[rows] - bounds[i]).to(dev)
            logp = self.tail[i - 1](x.index_select(0, ridx)).log_softmax(1)
            output = output.index_add(0, ridx, logp.gather(1, rel.unsqueeze(1)).squeeze(1))
            gather[rows] = self.shortlist_size + i - 1
        head = self.head(x).log_softmax(1)
        output = output + head.gather(1, as_tensor(gather).to(dev).unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if tdim else output.squeeze(0), loss)

    def _full_log_prob(self, x, head):
        parts = [head[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            logp = self.tail[i](x).log_softmax(1)
            parts.append(logp + head[:, self.shortlist_size + i:self.shortlist_size + i + 1])
        return cat(parts, 1)

    def log_prob(self, input):
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        out = self._full_log_prob(x, self.head(x).log_softmax(1))
        return out if batched else out.squeeze(0)

    def predict(self, input):
        return self.log_prob(input).argmax(-1)
