"""Schedulers made of schedulers: SequentialLR (one after another, switching at milestones)
and ChainedScheduler (all of them at every step, multiplying their effects)."""
import bisect

from ._base import LRScheduler

__all__ = ["SequentialLR", "ChainedScheduler"]


class _Composite(LRScheduler):
    def state_dict(self):
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        sd["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return sd

    def load_state_dict(self, state_dict):
        sd = dict(state_dict)
        subs = sd.pop("_schedulers")
        self.__dict__.update(sd)
        for s, saved in zip(self._schedulers, subs):
            s.load_state_dict(saved)


class SequentialLR(_Composite):
    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1, verbose=False):
        for i, s in enumerate(schedulers):
            if s.optimizer is not optimizer:
                raise ValueError("Sequential Schedulers expects all schedulers to belong to the same optimizer, but "
                                 "got schedulers at index %d to be different than the optimizer passed in." % i)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be one more than the "
                             "number of milestone points, but got number of schedulers %d and the number of "
                             "milestones to be equal to %d" % (len(schedulers), len(milestones)))
        self._schedulers, self._milestones = schedulers, milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # undo the initial steps the sub-schedulers took when they were made; replay the first's
        for g in optimizer.param_groups:
            g["lr"] = g["initial_lr"]
        for s in schedulers:
            s.last_epoch -= 1
        schedulers[0]._initial_step()
        self._last_lr = schedulers[0].get_last_lr()

    def step(self):
        self.last_epoch += 1
        i = bisect.bisect_right(self._milestones, self.last_epoch)
        s = self._schedulers[i]
        if i > 0 and self._milestones[i - 1] == self.last_epoch:
            s.step(0)
        else:
            s.step()
        self._last_lr = s.get_last_lr()


class ChainedScheduler(_Composite):
    def __init__(self, schedulers):
        for i, s in enumerate(schedulers[1:], 1):
            if s.optimizer is not schedulers[0].optimizer:
                raise ValueError("ChainedScheduler expects all schedulers to belong to the same optimizer, but got "
                                 "schedulers at index 0 and %d to be different" % i)
        self._schedulers = list(schedulers)
        self.optimizer = schedulers[0].optimizer
        self._last_lr = self._group_lrs()

    def step(self):
        for s in self._schedulers:
            s.step()
        self._last_lr = self._group_lrs()
