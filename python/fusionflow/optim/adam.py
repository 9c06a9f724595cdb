"""Adam and AdamW as torch.optim's (graph-safe: optimizer.py)."""
import math

from .._tensor import zeros_like
from .optimizer import Optimizer, real_pairs

__all__ = ["Adam", "AdamW", "check_adam"]


def check_adam(name, lr, betas, eps, weight_decay):
    """PyTorch's argument checks of the Adam family, with its messages."""
    if not 0.0 <= lr:
        raise ValueError("%s: invalid learning rate: %s" % (name, lr))
    if not 0.0 <= eps:
        raise ValueError("%s: invalid epsilon value: %s" % (name, eps))
    for i in (0, 1):
        if not 0.0 <= betas[i] < 1.0:
            raise ValueError("%s: invalid beta parameter at index %d: %s" % (name, i, betas[i]))
    if not 0.0 <= weight_decay:
        raise ValueError("%s: invalid weight_decay value: %s" % (name, weight_decay))


class Adam(Optimizer):
    """torch.optim.Adam (L2 weight decay added to the gradient)."""

    decoupled = False
    graph_safe = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=False):
        check_adam(type(self).__name__, lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize, foreach=foreach, capturable=capturable,
                                      differentiable=differentiable, fused=fused))

    def _prepare(self, group, p, st):
        """State, the step count t, and coefficients 0: 1 / sqrt(1 - b2^t),
        1: -lr / (1 - b1^t), 2 (AdamW): 1 - lr wd."""
        lr, (b1, b2), wd = group["lr"], group["betas"], group["weight_decay"]
        if not st:
            st["step"] = 0
            st["exp_avg"] = zeros_like(p)
            st["exp_avg_sq"] = zeros_like(p)
            if group["amsgrad"]:
                st["max_exp_avg_sq"] = zeros_like(p)
        st["step"] += 1
        t = st["step"]
        self._coef(p, 0, 1.0 / math.sqrt(1.0 - b2 ** t))
        self._coef(p, 1, -lr / (1.0 - b1 ** t))
        if wd and self.decoupled:
            self._coef(p, 2, 1.0 - lr * wd)

    def _update(self, group):
        (b1, b2), eps, wd = group["betas"], group["eps"], group["weight_decay"]
        for p, g, st, coef in self._host_steps(group):
            p, g = real_pairs(p, g)
            if group["maximize"]:
                g = g.neg()
            if wd and self.decoupled:
                p.mul_(coef[2])
            elif wd:
                g = g.clone().add_(p, alpha=wd)
            m, v = real_pairs(st["exp_avg"], st["exp_avg_sq"])
            m.mul_(b1).add_(g, alpha=1.0 - b1)
            v.mul_(b2).add_(g * g, alpha=1.0 - b2)
            if group["amsgrad"]:
                mx = real_pairs(st["max_exp_avg_sq"])
                mx.copy_(mx.maximum(v))
                v = mx
            denom = v.sqrt().mul_(coef[0]).add_(eps)
            p.add_((m / denom).mul_(coef[1]))  # the bits of p.add_(m / denom, alpha=coef 1)


class AdamW(Adam):
    """Adam with decoupled weight decay (p *= 1 - lr * wd), as torch.optim.AdamW."""

    decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False):
        check_adam(type(self).__name__, lr, betas, eps, weight_decay)
        Optimizer.__init__(self, params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                              amsgrad=amsgrad, foreach=foreach, maximize=maximize,
                                              capturable=capturable))
