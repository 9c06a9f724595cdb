"""RMSprop, Adagrad and Adadelta: per-element step sizes from running squares of the
gradient, as torch.optim's (PyTorch 1.13's single-tensor formulas)."""
from .._tensor import full_like, zeros_like
from ._common import grad_of, nonneg
from .optimizer import Optimizer, real_pairs

__all__ = ["RMSprop", "Adagrad", "Adadelta"]


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 foreach=None, maximize=False, differentiable=False):
        nonneg("RMSprop", lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                                      weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                                      differentiable=differentiable))

    def _update(self, group):
        lr, alpha, eps, mom = group["lr"], group["alpha"], group["eps"], group["momentum"]
        for p, g, st in self._params_with_grad(group):
            if not st:
                st["step"] = 0
                st["square_avg"] = zeros_like(p)
                if mom > 0:
                    st["momentum_buffer"] = zeros_like(p)
                if group["centered"]:
                    st["grad_avg"] = zeros_like(p)
            st["step"] += 1
            g = grad_of(p, g, group)
            p, g, sq = real_pairs(p, g, st["square_avg"])
            sq.mul_(alpha).add_(g * g, alpha=1 - alpha)
            if group["centered"]:
                ga = real_pairs(st["grad_avg"])
                ga.mul_(alpha).add_(g, alpha=1 - alpha)
                avg = (sq - ga * ga).sqrt()
            else:
                avg = sq.sqrt()
            avg.add_(eps)
            if mom > 0:
                buf = real_pairs(st["momentum_buffer"])
                buf.mul_(mom).add_(g / avg)
                p.add_(buf, alpha=-lr)
            else:
                p.add_(g / avg, alpha=-lr)


class Adagrad(Optimizer):
    """State is made for every parameter at construction, as PyTorch's."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False):
        nonneg("Adagrad", lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
               initial_accumulator_value=initial_accumulator_value, eps=eps)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                                      maximize=maximize))
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p] = {"step": 0, "sum": full_like(p, group["initial_accumulator_value"])}

    def _update(self, group):
        for p, g, st in self._params_with_grad(group):
            st["step"] += 1
            g = grad_of(p, g, group)
            clr = group["lr"] / (1 + (st["step"] - 1) * group["lr_decay"])
            p, g, acc = real_pairs(p, g, st["sum"])
            acc.add_(g * g)
            std = acc.sqrt().add_(group["eps"])
            p.add_(g / std, alpha=-clr)


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, maximize=False):
        nonneg("Adadelta", lr=lr, eps=eps, weight_decay=weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError("Adadelta: invalid rho value: %s" % rho)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                                      foreach=foreach))

    def _update(self, group):
        rho, eps = group["rho"], group["eps"]
        for p, g, st in self._params_with_grad(group):
            if not st:
                st["step"] = 0
                st["square_avg"] = zeros_like(p)
                st["acc_delta"] = zeros_like(p)
            st["step"] += 1
            g = grad_of(p, g, group)
            p, g, sq, acc = real_pairs(p, g, st["square_avg"], st["acc_delta"])
            sq.mul_(rho).add_(g * g, alpha=1 - rho)
            std = (sq + eps).sqrt()
            delta = (acc + eps).sqrt() / std * g
            acc.mul_(rho).add_(delta * delta, alpha=1 - rho)
            p.add_(delta, alpha=-group["lr"])
