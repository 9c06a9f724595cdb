"""The part of scipy.sparse that pygcn's utils.py uses to build its normalised adjacency
(coo_matrix, csr_matrix, eye, diags; .T, +, -, >, multiply, dot, sum, todense, tocoo, astype,
row/col/data), over a dense NumPy array: the harness's graphs have a few thousand nodes.
Duplicate COO entries are summed and tocoo() lists the nonzeros in row-major order, as SciPy's
canonical form does."""
import numpy as np


def _dense(x):
    return x.a if isinstance(x, _Matrix) else np.asarray(x)


class _Matrix:
    def __init__(self, a):
        self.a = np.asarray(a)

    shape = property(lambda self: self.a.shape)
    dtype = property(lambda self: self.a.dtype)
    T = property(lambda self: _Matrix(self.a.T))

    def __add__(self, other):
        return _Matrix(self.a + _dense(other))

    def __sub__(self, other):
        return _Matrix(self.a - _dense(other))

    def __gt__(self, other):
        return _Matrix(self.a > _dense(other))

    def multiply(self, other):
        return _Matrix(self.a * _dense(other))

    def dot(self, other):
        return _Matrix(self.a @ _dense(other))

    def sum(self, axis=None):
        return self.a.sum() if axis is None else np.asarray(self.a.sum(axis=axis, keepdims=True))

    def todense(self):
        return np.asmatrix(self.a)

    def astype(self, dtype):
        return _Matrix(self.a.astype(dtype))

    def tocoo(self):
        return self

    row = property(lambda self: np.nonzero(self.a)[0].astype(np.int32))
    col = property(lambda self: np.nonzero(self.a)[1].astype(np.int32))
    data = property(lambda self: self.a[np.nonzero(self.a)])


class _Diagonal(_Matrix):
    """diags(v): its products scale rows, without an n^3 matmul."""
    def __init__(self, v):
        self.v = np.asarray(v)
        super().__init__(np.diag(self.v))

    def dot(self, other):
        return _Matrix(self.v[:, None] * _dense(other))


def coo_matrix(arg, shape=None, dtype=None):
    if isinstance(arg, tuple):  # (data, (row, col))
        data, (row, col) = arg
        a = np.zeros(shape, dtype=dtype or np.asarray(data).dtype)
        np.add.at(a, (np.asarray(row), np.asarray(col)), data)
        return _Matrix(a)
    return _Matrix(np.array(_dense(arg), dtype=dtype))


csr_matrix = coo_matrix


def eye(n, dtype=np.float64):
    return _Matrix(np.eye(n, dtype=dtype))


def diags(v):
    return _Diagonal(v)
