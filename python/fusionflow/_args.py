"""Argument checks shared by the Python front end, so a bad argument fails as PyTorch's
does and says which function it was given to.

- int_arg(fn, name, value): an int-valued argument (k, n, dim ...) as an int. Python's
  int() would truncate 1.5 to 1; PyTorch refuses floats and bools there, and so do we.
- named(fn): wraps a public function so that any error it raises names it. The C
  library's messages already name the C function (ff_topk: ...), but an argument that
  never reaches C (a str where a tensor goes, a float where ctypes wants an int) fails in
  Python with a message of its own; this prefixes "fn(): " to such a message, and turns
  the errors that are a wrong argument's symptoms (AttributeError on a non-tensor,
  ctypes.ArgumentError, ArithmeticError) into the TypeError / ValueError PyTorch raises.
"""
import ctypes
import functools
import operator

__all__ = ["int_arg", "named"]


def int_arg(fn, name, value):
    if isinstance(value, (bool, float)):
        raise TypeError("%s(): argument '%s' must be int, not %s" % (fn, name, type(value).__name__))
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError("%s(): argument '%s' must be int, not %s" % (fn, name, type(value).__name__)) from None


# The errors a bad argument shows up as; a bare Exception (a bug of ours, KeyboardInterrupt
# ...) passes through as it is.
_RETYPED = {AttributeError: TypeError, ctypes.ArgumentError: TypeError, ZeroDivisionError: ValueError,
            OverflowError: ValueError}
_NAMED = (TypeError, ValueError, IndexError, RuntimeError, NotImplementedError) + tuple(_RETYPED)


def named(f, name=None):
    fn = name or f.__name__

    @functools.wraps(f)
    def g(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except _NAMED as e:
            msg = str(e.args[0]) if e.args else ""
            prefixed = msg if fn in msg else "%s(): %s" % (fn, msg or type(e).__name__)
            for bad, good in _RETYPED.items():
                if isinstance(e, bad) and not isinstance(e, good):
                    raise good(prefixed) from e
            if prefixed is not msg:
                e.args = (prefixed,) + tuple(e.args[1:])
            raise
    return g
