"""Adam and AdamW as torch.optim's (graph-safe: optimizer.py)."""
import math

from .._tensor import zeros_like
from .optimizer import Optimizer

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """torch.optim.Adam (L2 weight decay added to the gradient)."""

    decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        if lr < 0 or eps < 0 or not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise ValueError("invalid Adam hyper-parameters")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay))

    def _prepare(self, group, p, st):
        """State, the step count t, and coefficients 0: 1 / sqrt(1 - b2^t),
        1: -lr / (1 - b1^t), 2 (AdamW): 1 - lr wd."""
        lr, (b1, b2), wd = group["lr"], group["betas"], group["weight_decay"]
        if not st:
            st["step"] = 0
            st["exp_avg"] = zeros_like(p)
            st["exp_avg_sq"] = zeros_like(p)
        st["step"] += 1
        t = st["step"]
        self._coef(p, 0, 1.0 / math.sqrt(1.0 - b2 ** t))
        self._coef(p, 1, -lr / (1.0 - b1 ** t))
        if wd and self.decoupled:
            self._coef(p, 2, 1.0 - lr * wd)

    def _update(self, group):
        (b1, b2), eps, wd = group["betas"], group["eps"], group["weight_decay"]
        for p, g, st in self._params_with_grad(group):
            coef = self._host_step(group, p)
            if wd and self.decoupled:
                p.mul_(coef[2])
            elif wd:
                g = g.clone().add_(p, alpha=wd)
            m, v = st["exp_avg"], st["exp_avg_sq"]
            m.mul_(b1).add_(g, alpha=1.0 - b1)
            v.mul_(b2).add_(g * g, alpha=1.0 - b2)
            denom = v.sqrt().mul_(coef[0]).add_(eps)
            p.add_((m / denom).mul_(coef[1]))  # the bits of p.add_(m / denom, alpha=coef 1)


class AdamW(Adam):
    """Adam with decoupled weight decay (p *= 1 - lr * wd), as torch.optim.AdamW."""

    decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
