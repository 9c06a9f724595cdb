"""Mixed precision, as torch.autocast and torch.cuda.amp.GradScaler (include/ff/amp.h).

    with fusionflow.autocast(dtype=fusionflow.bfloat16):
        loss = F.cross_entropy(model(x), y)     # matmul/conv in bf16, softmax and loss in f32
    loss.backward()                             # outside the region, as PyTorch recommends

    scaler = fusionflow.amp.GradScaler()        # for float16: dynamic loss scaling
    scaler.scale(loss).backward()
    scaler.step(opt)                            # skipped when a gradient overflowed
    scaler.update()

autocast is per thread and nests; it sets the C library's mode (ff_autocast_set), so every
op that goes through it (matmul, conv2d, linear, softmax, the losses, the norms) follows."""
import functools
import math

from ._lib import C, check_status
from . import _dtype
from ._grad_mode import no_grad

__all__ = ["autocast", "GradScaler"]


class autocast:
    """Context manager and decorator. dtype: fusionflow.bfloat16 (default) or float16.
    device_type is accepted for PyTorch compatibility and ignored: the mode applies to
    every backend."""

    def __init__(self, device_type=None, dtype=None, enabled=True):
        dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.bfloat16
        if dt not in (_dtype.float16, _dtype.bfloat16):
            raise ValueError("autocast: dtype must be fusionflow.float16 or bfloat16, got %s" % dt.name)
        self.dtype = dt
        self.enabled = bool(enabled)
        self._prev = []

    def __enter__(self):
        self._prev.append(C.ff_autocast_get())
        check_status(C.ff_autocast_set(self.dtype.code if self.enabled else _dtype.float32.code))
        return self

    def __exit__(self, *exc):
        check_status(C.ff_autocast_set(self._prev.pop()))
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*a, **k):
            with autocast(dtype=self.dtype, enabled=self.enabled):
                return fn(*a, **k)
        return wrapper


def is_autocast_enabled():
    return C.ff_autocast_get() != _dtype.float32.code


def get_autocast_dtype():
    """The active autocast dtype, or None when autocast is off."""
    code = C.ff_autocast_get()
    return None if code == _dtype.float32.code else _dtype.from_code(code)


class GradScaler:
    """Dynamic loss scaling: scale(loss) before backward, then step(optimizer) (which
    unscales the gradients in place and skips the step if any is inf or NaN) and
    update() once per iteration. unscale_(optimizer) may come first, for clipping."""

    def __init__(self, init_scale=65536.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        if not (init_scale > 0 and growth_factor > 1 and 0 < backoff_factor < 1 and growth_interval >= 1):
            raise ValueError("GradScaler: need init_scale > 0, growth_factor > 1, 0 < backoff_factor < 1, "
                             "growth_interval >= 1")
        self._scale = float(init_scale)
        self._growth, self._backoff, self._interval = float(growth_factor), float(backoff_factor), int(growth_interval)
        self._enabled = bool(enabled)
        self._clean = 0
        self._found_inf = {}  # id(optimizer) -> bool, for this iteration

    def is_enabled(self):
        return self._enabled

    def get_scale(self):
        return self._scale if self._enabled else 1.0

    def scale(self, loss):
        return loss * self._scale if self._enabled else loss

    def unscale_(self, optimizer):
        if not self._enabled:
            return
        if id(optimizer) in self._found_inf:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update()")
        found = False
        inv = 1.0 / self._scale
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    g.mul_(inv)
                    if g.numel() and not math.isfinite(g.abs().amax().item()):  # max propagates NaN
                        found = True
        self._found_inf[id(optimizer)] = found

    def step(self, optimizer, *args, **kwargs):
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if id(optimizer) not in self._found_inf:
            self.unscale_(optimizer)
        return None if self._found_inf[id(optimizer)] else optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale)
        elif any(self._found_inf.values()):
            self._scale *= self._backoff
            self._clean = 0
        elif self._found_inf:
            self._clean += 1
            if self._clean >= self._interval:
                self._scale *= self._growth
                self._clean = 0
        self._found_inf = {}

    def state_dict(self):
        return {"scale": self._scale, "growth_factor": self._growth, "backoff_factor": self._backoff,
                "growth_interval": self._interval, "_growth_tracker": self._clean}

    def load_state_dict(self, sd):
        self._scale, self._growth, self._backoff = float(sd["scale"]), float(sd["growth_factor"]), float(sd["backoff_factor"])
        self._interval, self._clean = int(sd["growth_interval"]), int(sd["_growth_tracker"])
