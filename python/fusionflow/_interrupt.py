"""Ctrl-C and exceptions across the C boundary.

CPython raises KeyboardInterrupt at the first bytecode it runs after SIGINT arrives. When
a C call of ours calls back into Python (graph replays and host calls run the optimizers'
callbacks, backward runs tensor and module hooks), that first bytecode is the callback's
own entry, before any `try` in it: ctypes then prints the exception, drops it, and hands C
an undefined return value, so the interrupt is lost or turns into an unrelated C error.
And after any C call that changed state, the interrupt lands before Python records the
change (the mode it replaced, the capture it started).

Two tools close both gaps:
  - `deferred()`: while it is entered on the main thread, SIGINT is noted instead of
    raised; on leaving, the program's own handler runs once (default: KeyboardInterrupt
    is raised there, after the C call returned and its result was kept);
  - `callback_error(e)` / `raise_callback_error()`: a callback catches what it raises
    (BaseException), stores it, returns an error code so the C side fails cleanly, and the
    Python caller re-raises it as itself once the C call is back: always for what is not
    an Exception (KeyboardInterrupt, SystemExit), and for every exception where the caller
    asks (an eager optimizer step raises its callback's own TypeError, as before).
"""
import _signal
import _thread
import threading

__all__ = ["deferred", "guarded_call", "callback_error", "raise_callback_error"]

_SIGINT = _signal.SIGINT
_MAIN = threading.main_thread().ident


class _State:
    depth = 0  # nesting of deferred() on the main thread
    handler = None  # the program's SIGINT handler while ours stands in
    pending = False  # a SIGINT arrived while deferred


def _note(signum, frame):
    """The stand-in SIGINT handler: remembers, raises nothing (runs in the main thread)."""
    _State.pending = True


class _Deferred:
    """Context manager (reentrant, main thread only; a no-op elsewhere, where Python runs no
    signal handler). Uses _signal, not signal: the latter's enum wrapping costs ~4 us a call."""

    __slots__ = ()

    def __enter__(self):
        if _thread.get_ident() != _MAIN:
            return self
        if _State.depth:
            _State.depth += 1
            return self
        prev = _signal.getsignal(_SIGINT)
        if not callable(prev):  # SIG_DFL, SIG_IGN, a C handler: Python raises nothing
            return self
        _State.pending = False
        _signal.signal(_SIGINT, _note)  # from here on nothing raises KeyboardInterrupt
        _State.handler = prev
        _State.depth = 1
        return self

    def __exit__(self, *exc):
        if not _State.depth or _thread.get_ident() != _MAIN:
            return False
        _State.depth -= 1
        if _State.depth:
            return False
        handler, _State.handler = _State.handler, None
        _signal.signal(_SIGINT, handler)
        if _State.pending:
            _State.pending = False
            handler(_SIGINT, None)  # default_int_handler raises KeyboardInterrupt here
        return False


_DEFERRED = _Deferred()


def deferred():
    """`with deferred(): ...`: SIGINT inside is delivered when the block is left."""
    return _DEFERRED


_tls = threading.local()


def callback_error(exc):
    """Called by a C callback's except clause: keeps the first exception of this C call."""
    if getattr(_tls, "error", None) is None:
        _tls.error = exc


def clear_callback_error():
    _tls.error = None


def raise_callback_error(every=False):
    """Re-raises (as itself) what a callback stored during the C call just made: a
    KeyboardInterrupt or other non-Exception always, an Exception where every is true
    (else the C error, which carries its message, is the caller's to raise)."""
    e = getattr(_tls, "error", None)
    if e is not None:
        _tls.error = None
        if every or not isinstance(e, Exception):
            raise e


def guarded_call(cfn, *args, every=False):
    """cfn(*args) for a C function that may call back into Python: Ctrl-C is deferred to
    its return, and what a callback stored is raised (raise_callback_error(every))."""
    with _DEFERRED:
        clear_callback_error()
        r = cfn(*args)
        raise_callback_error(every)
    return r
