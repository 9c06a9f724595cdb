"""Grad mode: no_grad, enable_grad, set_grad_enabled (context managers and decorators),
is_grad_enabled; per thread, as the C side."""

from ._lib import C, ext



# ---- grad mode ---------------------------------------------------------------------------------
class set_grad_enabled:
    """Context manager (and decorator) setting grad mode; restores the previous mode."""

    def __init__(self, mode):
        self.mode = bool(mode)
        self.prev = C.ff_grad_enabled()  # recorded first: a Ctrl-C after the set can undo it
        _set_undoable(self.mode, self.prev)  # takes effect at once, as torch's

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        C.ff_set_grad_enabled(self.prev)
        return False


def _set_undoable(mode, prev):
    """Sets the C grad mode; an exception landing right after (Ctrl-C) puts prev back."""
    try:
        C.ff_set_grad_enabled(mode)
    except BaseException:
        C.ff_set_grad_enabled(prev)
        raise


class _GradMode(ext.GradModeBase if ext is not None else object):
    """With the C extension its __enter__/__exit__ are GradModeBase's (ffext_grad_mode.c):
    the same steps, but a Ctrl-C cannot land at the top of a C __exit__ before it puts the
    mode back, as it can at a Python function's first instruction. Without it, these."""
    _mode = None

    def __enter__(self):
        stack = self.__dict__.setdefault("_prev_stack", [])
        n = len(stack)
        prev = C.ff_grad_enabled()  # recorded before the C mode changes, never after
        try:
            stack.append(prev)
            C.ff_set_grad_enabled(self._mode)
        except BaseException:  # a Ctrl-C on the way: as if never entered
            C.ff_set_grad_enabled(prev)
            del stack[n:]
            raise
        return self

    def __exit__(self, *exc):
        stack = self._prev_stack
        try:
            C.ff_set_grad_enabled(stack[-1])
        finally:  # popped even if a Ctrl-C lands right after the C call
            stack.pop()
        return False

    if ext is not None:  # GradModeBase's, in C
        del __enter__, __exit__

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
