/* The operators and methods of a training loop's inner step: + - * / @ and unary minus on
 * tensors and Python numbers, the activations that are one ff_unary call, view/reshape
 * with int sizes, and cat of a list of tensors. Each is the one C call the Python method
 * makes; other operands go to the Python method. */
#include "ffext.h"

/* a Python bool, int or float as an ff_number: 1 made, 0 not a plain number */
int ffx_as_number(PyObject *o, ff_number *n)
{
    if (PyFloat_CheckExact(o)) {
        n->kind = FF_NUMBER_FLOAT;
        n->f = PyFloat_AS_DOUBLE(o);
        n->i = 0;
        return 1;
    }
    if (PyBool_Check(o)) {
        n->kind = FF_NUMBER_BOOL;
        n->i = o == Py_True;
        n->f = (double)n->i;
        return 1;
    }
    if (PyLong_CheckExact(o)) {
        int overflow;
        n->kind = FF_NUMBER_INT;
        n->i = PyLong_AsLongLongAndOverflow(o, &overflow);
        n->f = (double)n->i;
        return !overflow; /* past int64: the Python side's OverflowError */
    }
    return 0;
}

static PyObject *binary(ff_binary_op op, PyObject *a, PyObject *b, enum ffx_fallback fwd, enum ffx_fallback rev)
{
    ff_number n;
    if (ffx_is_tensor(a) && ffx_ptr(a)) {
        if (ffx_is_tensor(b) && ffx_ptr(b))
            return ffx_wrap(ffx.ff_binary(op, ffx_ptr(a), ffx_ptr(b)));
        if (ffx_as_number(b, &n))
            return ffx_wrap(ffx.ff_binary_number(op, ffx_ptr(a), n));
        return ffx_fallback(fwd, a, &b, 1, NULL);
    }
    if (ffx_ptr(b) && ffx_as_number(a, &n))
        return ffx_wrap(ffx.ff_rbinary_number(op, n, ffx_ptr(b)));
    return ffx_fallback(rev, b, &a, 1, NULL);
}

static PyObject *nb_add(PyObject *a, PyObject *b) { return binary(FF_BINARY_ADD, a, b, FFX_FB_ADD, FFX_FB_RADD); }
static PyObject *nb_sub(PyObject *a, PyObject *b) { return binary(FF_BINARY_SUB, a, b, FFX_FB_SUB, FFX_FB_RSUB); }
static PyObject *nb_mul(PyObject *a, PyObject *b) { return binary(FF_BINARY_MUL, a, b, FFX_FB_MUL, FFX_FB_RMUL); }
static PyObject *nb_truediv(PyObject *a, PyObject *b)
{
    return binary(FF_BINARY_DIV, a, b, FFX_FB_TRUEDIV, FFX_FB_RTRUEDIV);
}

static PyObject *nb_matmul(PyObject *a, PyObject *b)
{
    if (ffx_is_tensor(a) && ffx_is_tensor(b) && ffx_ptr(a) && ffx_ptr(b))
        return ffx_wrap(ffx.ff_matmul(ffx_ptr(a), ffx_ptr(b)));
    if (ffx_is_tensor(a))
        return ffx_fallback(FFX_FB_MATMUL, a, &b, 1, NULL);
    return ffx_fallback(FFX_FB_RMATMUL, b, &a, 1, NULL);
}

static PyObject *nb_negative(PyObject *a)
{
    if (!ffx_ptr(a)) {
        PyErr_SetString(PyExc_RuntimeError, "this Tensor holds no C tensor");
        return NULL;
    }
    return ffx_wrap(ffx.ff_neg(ffx_ptr(a)));
}

PyNumberMethods ffx_number_methods = {
    .nb_add = nb_add,
    .nb_subtract = nb_sub,
    .nb_multiply = nb_mul,
    .nb_true_divide = nb_truediv,
    .nb_matrix_multiply = nb_matmul,
    .nb_negative = nb_negative,
};

/* ---- unary methods: t.relu() is ff_unary(FF_UNARY_RELU, t), as _tensor.py's _unary ---- */
#define FFX_UNARY(X) \
    X(relu, RELU) X(sigmoid, SIGMOID) X(tanh, TANH) X(exp, EXP) X(log, LOG) X(sqrt, SQRT) X(rsqrt, RSQRT) \
    X(sin, SIN) X(cos, COS) X(silu, SILU) X(abs, ABS) X(square, SQUARE)

#define FFX_UNARY_FN(name, OP)                                                    \
    static PyObject *unary_##name(PyObject *self, PyObject *unused)               \
    {                                                                             \
        if (!ffx_ptr(self)) {                                                     \
            PyErr_SetString(PyExc_RuntimeError, "this Tensor holds no C tensor"); \
            return NULL;                                                          \
        }                                                                         \
        return ffx_wrap(ffx.ff_unary(FF_UNARY_##OP, ffx_ptr(self)));              \
    }
FFX_UNARY(FFX_UNARY_FN)
#undef FFX_UNARY_FN

#define FFX_UNARY_DEF(name, OP) {#name, unary_##name, METH_NOARGS, "elementwise " #name},
PyMethodDef ffx_unary_methods[] = {FFX_UNARY(FFX_UNARY_DEF){NULL, NULL, 0, NULL}};
#undef FFX_UNARY_DEF

/* ---- view / reshape with int sizes: f(2, 3), f((2, 3)), f([2, 3]) ------------------------ */
static int int_sizes(PyObject *const *args, Py_ssize_t nargs, int64_t *shape)
{
    if (nargs == 1 && (PyTuple_Check(args[0]) || PyList_CheckExact(args[0]))) { /* a Size is a tuple */
        PyObject *seq = args[0];
        nargs = PySequence_Fast_GET_SIZE(seq);
        args = PySequence_Fast_ITEMS(seq);
    }
    if (nargs > FF_MAX_DIMS)
        return -1;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        if (!PyLong_CheckExact(args[i]))
            return -1;
        int overflow;
        shape[i] = PyLong_AsLongLongAndOverflow(args[i], &overflow);
        if (overflow)
            return -1;
    }
    return (int)nargs;
}

static PyObject *shaped(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                        __typeof__(ff_reshape) *fn, enum ffx_fallback fb)
{
    int64_t shape[FF_MAX_DIMS];
    int n = kwnames || !ffx_ptr(self) ? -1 : int_sizes(args, nargs, shape);
    if (n < 0)
        return ffx_fallback(fb, self, args, nargs, kwnames);
    return ffx_wrap(fn(ffx_ptr(self), n, shape));
}

PyObject *ffx_view(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return shaped(self, args, nargs, kwnames, ffx.ff_reshape_view, FFX_FB_VIEW);
}

PyObject *ffx_reshape(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return shaped(self, args, nargs, kwnames, ffx.ff_reshape, FFX_FB_RESHAPE);
}

/* cat(tensors, dim): a list or tuple of up to 64 tensors and an int dim; None declines */
PyObject *ffx_cat(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !(PyList_CheckExact(args[0]) || PyTuple_CheckExact(args[0])) || !PyLong_CheckExact(args[1]))
        Py_RETURN_NONE;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(args[0]);
    PyObject **items = PySequence_Fast_ITEMS(args[0]);
    ff_tensor *ts[64];
    if (n == 0 || n > 64)
        Py_RETURN_NONE;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!ffx_is_tensor(items[i]) || !ffx_ptr(items[i]))
            Py_RETURN_NONE;
        ts[i] = ffx_ptr(items[i]);
    }
    int overflow;
    long dim = PyLong_AsLongAndOverflow(args[1], &overflow);
    if (overflow || dim < -FF_MAX_DIMS - 1 || dim > FF_MAX_DIMS)
        Py_RETURN_NONE;
    return ffx_wrap(ffx.ff_concat((int)n, ts, (int)dim));
}
