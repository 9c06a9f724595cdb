/* Values in and out of Python without NumPy in between: item(), tolist(), tensor(list)
 * and from_numpy. Dtypes Python has no exact scalar for (the halves, complex) go to the
 * Python methods. */
#include "ffext.h"

#include <stdlib.h>
#include <string.h>

#include <dlpack/dlpack.h>

static size_t plain_itemsize(ff_dtype dt)
{
    switch (dt) {
    case FF_F64: case FF_I64: return 8;
    case FF_F32: case FF_I32: return 4;
    case FF_I16: return 2;
    case FF_U8: case FF_BOOL: case FF_I8: return 1;
    default: return 0; /* halves, complex: the Python side */
    }
}

static PyObject *scalar_at(ff_dtype dt, const char *p)
{
    switch (dt) {
    case FF_F64: { double v; memcpy(&v, p, 8); return PyFloat_FromDouble(v); }
    case FF_F32: { float v; memcpy(&v, p, 4); return PyFloat_FromDouble(v); }
    case FF_I64: { int64_t v; memcpy(&v, p, 8); return PyLong_FromLongLong(v); }
    case FF_I32: { int32_t v; memcpy(&v, p, 4); return PyLong_FromLong(v); }
    case FF_I16: { int16_t v; memcpy(&v, p, 2); return PyLong_FromLong(v); }
    case FF_I8: return PyLong_FromLong(*(const int8_t *)p);
    case FF_U8: return PyLong_FromLong(*(const uint8_t *)p);
    case FF_BOOL: return PyBool_FromLong(*p != 0);
    default: return NULL;
    }
}

PyObject *ffx_item(PyObject *self, PyObject *unused)
{
    const ff_tensor *t = ffx_ptr(self);
    if (!t)
        return ffx_fallback(FFX_FB_ITEM, self, NULL, 0, NULL);
    ff_dtype dt = ffx.ff_tensor_dtype(t);
    if (dt == FF_C64 || dt == FF_C128)
        return ffx_fallback(FFX_FB_ITEM, self, NULL, 0, NULL);
    if (dt == FF_I64 || dt == FF_I32 || dt == FF_U8 || dt == FF_I8 || dt == FF_I16) { /* exact through int64 */
        int64_t v;
        if (ffx.ff_tensor_item_i64(t, &v) != FF_OK)
            return ffx_raise_error();
        return PyLong_FromLongLong(v);
    }
    double v;
    if (ffx.ff_tensor_item(t, &v) != FF_OK)
        return ffx_raise_error();
    return dt == FF_BOOL ? PyBool_FromLong(v != 0) : PyFloat_FromDouble(v);
}

/* the nested lists of dims [d, ndim) of the row-major values at *p (advanced past them) */
static PyObject *nested(ff_dtype dt, size_t isz, const int64_t *shape, int d, int ndim, const char **p)
{
    if (d == ndim) {
        PyObject *v = scalar_at(dt, *p);
        *p += isz;
        return v;
    }
    PyObject *list = PyList_New((Py_ssize_t)shape[d]);
    if (!list)
        return NULL;
    for (int64_t i = 0; i < shape[d]; i++) {
        PyObject *v = nested(dt, isz, shape, d + 1, ndim, p);
        if (!v) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, v);
    }
    return list;
}

PyObject *ffx_tolist(PyObject *self, PyObject *unused)
{
    const ff_tensor *t = ffx_ptr(self);
    size_t isz = t ? plain_itemsize(ffx.ff_tensor_dtype(t)) : 0;
    if (!isz)
        return ffx_fallback(FFX_FB_TOLIST, self, NULL, 0, NULL);
    ff_dtype dt = ffx.ff_tensor_dtype(t);
    int ndim = ffx.ff_tensor_ndim(t);
    int64_t shape[FF_MAX_DIMS];
    memcpy(shape, ffx.ff_tensor_shape(t), (size_t)ndim * sizeof *shape);
    size_t nbytes = (size_t)ffx.ff_tensor_numel(t) * isz;
    char small[256];
    char *buf = nbytes <= sizeof small ? small : malloc(nbytes);
    if (!buf)
        return PyErr_NoMemory();
    PyObject *r = NULL;
    if (ffx.ff_tensor_to_host(t, buf, nbytes) != FF_OK)
        ffx_raise_error();
    else {
        const char *p = buf;
        r = nested(dt, isz, shape, 0, ndim, &p);
    }
    if (buf != small)
        free(buf);
    return r;
}

/* ---- tensor(nested lists of numbers) ---------------------------------------------------- */
enum { KIND_BOOL = 1, KIND_INT = 2, KIND_FLOAT = 3 };

typedef struct {
    int ndim;
    int64_t shape[FF_MAX_DIMS];
    int kind;      /* the widest kind seen */
    size_t n, cap; /* values written, room */
    double *f;     /* every value as a double (the float kind's data) */
    int64_t *i;    /* every value as an int64 (the int and bool kinds' data) */
} list_scan;

static int is_seq(PyObject *o) { return PyList_CheckExact(o) || PyTuple_CheckExact(o); }

/* the shape, from the first element at each depth; 0 declines (not a list of numbers) */
static int scan_shape(PyObject *data, list_scan *s)
{
    PyObject *o = data;
    s->ndim = 0;
    while (is_seq(o)) {
        if (s->ndim == FF_MAX_DIMS)
            return 0;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        s->shape[s->ndim++] = n;
        if (n == 0)
            break;
        o = PySequence_Fast_GET_ITEM(o, 0);
    }
    return 1;
}

/* the values of o at depth d, row-major; 0 declines (ragged, a non-number, an int past int64) */
static int scan_values(PyObject *o, int d, list_scan *s)
{
    if (d == s->ndim) {
        double f;
        int64_t i;
        if (PyFloat_CheckExact(o)) {
            f = PyFloat_AS_DOUBLE(o);
            i = 0;
            s->kind = KIND_FLOAT;
        } else if (PyBool_Check(o)) {
            i = o == Py_True;
            f = (double)i;
            if (s->kind < KIND_BOOL)
                s->kind = KIND_BOOL;
        } else if (PyLong_CheckExact(o)) {
            int overflow;
            i = PyLong_AsLongLongAndOverflow(o, &overflow);
            if (overflow)
                return 0;
            f = (double)i;
            if (s->kind < KIND_INT)
                s->kind = KIND_INT;
        } else {
            return 0;
        }
        s->f[s->n] = f;
        s->i[s->n++] = i;
        return 1;
    }
    if (!is_seq(o) || PySequence_Fast_GET_SIZE(o) != s->shape[d])
        return 0;
    for (Py_ssize_t j = 0; j < s->shape[d]; j++)
        if (!scan_values(PySequence_Fast_GET_ITEM(o, j), d + 1, s))
            return 0;
    return 1;
}

/* tensor_from_list(data, dtype_code, backend): a Tensor of data's values in dtype_code
 * (-1: torch's inference, bool < int64 < float32), on backend (an ff_backend * as an int,
 * or None for the default); None declines, and the Python tensor() takes over. */
PyObject *ffx_tensor_from_list(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "tensor_from_list(data, dtype_code, backend)");
        return NULL;
    }
    list_scan s = {0};
    int code = (int)PyLong_AsLong(args[1]);
    if (code == -1 && PyErr_Occurred())
        return NULL;
    ff_backend *be = args[2] == Py_None ? ffx.ff_backend_default() : PyLong_AsVoidPtr(args[2]);
    if (!be && PyErr_Occurred())
        return NULL;
    if (!is_seq(args[0]) || !scan_shape(args[0], &s) || code < -1 || code >= FF_DTYPE_COUNT || code == FF_C64 ||
        code == FF_C128)
        Py_RETURN_NONE;
    size_t numel = 1;
    for (int d = 0; d < s.ndim; d++)
        numel *= (size_t)s.shape[d];
    double fsmall[64];
    int64_t ismall[64];
    s.f = numel <= 64 ? fsmall : malloc(numel * sizeof *s.f);
    s.i = numel <= 64 ? ismall : malloc(numel * sizeof *s.i);
    PyObject *r = NULL;
    if (!s.f || !s.i) {
        r = PyErr_NoMemory();
        goto out;
    }
    if (!scan_values(args[0], 0, &s)) {
        r = Py_None;
        Py_INCREF(r);
        goto out;
    }
    ff_dtype want = code >= 0 ? (ff_dtype)code : s.kind == KIND_BOOL ? FF_BOOL : s.kind == KIND_INT ? FF_I64 : FF_F32;
    /* the data in the widest exact form of its kind, unless want is f32 from floats (the
     * one rounding, to nearest, is the same done here as in the core's copy) */
    ff_dtype src = s.kind == KIND_FLOAT || s.kind == 0 ? (want == FF_F32 ? FF_F32 : FF_F64) : FF_I64;
    const void *data = s.kind == KIND_FLOAT || s.kind == 0 ? (const void *)s.f : (const void *)s.i;
    if (src == FF_F32) /* in place: each float is read before it is overwritten */
        for (size_t j = 0; j < numel; j++)
            ((float *)s.f)[j] = (float)s.f[j];
    ff_tensor *t = ffx.ff_from_data_on(be, data, s.ndim, s.shape, src);
    if (t && src != want) {
        ff_tensor *c = ffx.ff_astype(t, want);
        ffx.ff_tensor_release(t);
        t = c;
    }
    r = ffx_wrap(t);
out:
    if (s.f != fsmall)
        free(s.f);
    if (s.i != ismall)
        free(s.i);
    return r;
}

/* from_numpy(arr): a Tensor sharing the memory of arr (a writable buffer: the NumPy array
 * torch.from_numpy takes), handed to ff_from_dlpack as a DLPack tensor of ours whose
 * deleter releases the buffer; None declines (read-only, a dtype or stride DLPack cannot
 * say, a foreign byte order): the Python from_numpy then copies or raises. */
typedef struct {
    DLManagedTensor m;
    Py_buffer view;
    int64_t shape[FF_MAX_DIMS], strides[FF_MAX_DIMS];
} buffer_share;

static void buffer_share_delete(DLManagedTensor *m)
{
    buffer_share *s = m->manager_ctx;
    PyGILState_STATE g = PyGILState_Ensure(); /* the last reference may die on any thread */
    PyBuffer_Release(&s->view);
    PyGILState_Release(g);
    free(s);
}

/* the DLPack type of a struct-module format character ('<' or '=' first: native only) */
static int dl_type_of(const char *fmt, Py_ssize_t itemsize, DLDataType *t)
{
    if (*fmt == '=' || *fmt == '@' || *fmt == '<')
        fmt++;
    if (!fmt[0] || fmt[1])
        return 0;
    t->lanes = 1;
    t->bits = (uint8_t)(itemsize * 8);
    switch (fmt[0]) {
    case 'e': case 'f': case 'd': t->code = kDLFloat; break;
    case 'b': case 'h': case 'i': case 'l': case 'q': t->code = kDLInt; break;
    case 'B': t->code = kDLUInt; break;
    case '?': t->code = 6; t->bits = 8; break; /* kDLBool, DLPack 0.8 */
    default: return 0;
    }
    return 1;
}

PyObject *ffx_from_numpy(PyObject *mod, PyObject *arr)
{
    buffer_share *s = calloc(1, sizeof *s);
    if (!s)
        return PyErr_NoMemory();
    if (PyObject_GetBuffer(arr, &s->view, PyBUF_RECORDS) < 0) { /* strides, format, writable */
        PyErr_Clear();
        free(s);
        Py_RETURN_NONE;
    }
    Py_buffer *v = &s->view;
    int ok = v->ndim <= FF_MAX_DIMS && v->itemsize > 0 && dl_type_of(v->format ? v->format : "B", v->itemsize,
                                                                      &s->m.dl_tensor.dtype);
    for (int d = 0; ok && d < v->ndim; d++) {
        s->shape[d] = v->shape[d];
        ok = v->strides[d] >= 0 && v->strides[d] % v->itemsize == 0;
        s->strides[d] = v->strides[d] / v->itemsize;
    }
    if (!ok) {
        PyBuffer_Release(v);
        free(s);
        Py_RETURN_NONE;
    }
    s->m.dl_tensor.data = v->buf;
    s->m.dl_tensor.device = (DLDevice){kDLCPU, 0};
    s->m.dl_tensor.ndim = v->ndim;
    s->m.dl_tensor.shape = s->shape;
    s->m.dl_tensor.strides = s->strides;
    s->m.manager_ctx = s;
    s->m.deleter = buffer_share_delete;
    ff_tensor *t = ffx.ff_from_dlpack(&s->m);
    if (!t) { /* the library did not take it: ours to free */
        PyBuffer_Release(v);
        free(s);
    }
    return ffx_wrap(t);
}
