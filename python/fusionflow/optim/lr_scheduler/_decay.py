"""Schedules that decay from the initial lr: StepLR, MultiStepLR, ConstantLR, LinearLR,
ExponentialLR, PolynomialLR, CosineAnnealingLR (PyTorch 1.13's formulas)."""
import bisect
import collections
import math

from ._base import LRScheduler

__all__ = ["StepLR", "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR", "PolynomialLR",
           "CosineAnnealingLR"]


class StepLR(LRScheduler):
    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1, verbose=False):
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [b * self.gamma ** (self.last_epoch // self.step_size) for b in self.base_lrs]


class MultiStepLR(LRScheduler):
    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1, verbose=False):
        self.milestones = collections.Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch not in self.milestones:
            return self._group_lrs()
        return [lr * self.gamma ** self.milestones[self.last_epoch] for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        ms = sorted(self.milestones.elements())
        return [b * self.gamma ** bisect.bisect_right(ms, self.last_epoch) for b in self.base_lrs]


class ConstantLR(LRScheduler):
    """lr * factor until total_iters, then lr."""

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1, verbose=False):
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._group_lrs()]
        if self.last_epoch != self.total_iters:
            return self._group_lrs()
        return [lr * (1.0 / self.factor) for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [b * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)) for b in self.base_lrs]


class LinearLR(LRScheduler):
    """The factor goes linearly from start_factor to end_factor over total_iters steps."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_epoch=-1,
                 verbose=False):
        if start_factor > 1.0 or start_factor < 0:
            raise ValueError("Starting multiplicative factor expected to be between 0 and 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._group_lrs()]
        if self.last_epoch > self.total_iters:
            return self._group_lrs()
        d = self.end_factor - self.start_factor
        r = 1.0 + d / (self.total_iters * self.start_factor + (self.last_epoch - 1) * d)
        return [lr * r for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        d = self.end_factor - self.start_factor
        return [b * (self.start_factor + d * min(self.total_iters, self.last_epoch) / self.total_iters)
                for b in self.base_lrs]


class ExponentialLR(LRScheduler):
    def __init__(self, optimizer, gamma, last_epoch=-1, verbose=False):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch == 0:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [b * self.gamma ** self.last_epoch for b in self.base_lrs]


class PolynomialLR(LRScheduler):
    """lr * (1 - t / total_iters) ** power, reaching 0 at total_iters."""

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1, verbose=False):
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        t, n = self.last_epoch, self.total_iters
        if t == 0 or t > n:
            return self._group_lrs()
        f = ((1.0 - t / n) / (1.0 - (t - 1) / n)) ** self.power
        return [lr * f for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [b * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
                for b in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    def __init__(self, optimizer, T_max, eta_min=0, last_epoch=-1, verbose=False):
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        t, T, lo = self.last_epoch, self.T_max, self.eta_min
        if t == 0:
            return self._group_lrs()
        if self._step_count == 1 and t > 0:
            return [lo + (b - lo) * (1 + math.cos(t * math.pi / T)) / 2 for b in self.base_lrs]
        if (t - 1 - T) % (2 * T) == 0:
            return [lr + (b - lo) * (1 - math.cos(math.pi / T)) / 2
                    for b, lr in zip(self.base_lrs, self._group_lrs())]
        r = (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
        return [r * (lr - lo) + lo for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [self.eta_min + (b - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for b in self.base_lrs]
