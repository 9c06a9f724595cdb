"""Adamax, NAdam and RAdam as torch.optim's (PyTorch 1.13's single-tensor formulas)."""
import math

from .._tensor import zeros_like
from ._common import f32, grad_of
from .adam import check_adam
from .optimizer import Optimizer

__all__ = ["Adamax", "NAdam", "RAdam"]


def _moments(p, st, extra=()):
    if not st:
        st["step"] = 0
        st["exp_avg"] = zeros_like(p)
        for k in extra:
            st[k] = zeros_like(p)


class Adamax(Optimizer):
    """Adam with the infinity norm: exp_inf = max(b2 exp_inf, |g| + eps)."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False):
        check_adam("Adamax", lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize))

    def _update(self, group):
        (b1, b2), eps = group["betas"], group["eps"]
        for p, g, st in self._params_with_grad(group):
            _moments(p, st, ("exp_inf",))
            st["step"] += 1
            g = grad_of(p, g, group)
            st["exp_avg"].mul_(b1).add_(g, alpha=1 - b1)
            inf = st["exp_inf"]
            inf.copy_((inf * b2).maximum(g.abs().add_(eps)))
            p.add_(st["exp_avg"] / inf, alpha=-group["lr"] / (1 - b1 ** st["step"]))


class NAdam(Optimizer):
    """Adam with Nesterov momentum and the momentum_decay schedule of mu_t; mu_product is
    kept in float32 as PyTorch's 0-d tensor is."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 foreach=None):
        check_adam("NAdam", lr, betas, eps, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError("NAdam: invalid momentum_decay value: %s" % momentum_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay, foreach=foreach))

    def _update(self, group):
        lr, (b1, b2), eps, md = group["lr"], group["betas"], group["eps"], group["momentum_decay"]
        for p, g, st in self._params_with_grad(group):
            if not st:
                _moments(p, st, ("exp_avg_sq",))
                st["mu_product"] = 1.0
            st["step"] += 1
            t = st["step"]
            g = grad_of(p, g, group)
            bc2 = 1 - b2 ** t
            mu = b1 * (1.0 - 0.5 * 0.96 ** (t * md))
            mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * md))
            st["mu_product"] = f32(f32(st["mu_product"]) * f32(mu))
            mu_product_next = f32(f32(st["mu_product"] * f32(mu)) * f32(mu_next))
            st["exp_avg"].mul_(b1).add_(g, alpha=1 - b1)
            st["exp_avg_sq"].mul_(b2).add_(g * g, alpha=1 - b2)
            denom = (st["exp_avg_sq"] / bc2).sqrt().add_(eps)
            p.add_(g / denom, alpha=-lr * (1.0 - mu) / (1.0 - st["mu_product"]))
            p.add_(st["exp_avg"] / denom, alpha=-lr * mu_next / (1.0 - mu_product_next))


class RAdam(Optimizer):
    """Adam with the variance rectification term; plain momentum SGD while rho_t <= 5."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None):
        check_adam("RAdam", lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      foreach=foreach))

    def _update(self, group):
        lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
        for p, g, st in self._params_with_grad(group):
            _moments(p, st, ("exp_avg_sq",))
            st["step"] += 1
            t = st["step"]
            g = grad_of(p, g, group)
            bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
            st["exp_avg"].mul_(b1).add_(g, alpha=1 - b1)
            st["exp_avg_sq"].mul_(b2).add_(g * g, alpha=1 - b2)
            corrected = st["exp_avg"] / bc1
            rho_inf = 2 / (1 - b2) - 1
            rho_t = rho_inf - 2 * t * (b2 ** t) / bc2
            if rho_t > 5.0:
                rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                adaptive = math.sqrt(bc2) / st["exp_avg_sq"].sqrt().add_(eps)
                p.add_(corrected * lr * adaptive * rect, alpha=-1.0)
            else:
                p.add_(corrected * lr, alpha=-1.0)
