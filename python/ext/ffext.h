/* fusionflow._ffext: the hottest entry points of the Python front end in C (issue 49).
 *
 * The pure-ctypes package is complete on its own; this module only makes it faster. It
 * never links libfusionflow: bind() looks every function up in the dlopen handle of the
 * copy ctypes loaded, so there is one library and one copy of its state (errors, grad
 * mode, backends). Each fast path either does exactly what the Python method does or
 * declines and calls that Python method (the "fallback"), so behaviour is defined once,
 * in Python, and the C side covers only the common cases.
 */
#ifndef FFEXT_H
#define FFEXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ff/ff.h"

/* every C function the module calls: looked up by name at bind() */
#define FFX_FUNCTIONS(X)                                                                       \
    X(ff_tensor_release) X(ff_tensor_ndim) X(ff_tensor_shape) X(ff_tensor_numel)               \
    X(ff_tensor_dtype) X(ff_tensor_backend) X(ff_tensor_to_host) X(ff_tensor_item)             \
    X(ff_tensor_item_i64) X(ff_binary) X(ff_binary_number) X(ff_rbinary_number) X(ff_unary)   \
    X(ff_neg) X(ff_matmul) X(ff_slice) X(ff_select) X(ff_unsqueeze) X(ff_index) X(ff_copy_)    \
    X(ff_reshape) X(ff_reshape_view) X(ff_from_data_on) X(ff_astype) X(ff_full_on)             \
    X(ff_concat) X(ff_from_dlpack) X(ff_backend_default) X(ff_number_tensor_on)             \
    X(ff_grad_enabled) X(ff_set_grad_enabled)

struct ffx_lib {
#define FFX_FIELD(name) __typeof__(name) *name;
    FFX_FUNCTIONS(FFX_FIELD)
#undef FFX_FIELD
};
extern struct ffx_lib ffx;

/* the Python side's objects, given to bind() */
extern PyTypeObject *ffx_tensor_cls; /* fusionflow.Tensor (a subclass of TensorBase) */
extern PyTypeObject *ffx_size_cls;   /* fusionflow.Size (a tuple subclass) */
extern PyObject *ffx_dtypes[FF_DTYPE_COUNT];

/* the Python methods a fast path hands the cases it does not cover to */
enum ffx_fallback {
    FFX_FB_GETITEM, FFX_FB_SETITEM, FFX_FB_SIZE, FFX_FB_VIEW, FFX_FB_RESHAPE, FFX_FB_ITEM,
    FFX_FB_TOLIST, FFX_FB_ADD, FFX_FB_RADD, FFX_FB_SUB, FFX_FB_RSUB, FFX_FB_MUL, FFX_FB_RMUL,
    FFX_FB_TRUEDIV, FFX_FB_RTRUEDIV, FFX_FB_MATMUL, FFX_FB_RMATMUL, FFX_FB_COUNT
};
extern PyObject *ffx_fallbacks[FFX_FB_COUNT];
extern const char *const ffx_fallback_names[FFX_FB_COUNT];

typedef struct {
    PyObject_HEAD
    ff_tensor *ptr; /* one C reference, owned; NULL only before __init__ has set it */
} ffx_tensor;

extern PyTypeObject ffx_tensor_base_type;
extern PyTypeObject ffx_grad_mode_type; /* ffext_grad_mode.c */

static inline int ffx_is_tensor(PyObject *o) { return PyObject_TypeCheck(o, &ffx_tensor_base_type); }
static inline ff_tensor *ffx_ptr(PyObject *o) { return ((ffx_tensor *)o)->ptr; }

/* a new fusionflow.Tensor owning p; p NULL raises the library's error */
PyObject *ffx_wrap(ff_tensor *p);
/* raises the library's last error as the Python side does (FusionFlowError and kin) */
PyObject *ffx_raise_error(void);
/* self.<method>(*args) in Python: the fallback of a fast path */
PyObject *ffx_fallback(enum ffx_fallback which, PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                       PyObject *kwnames);
/* the ff tensor's (live) shape as a fusionflow.Size */
PyObject *ffx_shape_of(const ff_tensor *t);

/* a Python bool, int or float as an ff_number: 1 made, 0 not one (or an int past int64) */
int ffx_as_number(PyObject *o, ff_number *n);                           /* ffext_ops.c */

/* tp slots and methods defined by the files beside this one */
PyObject *ffx_getitem(PyObject *self, PyObject *key);                  /* ffext_index.c */
int ffx_setitem(PyObject *self, PyObject *key, PyObject *value);        /* ffext_index.c */
PyObject *ffx_item(PyObject *self, PyObject *unused);                   /* ffext_convert.c */
PyObject *ffx_tolist(PyObject *self, PyObject *unused);                 /* ffext_convert.c */
PyObject *ffx_tensor_from_list(PyObject *mod, PyObject *const *args, Py_ssize_t nargs); /* ffext_convert.c */
PyObject *ffx_from_numpy(PyObject *mod, PyObject *arr);                 /* ffext_convert.c */
extern PyNumberMethods ffx_number_methods;                              /* ffext_ops.c */
PyObject *ffx_cat(PyObject *mod, PyObject *const *args, Py_ssize_t nargs); /* ffext_ops.c */
int ffx_tensor_add_unary_methods(void);                                 /* ffext_tensor.c */

#endif
