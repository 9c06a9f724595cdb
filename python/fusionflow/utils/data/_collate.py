"""default_collate and default_convert: PyTorch 1.13's rules for turning a list of samples
into a batch (tensors stacked, NumPy arrays and numbers made tensors, str and bytes left as
they are, mappings, namedtuples and sequences collated field by field)."""
import collections.abc
import re

import numpy as np

from ..._tensor import Tensor, tensor, as_tensor
from ..._factories import stack
from ... import _dtype

__all__ = ["default_collate", "default_convert"]

_STR_OR_OBJECT = re.compile(r"[SaUO]")  # NumPy dtype kinds that cannot become a tensor
_worker_stack = None  # in a DataLoader worker process: stacks samples into shared memory (_shared.py)


def _no_collate(what):
    return TypeError("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                     "found %s" % what)


def default_collate(batch):
    elem = batch[0]
    if isinstance(elem, Tensor):
        return _worker_stack(batch) if _worker_stack is not None else stack(list(batch), 0)
    if isinstance(elem, np.ndarray):
        if _STR_OR_OBJECT.search(elem.dtype.str):
            raise _no_collate(elem.dtype)
        return default_collate([as_tensor(b) for b in batch])
    if isinstance(elem, (np.bool_, np.number)):
        return as_tensor(np.array(batch))
    if isinstance(elem, float):
        return tensor(batch, dtype=_dtype.float64)
    if isinstance(elem, int):  # bool included: a bool tensor, as torch.tensor([True, ...])
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        out = {k: default_collate([d[k] for d in batch]) for k in elem}
        try:
            return type(elem)(out)
        except TypeError:
            return out
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        n = len(elem)
        if any(len(e) != n for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        fields = [default_collate(s) for s in zip(*batch)]  # tuples: str fields stay tuples, as torch
        if isinstance(elem, tuple):
            return fields  # a list, as PyTorch (kept for backward compatibility there)
        try:
            return type(elem)(fields)
        except TypeError:
            return fields
    raise _no_collate(type(elem))


def default_convert(data):
    """What DataLoader(batch_size=None) yields: NumPy arrays (not of str/object) and scalars
    become tensors, containers are converted element by element, the rest is unchanged."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray):
        return data if _STR_OR_OBJECT.search(data.dtype.str) else as_tensor(data)
    if isinstance(data, (np.bool_, np.number)):
        return as_tensor(np.array(data))
    if isinstance(data, collections.abc.Mapping):
        out = {k: default_convert(v) for k, v in data.items()}
        try:
            return type(data)(out)
        except TypeError:
            return out
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data
