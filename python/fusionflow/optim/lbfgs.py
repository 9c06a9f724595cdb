"""LBFGS as torch.optim.LBFGS: limited-memory BFGS over all parameters as one flat vector,
with a fixed step (lr) or the strong-Wolfe line search; step(closure) re-evaluates the loss
as often as it needs. PyTorch 1.13's defaults, stopping rules and state layout."""
from .._factories import cat
from .._grad_mode import enable_grad, no_grad
from .._lib import C, FusionFlowError
from .._tensor import zeros
from ._line_search import strong_wolfe
from .optimizer import Optimizer

__all__ = ["LBFGS"]


class LBFGS(Optimizer):
    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None):
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError("LBFGS: line_search_fn must be None or 'strong_wolfe', got %r" % (line_search_fn,))
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change, history_size=history_size,
                                      line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def add_param_group(self, param_group):
        if self.param_groups:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        super().add_param_group(param_group)

    # ---- the parameters as one flat vector ------------------------------------------------
    def _flat_grad(self):
        return cat([(p.grad if p.grad is not None else zeros(p.numel(), dtype=p.dtype, device=p.device))
                    .reshape(-1) for p in self._params], 0)

    def _add_dir(self, t, d):
        offset = 0
        for p in self._params:
            n = p.numel()
            p.add_(d[offset:offset + n].reshape(p.shape), alpha=t)
            offset += n

    def _evaluate(self, closure, x, t, d):
        """Loss and flat gradient at x + t d; the parameters are back at x afterwards."""
        self._add_dir(t, d)
        with enable_grad():
            loss = float(closure())
        g = self._flat_grad()
        for p, v in zip(self._params, x):
            p.copy_(v)
        return loss, g

    def step(self, closure=None):
        if closure is None:
            raise ValueError("LBFGS.step needs a closure that clears the grads, computes the loss, calls "
                             "backward() and returns the loss")
        if C.ff_graph_is_capturing():
            raise FusionFlowError("LBFGS.step cannot be captured by fusionflow.compile: it calls the closure a "
                                  "data-dependent number of times")
        with no_grad():
            return self._step(closure)

    def _step(self, closure):
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tol_grad, tol_change, history = group["tolerance_grad"], group["tolerance_change"], group["history_size"]
        st = self.state.setdefault(self._params[0], {})
        st.setdefault("func_evals", 0)
        st.setdefault("n_iter", 0)
        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        evals = 1
        st["func_evals"] += 1
        g = self._flat_grad()
        if g.abs().max().item() <= tol_grad:
            return orig_loss
        d, t = st.get("d"), st.get("t")
        dirs, steps, ro = st.get("old_dirs"), st.get("old_stps"), st.get("ro")
        h_diag, prev_g, prev_loss = st.get("H_diag"), st.get("prev_flat_grad"), st.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            st["n_iter"] += 1
            if st["n_iter"] == 1:
                d = g.neg()
                dirs, steps, ro, h_diag = [], [], [], 1
            else:
                d, h_diag = self._direction(st, g, prev_g, d, t, dirs, steps, ro, h_diag, history)
            if prev_g is None:
                prev_g = g.clone()
            else:
                prev_g.copy_(g)
            prev_loss = loss
            t = min(1.0, 1.0 / g.abs().sum().item()) * lr if st["n_iter"] == 1 else lr
            gtd = g.dot(d).item()
            if gtd > -tol_change:  # not a descent direction
                break
            if group["line_search_fn"] == "strong_wolfe":
                x0 = [p.clone() for p in self._params]
                loss, g, t, ls_evals = strong_wolfe(lambda x, tt, dd: self._evaluate(closure, x, tt, dd),
                                                    x0, t, d, loss, g, gtd)
                self._add_dir(t, d)
                opt_cond = g.abs().max().item() <= tol_grad
            else:
                self._add_dir(t, d)
                ls_evals, opt_cond = 0, False
                if n_iter != max_iter:
                    with enable_grad():
                        loss = float(closure())
                    g = self._flat_grad()
                    opt_cond = g.abs().max().item() <= tol_grad
                    ls_evals = 1
            evals += ls_evals
            st["func_evals"] += ls_evals
            if n_iter == max_iter or evals >= max_eval or opt_cond:
                break
            if (d * t).abs().max().item() <= tol_change or abs(loss - prev_loss) < tol_change:
                break
        st.update(d=d, t=t, old_dirs=dirs, old_stps=steps, ro=ro, H_diag=h_diag, prev_flat_grad=prev_g,
                  prev_loss=prev_loss)
        return orig_loss

    @staticmethod
    def _direction(st, g, prev_g, d, t, dirs, steps, ro, h_diag, history):
        """Updates the curvature pairs with the last step, then the two-loop recursion: the
        approximate inverse Hessian applied to -g."""
        y = g - prev_g
        s = d * t
        ys = y.dot(s).item()
        if ys > 1e-10:
            if len(dirs) == history:
                dirs.pop(0)
                steps.pop(0)
                ro.pop(0)
            dirs.append(y)
            steps.append(s)
            ro.append(1.0 / ys)
            h_diag = ys / y.dot(y).item()
        al = st.setdefault("al", [None] * history)
        q = g.neg()
        for i in range(len(dirs) - 1, -1, -1):
            al[i] = steps[i].dot(q).item() * ro[i]
            q.add_(dirs[i], alpha=-al[i])
        r = q * h_diag
        for i in range(len(dirs)):
            be = dirs[i].dot(r).item() * ro[i]
            r.add_(steps[i], alpha=al[i] - be)
        return r, h_diag
