"""fusionflow.optim: SGD, Adam, AdamW with PyTorch's update rules.

Updates run under no_grad with the C in-place ops (ff_axpy_, ff_mul_scalar_, ...), so
parameters keep their identity and memory; optimizer state lives in C tensors too.

Graph-safe (fusionflow.compile), as the C optimizers (nn/optimizer.c): what a step
advances on the host (state creation, Adam's step count, coefficients derived from the
learning rate and the step) runs in a host call per parameter (ff_graph_host_call), which
writes those coefficients into 0-d tensors of the parameter's dtype; the update kernels read
them. Eagerly the host call just runs, and the kernels compute the bits ff_axpy_ and
ff_mul_scalar_ with the same scalars would; a replayed step runs it again first, so it
follows lr changes in param_groups and Adam's bias corrections."""
import math
import weakref

from ._compile import host_call
from ._lib import C, FF_ERR_INVALID, FusionFlowError, HostFn, error
from ._tensor import Tensor, no_grad, wrap, zeros_like

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
        self._coefs = {}  # id(param) -> [0-d tensors]: the step's scalars the update kernels read
        self._host_targets = []  # host-call key -> (group, param)
        self._host_keys = {}  # (id(group), id(param)) -> key
        self._host_error = None  # what the last failed host call raised
        # captured graphs call this on every replay: kept here, and the optimizer is kept by them
        self._host_fn = HostFn(_host_entry(weakref.ref(self)))

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

    def _prepare(self, group, p, state):
        """The host side of p's step (state, counters, self._coef): runs before its kernels."""

    def _host_step(self, group, p):
        """Runs _prepare through ff_graph_host_call: now, and before p's update kernels on
        every replay of a graph that captures this step."""
        key = self._host_keys.get((id(group), id(p)))
        if key is None:
            key = self._host_keys[(id(group), id(p))] = len(self._host_targets)
            self._host_targets.append((group, p))
        if host_call(self._host_fn, key, self):
            e, self._host_error = self._host_error, None
            if e is not None:
                raise e
            raise error()
        return self._coefs.get(id(p))

    def _coef(self, p, k, value):
        """Writes value into p's coefficient k, a 0-d tensor of p's dtype on p's backend."""
        cs = self._coefs.setdefault(id(p), [])
        cs.extend([None] * (k + 1 - len(cs)))
        if cs[k] is None:
            cs[k] = wrap(C.ff_full_on(C.ff_tensor_backend(p._ptr), 0, None, C.ff_tensor_dtype(p._ptr), float(value)))
        else:
            cs[k].fill_(value)


def _host_entry(opt_ref):
    """The C callback of an optimizer's host calls: never raises into C; a failure is
    stored on the optimizer and reported as an ff error (a replay's message carries it)."""
    def entry(user):
        opt = opt_ref()
        try:
            group, p = opt._host_targets[user or 0]
            opt._prepare(group, p, opt.state.setdefault(id(p), {}))
            return 0
        except BaseException as e:  # noqa: B902  (KeyboardInterrupt included: nothing may unwind through C)
            if opt is not None:
                opt._host_error = e
            msg = "%s step (host call): %s: %s" % (type(opt).__name__, type(e).__name__, e)
            C.ff_set_error(FF_ERR_INVALID, b"%s", msg.encode("utf-8", "replace"))
            return FF_ERR_INVALID
    return entry


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

    def _prepare(self, group, p, state):
        self._coef(p, 0, -group["lr"])

    def _update(self, group):
        mom, damp, wd = group["momentum"], group["dampening"], group["weight_decay"]
        for p, g, st in self._params_with_grad(group):
            neg_lr = self._host_step(group, p)[0]
            if wd:
                g = g.clone().add_(p, alpha=wd)
            if mom:
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
