"""Grad mode: no_grad, enable_grad, set_grad_enabled (context managers and decorators),
is_grad_enabled; per thread, as the C side."""

from ._lib import C



# ---- grad mode ---------------------------------------------------------------------------------
class set_grad_enabled:
    """Context manager (and decorator) setting grad mode; restores the previous mode."""

    def __init__(self, mode):
        self.mode = bool(mode)
        self.prev = C.ff_set_grad_enabled(self.mode)  # takes effect at once, as torch's

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        C.ff_set_grad_enabled(self.prev)
        return False


class _GradMode:
    _mode = None

    def __enter__(self):
        self._prev_stack = getattr(self, "_prev_stack", [])
        self._prev_stack.append(C.ff_set_grad_enabled(self._mode))
        return self

    def __exit__(self, *exc):
        C.ff_set_grad_enabled(self._prev_stack.pop())
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with self.__class__():
                return fn(*a, **k)
        return wrapper


class no_grad(_GradMode):
    """with fusionflow.no_grad(): ...  (or @fusionflow.no_grad())"""
    _mode = False


class enable_grad(_GradMode):
    _mode = True


def is_grad_enabled():
    return C.ff_grad_enabled()


class inference_mode(_GradMode):
    """torch.inference_mode: here no_grad (no graph is recorded); inference_mode(False)
    enables grad again, as torch's does inside an outer inference_mode."""

    def __init__(self, mode=True):
        self.mode = bool(mode)
        self._mode = not self.mode

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with inference_mode(self.mode):
                return fn(*a, **k)
        return wrapper
