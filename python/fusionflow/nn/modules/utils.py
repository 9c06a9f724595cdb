"""torch.nn.modules.utils' tuple helpers (_single, _pair, _triple, _quadruple), which
programs and layer code import to normalize int-or-tuple arguments."""
import collections.abc
import itertools

__all__ = ["_ntuple", "_single", "_pair", "_triple", "_quadruple", "_reverse_repeat_tuple"]


def _ntuple(n, name="parse"):
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(itertools.repeat(x, n))
    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n):
    """(a, b) -> (b, b, a, a) for n = 2: F.pad's order for per-dim paddings."""
    return tuple(x for x in reversed(t) for _ in range(n))
