"""fusionflow.optim: SGD, Adam, AdamW with PyTorch's update rules.

Updates run under no_grad with the C in-place ops (ff_axpy_, ff_mul_scalar_, ...), so
parameters keep their identity and memory; optimizer state lives in C tensors too."""
import math

from ._tensor import Tensor, no_grad, zeros_like

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]


class Optimizer:
    def __init__(self, params, defaults):
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        if isinstance(params[0], dict):
            groups = [dict(defaults, **g) for g in params]
            for g in groups:
                g["params"] = list(g["params"])
        else:
            groups = [dict(defaults, params=params)]
        self.param_groups = groups
        self.defaults = defaults
        self.state = {}  # id(param) -> dict

    def zero_grad(self, set_to_none=True):
        for g in self.param_groups:
            for p in g["params"]:
                if set_to_none:
                    p.grad = None
                else:
                    gr = p.grad
                    if gr is not None:
                        with no_grad():
                            gr.zero_()

    def _params_with_grad(self, group):
        for p in group["params"]:
            g = p.grad
            if g is not None:
                yield p, g, self.state.setdefault(id(p), {})

    def step(self, closure=None):
        loss = None
        if closure is not None:
            from ._tensor import enable_grad
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                self._update(group)
        return loss

    def _update(self, group):
        raise NotImplementedError


class SGD(Optimizer):
    """p -= lr * g, with optional weight decay, momentum (dampening) and Nesterov, as
    torch.optim.SGD."""

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError("lr, momentum and weight_decay must be >= 0")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov))

    def _update(self, group):
        lr, mom, damp, wd = group["lr"], group["momentum"], group["dampening"], group["weight_decay"]
        for p, g, st in self._params_with_grad(group):
            if wd:
                g = g.clone().add_(p, alpha=wd)
            if mom:
                buf = st.get("momentum_buffer")
                if buf is None:
                    buf = st["momentum_buffer"] = g.clone()
                else:
                    buf.mul_(mom).add_(g, alpha=1.0 - damp)
                if group["nesterov"]:
                    g = g.clone().add_(buf, alpha=mom) if not wd else g.add_(buf, alpha=mom)
                else:
                    g = buf
            p.add_(g, alpha=-lr)


class Adam(Optimizer):
    """torch.optim.Adam (L2 weight decay added to the gradient)."""

    decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        if lr < 0 or eps < 0 or not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise ValueError("invalid Adam hyper-parameters")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay))

    def _update(self, group):
        lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        for p, g, st in self._params_with_grad(group):
            if wd and self.decoupled:
                p.mul_(1.0 - lr * wd)
            elif wd:
                g = g.clone().add_(p, alpha=wd)
            if not st:
                st["step"] = 0
                st["exp_avg"] = zeros_like(p)
                st["exp_avg_sq"] = zeros_like(p)
            st["step"] += 1
            t = st["step"]
            m, v = st["exp_avg"], st["exp_avg_sq"]
            m.mul_(b1).add_(g, alpha=1.0 - b1)
            v.mul_(b2).add_(g * g, alpha=1.0 - b2)
            bc1 = 1.0 - b1 ** t
            bc2 = 1.0 - b2 ** t
            denom = v.sqrt().mul_(1.0 / math.sqrt(bc2)).add_(eps)
            p.add_(m / denom, alpha=-lr / bc1)


class AdamW(Adam):
    """Adam with decoupled weight decay (p *= 1 - lr * wd), as torch.optim.AdamW."""

    decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
