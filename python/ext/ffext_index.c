/* t[key] and t[key] = v for the keys of nearly every program: ints, slices, None and
 * Ellipsis (basic indexing: a view), and one int64 or bool index tensor. Everything else,
 * and every error but the two below, goes to _indexing.py's _getitem/_setitem, which
 * defines the semantics. */
#include "ffext.h"

enum { DECLINE = 0, DONE = 1, FAILED = -1 };

static int is_basic(PyObject *k)
{
    return PyLong_CheckExact(k) || PySlice_Check(k) || k == Py_None || k == Py_Ellipsis;
}

/* The view of t that the basic key selects, in *out: a new reference, or NULL when the
 * key selects t itself (t[...], t[:]), as _indexing._index returns t then. */
static int basic_view(ff_tensor *t, PyObject *key, ff_tensor **out)
{
    PyObject *const *items = &key;
    Py_ssize_t nkeys = 1;
    if (PyTuple_CheckExact(key)) {
        items = &PyTuple_GET_ITEM(key, 0);
        nkeys = PyTuple_GET_SIZE(key);
    }
    int ndim = ffx.ff_tensor_ndim(t), nspec = 0, nell = 0;
    for (Py_ssize_t j = 0; j < nkeys; j++) {
        if (!is_basic(items[j]))
            return DECLINE;
        if (items[j] == Py_Ellipsis)
            nell++;
        else if (items[j] != Py_None)
            nspec++;
    }
    if (nell > 1 || nspec > ndim)
        return DECLINE; /* the Python side's IndexError */
    ff_tensor *cur = NULL; /* NULL: still t */
    int axis = 0;
    for (Py_ssize_t j = 0; j < nkeys; j++) {
        PyObject *k = items[j];
        const ff_tensor *src = cur ? cur : t;
        ff_tensor *next = NULL;
        if (k == Py_Ellipsis) {
            axis += ndim - nspec;
            continue;
        }
        if (k == Py_None) {
            next = ffx.ff_unsqueeze(src, axis++);
        } else if (PySlice_Check(k)) {
            Py_ssize_t start, stop, step;
            if (PySlice_Unpack(k, &start, &stop, &step) < 0)
                goto failed;
            if (step <= 0) {
                PyErr_Format(PyExc_ValueError, "slice step must be positive (got %zd)", step);
                goto failed;
            }
            PySliceObject *s = (PySliceObject *)k;
            int64_t n = ffx.ff_tensor_shape(src)[axis];
            PySlice_AdjustIndices((Py_ssize_t)n, &start, &stop, step);
            if (s->start == Py_None && s->stop == Py_None && step == 1) {
                axis++;
                continue;
            }
            next = ffx.ff_slice(src, axis++, start, stop > start ? stop : start, step);
        } else {
            int overflow;
            long long i = PyLong_AsLongLongAndOverflow(k, &overflow);
            int64_t n = ffx.ff_tensor_shape(src)[axis];
            if (overflow || i < -n || i >= n) {
                PyErr_Format(PyExc_IndexError, "index %S is out of bounds for dimension %d with size %lld", k, axis,
                             (long long)n);
                goto failed;
            }
            next = ffx.ff_select(src, axis, i < 0 ? i + n : i);
        }
        if (!next) {
            ffx_raise_error();
            goto failed;
        }
        ffx.ff_tensor_release(cur);
        cur = next;
    }
    *out = cur;
    return DONE;
failed:
    ffx.ff_tensor_release(cur);
    return FAILED;
}

/* x[idx] with idx an int64 or bool tensor on x's backend: ff_index, as _getitem */
static int tensor_key(ff_tensor *t, PyObject *key, PyObject **result)
{
    ff_tensor *k = ffx_ptr(key);
    if (!k || ffx.ff_tensor_backend(k) != ffx.ff_tensor_backend(t))
        return DECLINE;
    ff_dtype dt = ffx.ff_tensor_dtype(k);
    int tn = ffx.ff_tensor_ndim(t);
    if (!((dt == FF_I64 && tn >= 1) || (dt == FF_BOOL && ffx.ff_tensor_ndim(k) <= tn)))
        return DECLINE;
    const ff_tensor *idx[1] = {k};
    *result = ffx_wrap(ffx.ff_index(t, 1, idx));
    return *result ? DONE : FAILED;
}

PyObject *ffx_getitem(PyObject *self, PyObject *key)
{
    ff_tensor *t = ffx_ptr(self);
    if (t) {
        PyObject *r = NULL;
        int st = ffx_is_tensor(key) ? tensor_key(t, key, &r) : DECLINE;
        if (st == DONE)
            return r;
        if (st == FAILED)
            return NULL;
        ff_tensor *view;
        if (!ffx_is_tensor(key) && (st = basic_view(t, key, &view)) != DECLINE) {
            if (st == FAILED)
                return NULL;
            if (!view) {
                Py_INCREF(self);
                return self;
            }
            return ffx_wrap(view);
        }
    }
    return ffx_fallback(FFX_FB_GETITEM, self, &key, 1, NULL);
}

/* a Python number as the 0-d tensor of t's dtype that _setitem makes with full((), v) */
static ff_tensor *number_for(const ff_tensor *t, PyObject *v)
{
    ff_number n;
    if (!ffx_as_number(v, &n))
        return NULL;
    return ffx.ff_number_tensor_on(ffx.ff_tensor_backend(t), n, ffx.ff_tensor_dtype(t));
}

int ffx_setitem(PyObject *self, PyObject *key, PyObject *value)
{
    if (!value) {
        PyErr_SetString(PyExc_TypeError, "Tensor does not support item deletion (del t[...])");
        return -1;
    }
    ff_tensor *t = ffx_ptr(self);
    int simple_value = ffx_is_tensor(value) ? ffx_ptr(value) != NULL : PyBool_Check(value) ||
                                                                            PyLong_CheckExact(value) ||
                                                                            PyFloat_CheckExact(value);
    if (t && simple_value && ffx_is_tensor(value)) {
        /* a value with leading 1-sized dims is reshaped by the Python side first */
        const ff_tensor *v = ffx_ptr(value);
        simple_value = ffx.ff_tensor_ndim(v) == 0 || ffx.ff_tensor_shape(v)[0] != 1;
    }
    if (t && simple_value && !ffx_is_tensor(key)) {
        ff_tensor *view;
        int st = basic_view(t, key, &view);
        if (st == FAILED)
            return -1;
        if (st == DONE) {
            ff_tensor *num = ffx_is_tensor(value) ? NULL : number_for(t, value);
            if (!ffx_is_tensor(value) && !num) {
                ffx.ff_tensor_release(view);
                if (PyErr_Occurred())
                    return -1;
                goto fallback; /* an int past int64, or the library's error: the Python path says it */
            }
            ff_status s = ffx.ff_copy_(view ? view : t, num ? num : ffx_ptr(value));
            ffx.ff_tensor_release(num);
            ffx.ff_tensor_release(view);
            if (s != FF_OK) {
                ffx_raise_error();
                return -1;
            }
            return 0;
        }
    }
fallback:;
    PyObject *args[2] = {key, value};
    PyObject *r = ffx_fallback(FFX_FB_SETITEM, self, args, 2, NULL);
    if (!r)
        return -1;
    Py_DECREF(r);
    return 0;
}
