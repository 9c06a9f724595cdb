"""Rprop as torch.optim.Rprop: per-element step sizes grown by etaplus while the gradient
keeps its sign, shrunk by etaminus (and that step skipped) when it flips."""
from .._tensor import full_like, zeros_like
from ._common import grad_of
from .optimizer import Optimizer

__all__ = ["Rprop"]


class Rprop(Optimizer):
    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), foreach=None, maximize=False):
        if not 0.0 <= lr:
            raise ValueError("Rprop: invalid learning rate: %s" % lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError("Rprop: invalid eta values: %s, %s" % tuple(etas))
        super().__init__(params, dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes), foreach=foreach,
                                      maximize=maximize))

    def _update(self, group):
        (etaminus, etaplus), (lo, hi) = group["etas"], group["step_sizes"]
        for p, g, st in self._params_with_grad(group):
            if not st:
                st.update(step=0, prev=zeros_like(p), step_size=full_like(p, group["lr"]))
            st["step"] += 1
            g = grad_of(p, g, group)
            s = (g * st["prev"]).sign()
            up, down = (s > 0).to(p.dtype), (s < 0).to(p.dtype)
            # each element gets exactly one of etaplus, etaminus, 1
            factor = up * etaplus + down * etaminus + (1 - up - down)
            st["step_size"].mul_(factor).clamp_(lo, hi)
            g = g * (1 - down)  # a sign flip skips this step and forgets the gradient
            p.add_(g.sign() * st["step_size"], alpha=-1)
            st["prev"].copy_(g)
