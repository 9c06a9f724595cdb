"""ASGD (averaged SGD) as torch.optim.ASGD; eta and mu are kept in float32 as PyTorch's
0-d state tensors are, so the steps match for float64 parameters too."""
import math

from .._tensor import zeros_like
from ._common import f32, grad_of, nonneg
from .optimizer import Optimizer

__all__ = ["ASGD"]


class ASGD(Optimizer):
    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False):
        nonneg("ASGD", lr=lr, weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize))

    def _update(self, group):
        lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
        for p, g, st in self._params_with_grad(group):
            if not st:
                st.update(step=0, eta=f32(lr), mu=1.0, ax=zeros_like(p))
            st["step"] += 1
            g = grad_of(p, g, group)
            p.mul_(1 - lambd * st["eta"])
            p.add_(g, alpha=-st["eta"])
            if st["mu"] != 1:
                st["ax"].add_((p - st["ax"]) * st["mu"])
            else:
                st["ax"].copy_(p)
            st["eta"] = f32(lr / math.pow(1 + lambd * lr * st["step"], alpha))
            st["mu"] = f32(1 / max(1, st["step"] - t0))
