"""The scheduler base (LRScheduler, torch's _LRScheduler) and the lambda schedulers.

Each step() advances last_epoch and writes get_lr()'s values into the optimizer's groups.
get_lr() is PyTorch 1.13's recursive ("chainable") form, which reads the groups' current lr,
so schedulers can be chained; step(epoch) uses the closed form where one exists, as there."""
import warnings

from ..optimizer import Optimizer

__all__ = ["LRScheduler", "_LRScheduler", "LambdaLR", "MultiplicativeLR"]


class LRScheduler:
    def __init__(self, optimizer, last_epoch=-1, verbose=False):
        if not isinstance(optimizer, Optimizer):
            raise TypeError("%s is not an Optimizer" % type(optimizer).__name__)
        self.optimizer = optimizer
        if last_epoch == -1:
            for g in optimizer.param_groups:
                g.setdefault("initial_lr", g["lr"])
        else:
            for i, g in enumerate(optimizer.param_groups):
                if "initial_lr" not in g:
                    raise KeyError("param 'initial_lr' is not specified in param_groups[%d] when resuming an "
                                   "optimizer" % i)
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.verbose = verbose
        self._initial_step()

    def _initial_step(self):
        self._step_count = 0
        self.step()

    def _group_lrs(self):
        return [g["lr"] for g in self.optimizer.param_groups]

    def get_lr(self):
        raise NotImplementedError

    def get_last_lr(self):
        return self._last_lr

    def step(self, epoch=None):
        self._step_count += 1
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            warnings.warn("The epoch parameter in `scheduler.step()` was not necessary and is being deprecated "
                          "where possible.", UserWarning)
            self.last_epoch = epoch
            values = self._get_closed_form_lr() if hasattr(self, "_get_closed_form_lr") else self.get_lr()
        self._set_lrs(values, epoch)

    def _set_lrs(self, values, epoch=None):
        for i, (g, lr) in enumerate(zip(self.optimizer.param_groups, values)):
            g["lr"] = lr
            if self.verbose:
                print("Adjusting learning rate of group %d to %.4e." % (i, lr) if epoch is None else
                      "Epoch %s: adjusting learning rate of group %d to %.4e."
                      % (("%.2f" if isinstance(epoch, float) else "%.5d") % epoch, i, lr))
        self._last_lr = self._group_lrs()

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)


_LRScheduler = LRScheduler  # PyTorch 1.13's name


class _LambdaBase(LRScheduler):
    """lr_lambda: one function, or one per param group. state_dict keeps the __dict__ of
    callable objects (not of plain functions), as PyTorch."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1, verbose=False):
        self.optimizer = optimizer
        n = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != n:
                raise ValueError("Expected %d lr_lambdas, but got %d" % (n, len(lr_lambda)))
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        super().__init__(optimizer, last_epoch, verbose)

    def state_dict(self):
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        sd["lr_lambdas"] = [None if _is_function(f) else dict(f.__dict__) for f in self.lr_lambdas]
        return sd

    def load_state_dict(self, state_dict):
        sd = dict(state_dict)
        fns = sd.pop("lr_lambdas")
        self.__dict__.update(sd)
        for f, saved in zip(self.lr_lambdas, fns):
            if saved is not None:
                f.__dict__.update(saved)


def _is_function(f):
    import types
    return isinstance(f, types.FunctionType)


class LambdaLR(_LambdaBase):
    """lr = initial_lr * lr_lambda(epoch)."""

    def get_lr(self):
        return [base * f(self.last_epoch) for f, base in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaBase):
    """lr *= lr_lambda(epoch) at every step after the first."""

    def get_lr(self):
        if self.last_epoch > 0:
            return [g["lr"] * f(self.last_epoch) for f, g in zip(self.lr_lambdas, self.optimizer.param_groups)]
        return self._group_lrs()
