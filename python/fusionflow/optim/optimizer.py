"""Optimizer: param groups, state, zero_grad, state_dict; and the host-call machinery that
makes SGD, Adam and AdamW graph-safe.

Updates run under no_grad with the C in-place ops (ff_axpy_, ff_mul_scalar_, ...), so
parameters keep their identity and memory; optimizer state lives in C tensors too.

Graph-safe (fusionflow.compile), as the C optimizers (nn/optimizer.c): what a step
advances on the host (state creation, Adam's step count, coefficients derived from the
learning rate and the step) runs in one host call per group and step (ff_graph_host_call),
which writes those coefficients into 0-d tensors of each parameter's dtype; the update
kernels, which run after it, read them (_host_steps). Eagerly the host call just runs, and
the kernels compute the bits ff_axpy_ and ff_mul_scalar_ with the same scalars would; a replayed step runs it again first, so it
follows lr changes in param_groups and Adam's bias corrections."""
import weakref

from .._compile import host_call
import numpy as np

from .._lib import C, FF_ERR_INVALID, FusionFlowError, HostFn, error
from .._interrupt import callback_error
from .._tensor import Tensor, no_grad, tensor, wrap

__all__ = ["Optimizer", "required"]


def _state_value(name, v, p):
    """A loaded state entry: tensors (ours, torch's, NumPy's) of a floating dtype become p's
    dtype on p's device; 'step' and integer state stay as they are, as in PyTorch."""
    if not isinstance(v, Tensor):
        if hasattr(v, "detach") and hasattr(v, "numpy"):  # a torch tensor
            v = v.detach().cpu().numpy()
        if not isinstance(v, np.ndarray):
            return v
        v = tensor(v)
    if name == "step":
        return int(v.item()) if v.numel() == 1 else v
    if v.dtype.is_floating_point:
        return v.to(p.device, p.dtype, copy=True)
    return v.to(p.device)


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()  # a default that a param group must supply (torch.optim.optimizer.required)


class Optimizer:
    """The base: param_groups (lists of dicts with "params"), state (param -> dict), zero_grad,
    add_param_group, state_dict / load_state_dict in PyTorch's layout.

    graph_safe: whether step() may be captured by fusionflow.compile. The optimizers that are
    not (all but SGD, Adam, AdamW) raise when a capture reaches their step: their scalars
    come from the host on every step, and a replay would freeze them."""

    graph_safe = False

    def __init__(self, params, defaults):
        if isinstance(params, Tensor):
            raise TypeError("%s: params should be an iterable of Tensors or dicts, got a Tensor"
                            % type(self).__name__)
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        self.defaults = defaults
        self.param_groups = []
        self.state = {}  # param -> dict (a Tensor hashes by identity)
        self._coefs = {}  # id(param) -> [0-d tensors]: the step's scalars the update kernels read
        self._coef_held = {}  # (id(param), k) -> the value coefficient k holds, as its dtype rounds it
        self._host_targets = []  # host-call key -> (group, the parameters it prepares)
        self._host_keys = {}  # (id(group), ids of those parameters) -> key
        # captured graphs call this on every replay: kept here, and the optimizer is kept by them
        self._host_fn = HostFn(_host_entry(weakref.ref(self)))
        for g in params if isinstance(params[0], dict) else [{"params": params}]:
            self.add_param_group(g)

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, g in enumerate(self.param_groups):
            lines.append("Parameter Group %d" % i)
            lines.extend("    %s: %s" % (k, g[k]) for k in sorted(g) if k != "params")
        return "\n".join(lines) + "\n)"

    def add_param_group(self, param_group):
        """Adds a group: its params, and every option the group does not set from defaults."""
        if not isinstance(param_group, dict):
            raise TypeError("%s.add_param_group: expected a dict, got %s" % (type(self).__name__,
                                                                            type(param_group).__name__))
        group = dict(param_group)
        ps = group["params"]
        group["params"] = [ps] if isinstance(ps, Tensor) else list(ps)
        if isinstance(ps, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the "
                            "ordering of tensors in sets will change between runs; use a list instead")
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is %s"
                                % type(p).__name__)
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for k, v in self.defaults.items():
            if v is required and k not in group:
                raise ValueError("parameter group didn't specify a value of required optimization parameter "
                                 + k)
            group.setdefault(k, v)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if len({id(p) for p in group["params"]}) != len(group["params"]) or \
                any(id(p) in seen for p in group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=False):
        """Zeroes the grads in place, or drops them (set_to_none=True); PyTorch 1.13's default
        is to zero them."""
        for g in self.param_groups:
            for p in g["params"]:
                if set_to_none:
                    p.grad = None
                else:
                    gr = p.grad
                    if gr is not None:
                        with no_grad():
                            gr.zero_()

    def state_dict(self):
        """{'state': {index: {...}}, 'param_groups': [{..., 'params': [index, ...]}]}: params
        numbered in group order, as PyTorch; the state's tensors are the live ones."""
        index, groups = {}, []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["params"] = [index.setdefault(id(p), len(index)) for p in g["params"]]
            groups.append(packed)
        state = {index[id(p)]: st for p, st in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restores state and options from state_dict() (of this optimizer class, or torch's with
        tensors of either library): groups and their sizes must match; floating state is cast to
        its parameter's dtype and device."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("%s.load_state_dict: loaded state dict has %d parameter groups, the optimizer "
                             "has %d" % (type(self).__name__, len(groups), len(self.param_groups)))
        for i, (saved, own) in enumerate(zip(groups, self.param_groups)):
            if len(saved["params"]) != len(own["params"]):
                raise ValueError("%s.load_state_dict: loaded state dict contains a parameter group that doesn't "
                                 "match the size of optimizer's group (group %d: %d saved, %d here)"
                                 % (type(self).__name__, i, len(saved["params"]), len(own["params"])))
        by_index = {}
        for saved, own in zip(groups, self.param_groups):
            by_index.update(zip(saved["params"], own["params"]))
        state = {}
        for k, st in state_dict["state"].items():
            p = by_index.get(int(k))
            if p is not None:
                state[p] = {n: _state_value(n, v, p) for n, v in st.items()}
        for saved, own in zip(groups, self.param_groups):
            own.update({k: v for k, v in saved.items() if k != "params"})
        self.state = state

    def _params_with_grad(self, group):
        for p in group["params"]:
            g = p.grad
            if g is not None:
                yield p, g, self.state.setdefault(p, {})

    def step(self, closure=None):
        if not self.graph_safe and C.ff_graph_is_capturing():
            raise FusionFlowError("%s.step cannot be captured by fusionflow.compile (its scalars come from the "
                                  "host each step); only SGD, Adam and AdamW are graph-safe" % type(self).__name__)
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

    def _host_steps(self, group):
        """(p, grad, state, coefficients) of every parameter with a gradient, after one host
        call (ff_graph_host_call) has run all their _prepare's: now, and before the updates
        on every replay of a graph that captures this step. One call a group and step, not
        one a parameter: a replayed step then pays one Python callback, and its updates run
        back to back (one stretch of launches, one recorded device run, a CUDA graph on
        cuda). A prepare touches only its own parameter's state and coefficients, so the
        order changes no value."""
        items = list(self._params_with_grad(group))
        if items:
            ps = tuple(p for p, _, _ in items)
            tag = (id(group), tuple(id(p) for p in ps))
            key = self._host_keys.get(tag)
            if key is None:
                key = self._host_keys[tag] = len(self._host_targets)
                self._host_targets.append((group, ps))
            if host_call(self._host_fn, key, self, every=True):  # raises the callback's own exception
                raise error()
        return [(p, g, st, self._coefs.get(id(p))) for p, g, st in items]

    def _coef(self, p, k, value):
        """Writes value into p's coefficient k, a 0-d tensor of p's (real) dtype on p's backend;
        a value that rounds to what the tensor holds is not written again (a fill kernel
        fewer per coefficient and step on a device once Adam's bias corrections settle)."""
        cs = self._coefs.setdefault(id(p), [])
        cs.extend([None] * (k + 1 - len(cs)))
        rounded = _rounded(float(value), p.dtype.to_real())
        if cs[k] is None:
            code = p.dtype.to_real().code  # a complex parameter is updated as real pairs (real_pairs)
            cs[k] = wrap(C.ff_full_on(C.ff_tensor_backend(p._ptr), 0, None, code, float(value)))
        elif self._coef_held.get((id(p), k)) != rounded or rounded != rounded:  # NaN: always written
            cs[k].fill_(value)
        self._coef_held[(id(p), k)] = rounded


def _rounded(value, dtype):
    """value as a 0-d tensor of dtype holds it (NumPy's rounding of that type), or the value
    itself where NumPy has no such type (bf16: every step writes)."""
    return float(dtype.np.type(value)) if dtype.np is not None else value


def real_pairs(*ts):
    """torch.optim's rule for complex parameters: the update runs on view_as_real of the
    parameter, its gradient and its state (views: the writes land in them), so a complex
    number is trained as the pair (re, im) it is stored as. Real tensors pass as they are."""
    from .._complex import view_as_real
    out = tuple(view_as_real(t) if t is not None and t.dtype.is_complex else t for t in ts)
    return out if len(out) > 1 else out[0]


def _host_entry(opt_ref):
    """The C callback of an optimizer's host calls: never raises into C. A failure is
    stored (_interrupt.callback_error) for the Python caller to re-raise, and reported to
    C as an ff error, so a replay stops there with a message that carries it. Its callers
    run it under _interrupt.deferred(), so Ctrl-C never lands on its first line, outside
    the try, where ctypes would drop it and return an undefined status to C."""
    def entry(user):
        try:
            opt = opt_ref()
            group, ps = opt._host_targets[user or 0]
            for p in ps:
                opt._prepare(group, p, opt.state.setdefault(p, {}))
            return 0
        except BaseException as e:  # noqa: B902  (KeyboardInterrupt included: nothing may unwind through C)
            callback_error(e)
            msg = "%s step (host call): %s: %s" % (type(opt_ref()).__name__, type(e).__name__, e)
            C.ff_set_error(FF_ERR_INVALID, b"%s", msg.encode("utf-8", "replace"))
            return FF_ERR_INVALID
    return entry
