/* TensorBase: the C part of fusionflow.Tensor. It holds the C reference (released when the
 * object dies, with no Python __del__ to run) and answers the queries asked in every
 * Python loop (shape, size, ndim, dtype) without a ctypes call. The Python class Tensor
 * subclasses it and keeps everything else. */
#include "ffext.h"

static void tensor_dealloc(PyObject *self)
{
    ff_tensor *p = ffx_ptr(self);
    ((ffx_tensor *)self)->ptr = NULL;
    if (p)
        ffx.ff_tensor_release(p);
    Py_TYPE(self)->tp_free(self);
}

/* TensorBase.__new__(cls, *args, **kwargs): an empty handle (Tensor.__init__ or wrap()
 * sets the pointer), so that object.__new__'s replacement takes the same arguments */
static PyObject *tensor_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *o = type->tp_alloc(type, 0);
    if (o)
        ((ffx_tensor *)o)->ptr = NULL;
    return o;
}

/* _ptr: the C pointer as the int ctypes passes (None for NULL). Setting it does not
 * release the old reference: Python code that swaps pointers hands them over itself. */
static PyObject *get_ptr(PyObject *self, void *closure)
{
    ff_tensor *p = ffx_ptr(self);
    if (!p)
        Py_RETURN_NONE;
    return PyLong_FromVoidPtr(p);
}

static int set_ptr(PyObject *self, PyObject *value, void *closure)
{
    if (!value || value == Py_None) {
        ((ffx_tensor *)self)->ptr = NULL;
        return 0;
    }
    void *p = PyLong_AsVoidPtr(value);
    if (!p && PyErr_Occurred())
        return -1;
    ((ffx_tensor *)self)->ptr = p;
    return 0;
}

static int check_live(PyObject *self)
{
    if (ffx_ptr(self))
        return 0;
    PyErr_SetString(PyExc_RuntimeError, "this Tensor holds no C tensor (it was never initialised)");
    return -1;
}

PyObject *ffx_shape_of(const ff_tensor *t)
{
    int n = ffx.ff_tensor_ndim(t);
    const int64_t *s = ffx.ff_tensor_shape(t);
    PyObject *size = ffx_size_cls->tp_alloc(ffx_size_cls, n); /* a tuple subclass: as tuple.__new__ */
    if (!size)
        return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *v = PyLong_FromLongLong(s[i]);
        if (!v) {
            Py_DECREF(size);
            return NULL;
        }
        PyTuple_SET_ITEM(size, i, v);
    }
    return size;
}

static PyObject *get_shape(PyObject *self, void *closure)
{
    return check_live(self) ? NULL : ffx_shape_of(ffx_ptr(self));
}

static PyObject *get_ndim(PyObject *self, void *closure)
{
    return check_live(self) ? NULL : PyLong_FromLong(ffx.ff_tensor_ndim(ffx_ptr(self)));
}

static PyObject *get_dtype(PyObject *self, void *closure)
{
    if (check_live(self))
        return NULL;
    int code = (int)ffx.ff_tensor_dtype(ffx_ptr(self));
    if (code < 0 || code >= FF_DTYPE_COUNT) {
        PyErr_Format(PyExc_RuntimeError, "tensor of unknown dtype code %d", code);
        return NULL;
    }
    Py_INCREF(ffx_dtypes[code]);
    return ffx_dtypes[code];
}

static PyObject *tensor_dim(PyObject *self, PyObject *unused) { return get_ndim(self, NULL); }

static PyObject *tensor_numel(PyObject *self, PyObject *unused)
{
    return check_live(self) ? NULL : PyLong_FromLongLong(ffx.ff_tensor_numel(ffx_ptr(self)));
}

/* size() or size(dim) with dim an int: torch's IndexError for a dim out of range;
 * anything else (a name, a keyword) is the Python method's */
static PyObject *tensor_size(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (check_live(self))
        return NULL;
    if (kwnames || nargs > 1 || (nargs == 1 && args[0] != Py_None && !PyLong_CheckExact(args[0])))
        return ffx_fallback(FFX_FB_SIZE, self, args, nargs, kwnames);
    const ff_tensor *t = ffx_ptr(self);
    if (nargs == 0 || args[0] == Py_None)
        return ffx_shape_of(t);
    long long d = PyLong_AsLongLong(args[0]);
    if (d == -1 && PyErr_Occurred())
        return NULL;
    int n = ffx.ff_tensor_ndim(t);
    int lo = n ? -n : -1, hi = n ? n - 1 : 0;
    if (d < lo || d > hi) {
        PyErr_Format(PyExc_IndexError, "Dimension out of range (expected to be in range of [%d, %d], but got %lld)",
                     lo, hi, d);
        return NULL;
    }
    if (n == 0) { /* torch: a 0-d tensor's size(0) or size(-1) is out of range as well */
        PyErr_Format(PyExc_IndexError, "Dimension specified as %lld but tensor has no dimensions", d);
        return NULL;
    }
    return PyLong_FromLongLong(ffx.ff_tensor_shape(t)[d < 0 ? d + n : d]);
}

PyObject *ffx_view(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);    /* ffext_ops.c */
PyObject *ffx_reshape(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames); /* ffext_ops.c */
extern PyMethodDef ffx_unary_methods[]; /* ffext_ops.c */

#define FASTCALL_KW(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS

static PyMethodDef tensor_methods[] = {
    {"dim", tensor_dim, METH_NOARGS, "the number of dimensions"},
    {"numel", tensor_numel, METH_NOARGS, "the number of elements"},
    {"nelement", tensor_numel, METH_NOARGS, "the number of elements"},
    {"size", FASTCALL_KW(tensor_size), "size(dim=None): the shape, or one of its sizes"},
    {"view", FASTCALL_KW(ffx_view), "view(*shape): a view of another shape"},
    {"reshape", FASTCALL_KW(ffx_reshape), "reshape(*shape): a view where one exists, else a copy"},
    {"item", ffx_item, METH_NOARGS, "the one element as a Python number"},
    {"tolist", ffx_tolist, METH_NOARGS, "the values as nested lists"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef tensor_getset[] = {
    {"_ptr", get_ptr, set_ptr, "the ff_tensor * as an int (ctypes' c_void_p)", NULL},
    {"shape", get_shape, NULL, "the shape, a fusionflow.Size", NULL},
    {"ndim", get_ndim, NULL, "the number of dimensions", NULL},
    {"dtype", get_dtype, NULL, "the dtype, a fusionflow.dtype", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMappingMethods tensor_mapping = {NULL, ffx_getitem, ffx_setitem};

PyTypeObject ffx_tensor_base_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fusionflow._ffext.TensorBase",
    .tp_basicsize = sizeof(ffx_tensor),
    .tp_dealloc = tensor_dealloc,
    .tp_as_number = &ffx_number_methods,
    .tp_as_mapping = &tensor_mapping,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The C part of fusionflow.Tensor: the C reference and the hottest queries.",
    .tp_methods = tensor_methods,
    .tp_getset = tensor_getset,
    .tp_new = tensor_new,
};

/* the unary methods join the type's dict after PyType_Ready (ffext_module.c calls this) */
int ffx_tensor_add_unary_methods(void)
{
    for (PyMethodDef *d = ffx_unary_methods; d->ml_name; d++) {
        PyObject *descr = PyDescr_NewMethod(&ffx_tensor_base_type, d);
        if (!descr || PyDict_SetItemString(ffx_tensor_base_type.tp_dict, d->ml_name, descr) < 0) {
            Py_XDECREF(descr);
            return -1;
        }
        Py_DECREF(descr);
    }
    PyType_Modified(&ffx_tensor_base_type);
    return 0;
}
