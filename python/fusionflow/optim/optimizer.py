"""Optimizer: param groups, state, zero_grad, state_dict; and the host-call machinery that
makes SGD, Adam and AdamW graph-safe.

Updates run under no_grad with the C in-place ops (ff_axpy_, ff_mul_scalar_, ...), so
parameters keep their identity and memory; optimizer state lives in C tensors too.

Graph-safe (fusionflow.compile), as the C optimizers (nn/optimizer.c): what a step
advances on the host (state creation, Adam's step count, coefficients derived from the
learning rate and the step) runs in a host call per parameter (ff_graph_host_call), which
writes those coefficients into 0-d tensors of the parameter's dtype; the update kernels read
them. Eagerly the host call just runs, and the kernels compute the bits ff_axpy_ and
ff_mul_scalar_ with the same scalars would; a replayed step runs it again first, so it
follows lr changes in param_groups and Adam's bias corrections."""
import weakref

from .._compile import host_call
from .._lib import C, FF_ERR_INVALID, HostFn, error
from .._tensor import no_grad, wrap

__all__ = ["Optimizer"]


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
            from .._tensor import enable_grad
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
