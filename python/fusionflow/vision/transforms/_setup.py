"""Argument normalizers shared by the transform classes (torchvision's rules and messages),
and the two scalar draws their get_params make from fusionflow's generator."""
import numbers
from collections.abc import Sequence

import fusionflow as ff


def _randint(high):
    """One uniform integer in [0, high) (torch.randint(0, high, size=(1,)).item())."""
    return int(ff.randint(0, high, size=(1,)).item())


def _uniform(a, b):
    """One float32 uniform in [a, b) (torch.empty(1).uniform_(a, b).item())."""
    return float(ff.empty(1).uniform_(float(a), float(b)).item())


def _setup_size(size, error_msg):
    """int or 1-sequence -> (n, n); a 2-sequence as given; anything else: ValueError."""
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, Sequence) and len(size) == 1:
        return size[0], size[0]
    if len(size) != 2:
        raise ValueError(error_msg)
    return size


def _check_sequence_input(x, name, req_sizes):
    msg = req_sizes[0] if len(req_sizes) < 2 else " or ".join(str(s) for s in req_sizes)
    if not isinstance(x, Sequence):
        raise TypeError("%s should be a sequence of length %s." % (name, msg))
    if len(x) not in req_sizes:
        raise ValueError("%s should be a sequence of length %s." % (name, msg))


def _setup_angle(x, name, req_sizes=(2,)):
    """A number d -> [-d, d]; a sequence of an allowed length as floats."""
    if isinstance(x, numbers.Number):
        if x < 0:
            raise ValueError("If %s is a single number, it must be positive." % name)
        x = [-x, x]
    else:
        _check_sequence_input(x, name, req_sizes)
    return [float(d) for d in x]


def _check_fill(fill):
    """None -> 0; otherwise a number or a sequence."""
    if fill is None:
        return 0
    if not isinstance(fill, (Sequence, numbers.Number)):
        raise TypeError("Fill should be either a sequence or a number.")
    return fill


def _tensor_fill(fill, channels):
    """Transforms hand tensors a per-channel list of floats."""
    if isinstance(fill, (int, float)):
        return [float(fill)] * channels
    return [float(f) for f in fill]
