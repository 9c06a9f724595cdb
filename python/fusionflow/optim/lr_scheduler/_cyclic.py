"""Cyclic schedules: CyclicLR, OneCycleLR (both cycle momentum too) and
CosineAnnealingWarmRestarts (PyTorch 1.13's formulas)."""
import math

from ..optimizer import Optimizer
from ._base import LRScheduler

__all__ = ["CyclicLR", "OneCycleLR", "CosineAnnealingWarmRestarts"]


def _per_group(name, optimizer, value):
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError("expected %d values for %s, got %d" % (n, name, len(value)))
        return list(value)
    return [value] * n


class CyclicLR(LRScheduler):
    """lr cycles between base_lr and max_lr (triangular, triangular2, exp_range or scale_fn);
    momentum cycles the other way when cycle_momentum."""

    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None, mode="triangular",
                 gamma=1.0, scale_fn=None, scale_mode="cycle", cycle_momentum=True, base_momentum=0.8,
                 max_momentum=0.9, last_epoch=-1, verbose=False):
        if not isinstance(optimizer, Optimizer):
            raise TypeError("%s is not an Optimizer" % type(optimizer).__name__)
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, g in zip(base_lrs, optimizer.param_groups):
                g["lr"] = lr
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode, self.gamma = mode, gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode if scale_fn is not None else ("iterations" if mode == "exp_range" else "cycle")
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum with `cycle_momentum` option enabled")
            moms = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for m, g in zip(moms, optimizer.param_groups):
                    g["momentum"] = m
            self.base_momentums = [g["momentum"] for g in optimizer.param_groups]
            self.max_momentums = _per_group("max_momentum", optimizer, max_momentum)
        super().__init__(optimizer, last_epoch, verbose)
        self.base_lrs = base_lrs

    def scale_fn(self, x):
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x

    def get_lr(self):
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        f = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [b + (m - b) * f * scale for b, m in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for g, b, m in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                g["momentum"] = m - (m - b) * f * scale
        return lrs

    def state_dict(self):
        sd = super().state_dict()
        sd.pop("_scale_fn_custom", None)  # a function does not belong in a state dict
        return sd


class OneCycleLR(LRScheduler):
    """The 1cycle policy: warm up from max_lr / div_factor to max_lr over pct_start of
    total_steps, then anneal to initial_lr / final_div_factor (three_phase: back to the
    initial lr first); momentum (or Adam's beta1) moves the other way."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None, pct_start=0.3,
                 anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85, max_momentum=0.95,
                 div_factor=25.0, final_div_factor=1e4, three_phase=False, last_epoch=-1, verbose=False):
        if not isinstance(optimizer, Optimizer):
            raise TypeError("%s is not an Optimizer" % type(optimizer).__name__)
        if total_steps is None and (epochs is None or steps_per_epoch is None):
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError("Expected positive integer total_steps, but got %r" % (total_steps,))
            self.total_steps = total_steps
        else:
            for name, v in (("epochs", epochs), ("steps_per_epoch", steps_per_epoch)):
                if not isinstance(v, int) or v <= 0:
                    raise ValueError("Expected positive integer %s, but got %r" % (name, v))
            self.total_steps = epochs * steps_per_epoch
        n = self.total_steps
        if three_phase:
            self._schedule_phases = [
                dict(end_step=float(pct_start * n) - 1, start_lr="initial_lr", end_lr="max_lr",
                     start_momentum="max_momentum", end_momentum="base_momentum"),
                dict(end_step=float(2 * pct_start * n) - 2, start_lr="max_lr", end_lr="initial_lr",
                     start_momentum="base_momentum", end_momentum="max_momentum"),
                dict(end_step=n - 1, start_lr="initial_lr", end_lr="min_lr",
                     start_momentum="max_momentum", end_momentum="max_momentum")]
        else:
            self._schedule_phases = [
                dict(end_step=float(pct_start * n) - 1, start_lr="initial_lr", end_lr="max_lr",
                     start_momentum="max_momentum", end_momentum="base_momentum"),
                dict(end_step=n - 1, start_lr="max_lr", end_lr="min_lr",
                     start_momentum="base_momentum", end_momentum="max_momentum")]
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError("Expected float between 0 and 1 pct_start, but got %r" % (pct_start,))
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must by one of 'cos' or 'linear', instead got %r" % (anneal_strategy,))
        self.anneal_strategy = anneal_strategy
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for m, g in zip(max_lrs, optimizer.param_groups):
                g["initial_lr"] = m / div_factor
                g["max_lr"] = m
                g["min_lr"] = g["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum with `cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            maxm = _per_group("max_momentum", optimizer, max_momentum)
            basem = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for mm, bm, g in zip(maxm, basem, optimizer.param_groups):
                    self._set_momentum(g, mm)
                    g["max_momentum"], g["base_momentum"] = mm, bm
        super().__init__(optimizer, last_epoch, verbose)

    def _set_momentum(self, g, m):
        if self.use_beta1:
            g["betas"] = (m,) + tuple(g["betas"][1:])
        else:
            g["momentum"] = m

    def _anneal(self, start, end, pct):
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self):
        t = self.last_epoch
        if t > self.total_steps:
            raise ValueError("Tried to step %d times. The specified number of total steps is %d"
                             % (t + 1, self.total_steps))
        lrs = []
        for g in self.optimizer.param_groups:
            start = 0
            for i, ph in enumerate(self._schedule_phases):
                end = ph["end_step"]
                if t <= end or i == len(self._schedule_phases) - 1:
                    pct = (t - start) / (end - start)
                    lr = self._anneal(g[ph["start_lr"]], g[ph["end_lr"]], pct)
                    mom = self._anneal(g[ph["start_momentum"]], g[ph["end_momentum"]], pct) \
                        if self.cycle_momentum else None
                    break
                start = end
            lrs.append(lr)
            if self.cycle_momentum:
                self._set_momentum(g, mom)
        return lrs


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing over T_i steps, restarting at the initial lr; T_i grows by T_mult."""

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0, last_epoch=-1, verbose=False):
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError("Expected positive integer T_0, but got %r" % (T_0,))
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError("Expected integer T_mult >= 1, but got %r" % (T_mult,))
        self.T_0 = self.T_i = T_0
        self.T_mult, self.eta_min = T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        return [self.eta_min + (b - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for b in self.base_lrs]

    def step(self, epoch=None):
        """step() advances one step; step(epoch) may be fractional (epoch + batch / batches)."""
        self._step_count += 1
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur -= self.T_i
                self.T_i *= self.T_mult
        elif epoch < 0:
            raise ValueError("Expected non-negative epoch, but got %r" % (epoch,))
        elif epoch >= self.T_0:
            if self.T_mult == 1:
                self.T_cur = epoch % self.T_0
            else:
                k = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                self.T_cur = epoch - self.T_0 * (self.T_mult ** k - 1) / (self.T_mult - 1)
                self.T_i = self.T_0 * self.T_mult ** k
        else:
            self.T_i, self.T_cur = self.T_0, epoch
        self.last_epoch = math.floor(epoch)
        self._set_lrs(self.get_lr())
