"""The structure of a saved checkpoint (fusionflow.save of nested containers), as JSON in the
safetensors metadata under TREE_KEY; the tensors themselves are the file's named tensors.

JSON values stand for themselves (numbers, strings, bools, null); a JSON object is a tensor
{"T": name}, a list {"L": [...]}, a tuple {"U": [...]} or a dict {"D": [[key, value], ...]}
(keys encoded the same way, so int keys of an optimizer's state survive). Only these types
are written: nothing is pickled, so loading a file runs no code.

Nesting is capped at MAX_DEPTH containers, on save and on load alike, so that what save
writes loads, and a hostile file's depth is a clear error instead of a RecursionError."""
import collections
import json
import math

import numpy as np

from ._tensor import Tensor

TREE_KEY = "fusionflow.tree"
MAX_DEPTH = 100  # containers; Python's recursion (1000 frames) bounds both directions


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
        if len(path) > MAX_DEPTH:  # also what a container that holds itself reaches
            raise ValueError("save: the object is nested deeper than %d containers (at %r...); fusionflow.load "
                             "refuses deeper files" % (MAX_DEPTH, ".".join(path[:8])))
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
        if isinstance(x, tuple) and (type(x) is tuple or type(x) is _Size()):  # a shape: saved as its tuple
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


def _Size():
    from ._shape import Size
    return Size


def encode(obj):
    """(names, tensors, tree JSON or None): None when obj is a flat dict str -> Tensor, which
    is written as a plain safetensors file, readable by any safetensors reader."""
    if isinstance(obj, dict) and all(isinstance(k, str) and isinstance(v, Tensor) for k, v in obj.items()):
        return list(obj.keys()), list(obj.values()), None
    e = _Encoder()
    tree = e.node(obj, [])
    return e.names, e.tensors, json.dumps(tree, separators=(",", ":"))


def decode(text, tensors, where="the file"):
    """The nesting that encode wrote; a malformed tree raises load's MalformedFileError
    naming `where` and what is wrong."""
    from ._io import malformed
    try:
        tree = json.loads(text)
    except RecursionError:
        raise malformed(where, TREE_KEY, "nested too deeply for the JSON reader") from None
    except ValueError as e:  # JSONDecodeError, and integers too long to convert
        raise malformed(where, TREE_KEY, "not JSON (%s)" % e) from None
    try:
        return _Decoder(tensors, where).node(tree, 0)
    except RecursionError:  # a safety net: MAX_DEPTH should stop it first
        raise malformed(where, TREE_KEY, "nested too deeply") from None


def _short(x):
    r = repr(x)
    return r if len(r) <= 60 else r[:57] + "..."


class _Decoder:
    def __init__(self, tensors, where):
        self.tensors, self.where = tensors, where

    def bad(self, why):
        from ._io import malformed
        return malformed(self.where, TREE_KEY, why)

    def node(self, x, depth):
        if depth > MAX_DEPTH:
            raise self.bad("nested deeper than %d containers" % MAX_DEPTH)
        if isinstance(x, list):  # never written bare; JSON arrays only inside our objects
            raise self.bad("a bare list")
        if not isinstance(x, dict):
            return x
        if len(x) != 1:
            raise self.bad("a node with keys %s (one of T, F, L, U, D expected)" % _short(sorted(x)))
        (tag, v), = x.items()
        if tag == "T":
            if not isinstance(v, str) or v not in self.tensors:
                raise self.bad("it names tensor %s, which the file does not hold" % _short(v))
            return self.tensors[v]
        if tag == "F":
            if v not in ("nan", "inf", "-inf"):
                raise self.bad("float node %s is not 'nan', 'inf' or '-inf'" % _short(v))
            return float(v)
        if tag not in ("L", "U", "D"):
            raise self.bad("unknown node %s" % _short(tag))
        if not isinstance(v, list):
            raise self.bad("a %s node holds %s, not a list" % (tag, _short(v)))
        if tag == "L":
            return [self.node(c, depth + 1) for c in v]
        if tag == "U":
            return tuple(self.node(c, depth + 1) for c in v)
        return self.dict(v, depth)

    def dict(self, pairs, depth):
        out = collections.OrderedDict()
        for kv in pairs:
            if not (isinstance(kv, list) and len(kv) == 2):
                raise self.bad("a D entry %s is not a [key, value] pair" % _short(kv))
            k = _key(self.node(kv[0], depth + 1))
            try:
                hash(k)
            except TypeError:
                raise self.bad("a dict key %s is not hashable" % _short(k)) from None
            out[k] = self.node(kv[1], depth + 1)
        return out


def _key(k):
    return tuple(k) if isinstance(k, list) else k
