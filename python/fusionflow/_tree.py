"""The structure of a saved checkpoint (fusionflow.save of nested containers), as JSON in the
safetensors metadata under TREE_KEY; the tensors themselves are the file's named tensors.

JSON values stand for themselves (numbers, strings, bools, null); a JSON object is a tensor
{"T": name}, a list {"L": [...]}, a tuple {"U": [...]} or a dict {"D": [[key, value], ...]}
(keys encoded the same way, so int keys of an optimizer's state survive). Only these types
are written: nothing is pickled, so loading a file runs no code."""
import collections
import json
import math

import numpy as np

from ._tensor import Tensor

TREE_KEY = "fusionflow.tree"


class _Encoder:
    def __init__(self):
        self.names, self.tensors, self.used = [], [], set()

    def tensor(self, t, path):
        name = ".".join(path) or "tensor"
        k, base = 1, name
        while name in self.used:  # a key that contains dots can collide with a nested path
            name = "%s#%d" % (base, k)
            k += 1
        self.used.add(name)
        self.names.append(name)
        self.tensors.append(t)
        return {"T": name}

    def node(self, x, path):
        if isinstance(x, Tensor):
            return self.tensor(x, path)
        if x is None or isinstance(x, (bool, int, str)):
            return x
        if isinstance(x, float):
            return x if math.isfinite(x) else {"F": repr(x)}
        if isinstance(x, (np.integer, np.floating, np.bool_)):
            return self.node(x.item(), path)
        if isinstance(x, dict):
            return {"D": [[self.node(k, path + ["key"]), self.node(v, path + [str(k)])] for k, v in x.items()]}
        if isinstance(x, list):
            return {"L": [self.node(v, path + [str(i)]) for i, v in enumerate(x)]}
        if isinstance(x, tuple) and type(x) is tuple:
            return {"U": [self.node(v, path + [str(i)]) for i, v in enumerate(x)]}
        what = type(x).__name__
        where = ("at %r " % ".".join(path)) if path else ""
        if hasattr(x, "state_dict") and callable(x.state_dict):
            raise TypeError("save: got a %s %s; fusionflow.save writes tensors and containers of them, not Python "
                            "objects (no pickle): save its state_dict() instead, e.g. fusionflow.save(model."
                            "state_dict(), path), then rebuild it and call load_state_dict(fusionflow.load(path))"
                            % (what, where))
        raise TypeError("save: cannot save a %s %s; fusionflow.save writes Tensors, numbers, strings, bools, None "
                        "and dicts/lists/tuples of them (no pickle)" % (what, where))


def encode(obj):
    """(names, tensors, tree JSON or None): None when obj is a flat dict str -> Tensor, which
    is written as a plain safetensors file, readable by any safetensors reader."""
    if isinstance(obj, dict) and all(isinstance(k, str) and isinstance(v, Tensor) for k, v in obj.items()):
        return list(obj.keys()), list(obj.values()), None
    e = _Encoder()
    tree = e.node(obj, [])
    return e.names, e.tensors, json.dumps(tree, separators=(",", ":"))


def decode(text, tensors):
    def node(x):
        if isinstance(x, list):  # never written bare; JSON arrays only inside our objects
            raise ValueError("load: malformed %s metadata (a bare list)" % TREE_KEY)
        if not isinstance(x, dict):
            return x
        if "T" in x:
            return tensors[x["T"]]
        if "F" in x:
            return float(x["F"])
        if "L" in x:
            return [node(v) for v in x["L"]]
        if "U" in x:
            return tuple(node(v) for v in x["U"])
        if "D" in x:
            return collections.OrderedDict((_key(node(k)), node(v)) for k, v in x["D"])
        raise ValueError("load: malformed %s metadata: unknown node %r" % (TREE_KEY, sorted(x)))
    try:
        return node(json.loads(text))
    except (KeyError, TypeError, json.JSONDecodeError) as e:
        raise ValueError("load: malformed %s metadata in the file: %s" % (TREE_KEY, e)) from None


def _key(k):
    return tuple(k) if isinstance(k, list) else k
