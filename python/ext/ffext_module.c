/* fusionflow._ffext: bind() to the loaded library and the Python side's objects, wrap(),
 * errors and fallbacks. The Tensor base type is in ffext_tensor.c. */
#include "ffext.h"

#include <dlfcn.h>

struct ffx_lib ffx;
PyTypeObject *ffx_tensor_cls;
PyTypeObject *ffx_size_cls;
PyObject *ffx_dtypes[FF_DTYPE_COUNT];
PyObject *ffx_fallbacks[FFX_FB_COUNT];
static PyObject *error_fn; /* fusionflow._lib.error: the exception for the last C error */

const char *const ffx_fallback_names[FFX_FB_COUNT] = {
    "__getitem__", "__setitem__", "size", "view", "reshape", "item", "tolist", "__add__", "__radd__",
    "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__", "__matmul__", "__rmatmul__"};

PyObject *ffx_raise_error(void)
{
    PyObject *exc = PyObject_CallNoArgs(error_fn);
    if (exc) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

PyObject *ffx_wrap(ff_tensor *p)
{
    if (!p)
        return ffx_raise_error();
    PyObject *o = ffx_tensor_cls->tp_alloc(ffx_tensor_cls, 0);
    if (!o) {
        ffx.ff_tensor_release(p);
        return NULL;
    }
    ((ffx_tensor *)o)->ptr = p;
    return o;
}

PyObject *ffx_fallback(enum ffx_fallback which, PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                       PyObject *kwnames)
{
    PyObject *stack[9];
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs + nkw + 1 > (Py_ssize_t)(sizeof stack / sizeof stack[0])) { /* rare: the generic call */
        PyObject *tuple = PyTuple_New(nargs + 1), *kw = NULL, *r = NULL;
        if (!tuple)
            return NULL;
        Py_INCREF(self);
        PyTuple_SET_ITEM(tuple, 0, self);
        for (Py_ssize_t i = 0; i < nargs; i++) {
            Py_INCREF(args[i]);
            PyTuple_SET_ITEM(tuple, i + 1, args[i]);
        }
        if (nkw && !(kw = PyDict_New()))
            goto out;
        for (Py_ssize_t i = 0; i < nkw; i++)
            if (PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0)
                goto out;
        r = PyObject_Call(ffx_fallbacks[which], tuple, kw);
    out:
        Py_DECREF(tuple);
        Py_XDECREF(kw);
        return r;
    }
    stack[0] = self;
    for (Py_ssize_t i = 0; i < nargs + nkw; i++)
        stack[i + 1] = args[i];
    return PyObject_Vectorcall(ffx_fallbacks[which], stack, (size_t)(nargs + 1), kwnames);
}

/* bind_library(handle, error): handle is the dlopen handle of the library ctypes loaded
 * (ctypes.CDLL._handle), error the Python function that makes the exception for the last
 * C error. First, before any Tensor exists: a Tensor's dealloc releases through it. */
static PyObject *ffx_bind_library(PyObject *mod, PyObject *args)
{
    unsigned long long handle;
    PyObject *err;
    if (!PyArg_ParseTuple(args, "KO:bind_library", &handle, &err))
        return NULL;
    void *h = (void *)(uintptr_t)handle;
    struct ffx_lib lib;
#define FFX_LOOKUP(name)                                                                                    \
    if (!(lib.name = (__typeof__(name) *)dlsym(h, #name))) {                                                \
        PyErr_Format(PyExc_ImportError, "_ffext.bind_library(): the library has no %s (an older one?)",    \
                     #name);                                                                                 \
        return NULL;                                                                                         \
    }
    FFX_FUNCTIONS(FFX_LOOKUP)
#undef FFX_LOOKUP
    ffx = lib;
    Py_INCREF(err);
    Py_XSETREF(error_fn, err);
    Py_RETURN_NONE;
}

/* bind_tensor(Tensor): the class wrap() makes, right after it is defined */
static PyObject *ffx_bind_tensor(PyObject *mod, PyObject *cls)
{
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &ffx_tensor_base_type)) {
        PyErr_SetString(PyExc_TypeError, "_ffext.bind_tensor(): Tensor must subclass TensorBase");
        return NULL;
    }
    Py_INCREF(cls);
    Py_XSETREF(ffx_tensor_cls, (PyTypeObject *)cls);
    Py_RETURN_NONE;
}

/* bind_rest(Size, dtypes, fallbacks): once the package is imported, before the fast paths
 * take over: dtypes are the DType objects by code, fallbacks the Python methods (by name)
 * the fast paths hand other cases to. */
static PyObject *ffx_bind_rest(PyObject *mod, PyObject *args)
{
    PyObject *size_cls, *dtypes, *fallbacks;
    if (!PyArg_ParseTuple(args, "O!O!O!:bind_rest", &PyType_Type, &size_cls, &PyList_Type, &dtypes, &PyDict_Type,
                          &fallbacks))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)size_cls, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "_ffext.bind_rest(): Size must subclass tuple");
        return NULL;
    }
    if (PyList_GET_SIZE(dtypes) != FF_DTYPE_COUNT) {
        PyErr_Format(PyExc_ValueError, "_ffext.bind_rest(): %d dtypes given, the library has %d",
                     (int)PyList_GET_SIZE(dtypes), FF_DTYPE_COUNT);
        return NULL;
    }
    PyObject *fb[FFX_FB_COUNT];
    for (int i = 0; i < FFX_FB_COUNT; i++)
        if (!(fb[i] = PyDict_GetItemString(fallbacks, ffx_fallback_names[i]))) {
            PyErr_Format(PyExc_KeyError, "_ffext.bind_rest(): no fallback for %s", ffx_fallback_names[i]);
            return NULL;
        }
    for (int i = 0; i < FFX_FB_COUNT; i++) {
        Py_INCREF(fb[i]);
        Py_XSETREF(ffx_fallbacks[i], fb[i]);
    }
    for (int i = 0; i < FF_DTYPE_COUNT; i++) {
        Py_INCREF(PyList_GET_ITEM(dtypes, i));
        Py_XSETREF(ffx_dtypes[i], PyList_GET_ITEM(dtypes, i));
    }
    Py_INCREF(size_cls);
    Py_XSETREF(ffx_size_cls, (PyTypeObject *)size_cls);
    Py_RETURN_NONE;
}

/* wrap(ptr[, cls]): the Python wrap(), a Tensor (or cls) owning the new C reference ptr */
static PyObject *ffx_wrap_py(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "wrap(ptr, cls=None)");
        return NULL;
    }
    if (args[0] == Py_None)
        return ffx_raise_error();
    void *p = PyLong_AsVoidPtr(args[0]);
    if (!p)
        return PyErr_Occurred() ? NULL : ffx_raise_error();
    PyTypeObject *cls = ffx_tensor_cls;
    if (nargs == 2 && args[1] != Py_None) {
        if (!PyType_Check(args[1]) || !PyType_IsSubtype((PyTypeObject *)args[1], ffx_tensor_cls)) {
            PyErr_SetString(PyExc_TypeError, "wrap(): cls must be a Tensor subclass");
            return NULL;
        }
        cls = (PyTypeObject *)args[1];
    }
    PyObject *o = cls->tp_alloc(cls, 0);
    if (!o) {
        ffx.ff_tensor_release(p); /* wrap() owns the reference, even when it fails */
        return NULL;
    }
    ((ffx_tensor *)o)->ptr = p;
    return o;
}

static PyMethodDef module_methods[] = {
    {"bind_library", ffx_bind_library, METH_VARARGS, "bind_library(handle, error)"},
    {"bind_tensor", ffx_bind_tensor, METH_O, "bind_tensor(Tensor)"},
    {"bind_rest", ffx_bind_rest, METH_VARARGS, "bind_rest(Size, dtypes, fallbacks)"},
    {"wrap", (PyCFunction)(void (*)(void))ffx_wrap_py, METH_FASTCALL, "wrap(ptr, cls=None): a Tensor owning ptr"},
    {"tensor_from_list", (PyCFunction)(void (*)(void))ffx_tensor_from_list, METH_FASTCALL,
     "tensor_from_list(data, dtype_code, backend): a new tensor of nested lists of numbers, or None"},
    {"from_numpy", ffx_from_numpy, METH_O, "from_numpy(arr): a tensor sharing a NumPy array (DLPack)"},
    {"cat", (PyCFunction)(void (*)(void))ffx_cat, METH_FASTCALL, "cat(tensors, dim): or None to decline"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "fusionflow._ffext",
                                        "The Python front end's hot paths in C (see python/ext/ffext.h).", -1,
                                        module_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__ffext(void)
{
    if (PyType_Ready(&ffx_tensor_base_type) < 0 || ffx_tensor_add_unary_methods() < 0 ||
        PyType_Ready(&ffx_grad_mode_type) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    Py_INCREF(&ffx_tensor_base_type);
    if (PyModule_AddObject(m, "TensorBase", (PyObject *)&ffx_tensor_base_type) < 0) {
        Py_DECREF(&ffx_tensor_base_type);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&ffx_grad_mode_type);
    if (PyModule_AddObject(m, "GradModeBase", (PyObject *)&ffx_grad_mode_type) < 0) {
        Py_DECREF(&ffx_grad_mode_type);
        Py_DECREF(m);
        return NULL;
    }
    PyObject *names = PyTuple_New(FFX_FB_COUNT);
    if (!names) {
        Py_DECREF(m);
        return NULL;
    }
    for (int i = 0; i < FFX_FB_COUNT; i++)
        PyTuple_SET_ITEM(names, i, PyUnicode_FromString(ffx_fallback_names[i]));
    if (PyModule_AddObject(m, "FALLBACKS", names) < 0) {
        Py_DECREF(names);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
