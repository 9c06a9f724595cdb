"""SGD as torch.optim.SGD (graph-safe: optimizer.py)."""
from .._lib import C, FusionFlowError
from .optimizer import Optimizer

__all__ = ["SGD"]


class SGD(Optimizer):
    """p -= lr * g, with optional weight decay, momentum (dampening) and Nesterov, as
    torch.optim.SGD."""

    graph_safe = True

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False):
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError("lr, momentum and weight_decay must be >= 0")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize, foreach=foreach,
                                      differentiable=differentiable))

    def _prepare(self, group, p, state):
        self._coef(p, 0, -group["lr"])

    def _update(self, group):
        mom, damp, wd = group["momentum"], group["dampening"], group["weight_decay"]
        for p, g, st, coef in self._host_steps(group):
            neg_lr = coef[0]
            if group["maximize"]:
                g = g.neg()
            if wd:
                g = g.clone().add_(p, alpha=wd)
            if not mom:
                st["momentum_buffer"] = None  # as PyTorch's state (and state_dict) has it
            else:
                buf = st.get("momentum_buffer")
                if buf is None:
                    if C.ff_graph_is_capturing():
                        raise FusionFlowError("SGD.step: the momentum buffers are created on a parameter's first step, "
                                              "which a replayed graph would repeat; run one step before capturing "
                                              "(fusionflow.compile's warm-up call does)")
                    buf = st["momentum_buffer"] = g.clone()
                else:
                    buf.mul_(mom).add_(g, alpha=1.0 - damp)
                if group["nesterov"]:
                    g = g.clone().add_(buf, alpha=mom) if not wd else g.add_(buf, alpha=mom)
                else:
                    g = buf
            p.add_(g * neg_lr)  # the bits of p.add_(g, alpha=-lr)
