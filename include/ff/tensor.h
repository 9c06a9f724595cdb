/*
 * FusionFlow user API: errors, tensors, factories, views.
 *
 * Ownership rule (one rule, everywhere): every function that returns an ff_tensor *
 * returns a new reference the caller must ff_tensor_release(); tensor arguments are
 * borrowed. On error a function returns NULL (or a non-zero ff_status) and
 * ff_last_error() tells which function failed and why. Nothing aborts.
 */
#ifndef FF_TENSOR_H
#define FF_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ff/backend_abi.h" /* ff_status, ff_dtype, FF_MAX_DIMS */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ff_tensor ff_tensor;
typedef struct ff_backend ff_backend;

/* ---- errors ------------------------------------------------------------- */
/* The last error message of the calling thread ("" if none). Valid until the next
 * failing call on this thread. */
const char *ff_last_error(void);
ff_status ff_last_status(void);
void ff_clear_error(void);
/* Records an error for this thread and returns code, for code built on FusionFlow
 * (custom modules, callbacks) that reports errors the same way the library does. */
ff_status ff_set_error(ff_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
const char *ff_status_name(ff_status s);

/* ---- dtypes ------------------------------------------------------------- */
const char *ff_dtype_name(ff_dtype t);            /* "f32", "i64", ... */
ff_status ff_dtype_from_name(const char *name, ff_dtype *out);
ff_dtype ff_dtype_promote(ff_dtype a, ff_dtype b); /* see docs/semantics.md */

/* ---- numbers: scalars that know their kind ------------------------------ */
/* A scalar operand as Python and PyTorch see it: its kind (bool, int or float), not
 * its value, decides type promotion. A number is "weak": it never widens a tensor of
 * its own category or above (i32 tensor + int -> i32, f32 tensor + float -> f32) and
 * lifts a lower one to the default dtype of its kind (int tensor * 2.0 -> f32, bool
 * tensor + 1 -> i64). Ints carry all 64 bits. */
typedef enum ff_number_kind { FF_NUMBER_BOOL = 0, FF_NUMBER_INT = 1, FF_NUMBER_FLOAT = 2 } ff_number_kind;
typedef struct ff_number {
    ff_number_kind kind;
    int64_t i; /* the value for BOOL (0/1) and INT */
    double f;  /* the value for FLOAT */
} ff_number;
static inline ff_number ff_number_float(double v) { ff_number n = {FF_NUMBER_FLOAT, 0, v}; return n; }
static inline ff_number ff_number_int(int64_t v) { ff_number n = {FF_NUMBER_INT, v, (double)v}; return n; }
static inline ff_number ff_number_bool(bool v) { ff_number n = {FF_NUMBER_BOOL, v ? 1 : 0, v ? 1.0 : 0.0}; return n; }
/* The dtype of "tensor of dtype t op number s". */
ff_dtype ff_dtype_promote_number(ff_dtype t, ff_number s);
/* The dtype of "a op b" for tensors (torch.result_type): NumPy/PyTorch promotion,
 * except that a 0-d tensor does not widen a tensor with dimensions of the same or a
 * higher category (i32[3] - i64 0-d -> i32; i32[3] * f64 0-d -> f64, its category
 * being higher). */
ff_dtype ff_result_type(const ff_tensor *a, const ff_tensor *b);

/* ---- lifecycle ---------------------------------------------------------- */
ff_tensor *ff_tensor_retain(ff_tensor *t); /* returns t; NULL-safe */
void ff_tensor_release(ff_tensor *t);      /* NULL-safe */

/* ---- queries ------------------------------------------------------------ */
int ff_tensor_ndim(const ff_tensor *t);
int64_t ff_tensor_dim(const ff_tensor *t, int axis); /* negative axis counts from the end */
const int64_t *ff_tensor_shape(const ff_tensor *t);
const int64_t *ff_tensor_strides(const ff_tensor *t); /* in elements */
int64_t ff_tensor_offset(const ff_tensor *t);          /* in elements */
/* The version of t's storage: how many times it was written since a view or a saved
 * tensor could see it (PyTorch's _version; views share their base's). */
uint64_t ff_tensor_version(const ff_tensor *t);
int64_t ff_tensor_numel(const ff_tensor *t);
ff_dtype ff_tensor_dtype(const ff_tensor *t);
ff_backend *ff_tensor_backend(const ff_tensor *t);
bool ff_tensor_is_contiguous(const ff_tensor *t);
/* True if both tensors view the same storage buffer. */
bool ff_tensor_shares_storage(const ff_tensor *a, const ff_tensor *b);
/* Host address of the first element for host-memory backends, else NULL. */
void *ff_tensor_data_ptr(const ff_tensor *t);

/* ---- factories (on the default backend unless _on) ---------------------- */
ff_tensor *ff_empty(int ndim, const int64_t *shape, ff_dtype dtype);
ff_tensor *ff_zeros(int ndim, const int64_t *shape, ff_dtype dtype);
ff_tensor *ff_ones(int ndim, const int64_t *shape, ff_dtype dtype);
ff_tensor *ff_full(int ndim, const int64_t *shape, ff_dtype dtype, double value);
ff_tensor *ff_scalar_tensor(double value, ff_dtype dtype); /* 0-d */
/* A 0-d tensor holding number n converted to dtype (all 64 bits of an int survive
 * into i64; NaN into bool is true); on be, or the default backend when be is NULL. */
ff_tensor *ff_number_tensor_on(ff_backend *be, ff_number n, ff_dtype dtype);
ff_tensor *ff_empty_on(ff_backend *be, int ndim, const int64_t *shape, ff_dtype dtype);
ff_tensor *ff_full_on(ff_backend *be, int ndim, const int64_t *shape, ff_dtype dtype, double value);
/* Copies nbytes = numel * dtype size from host memory (row-major). */
ff_tensor *ff_from_data(const void *data, int ndim, const int64_t *shape, ff_dtype dtype);
ff_tensor *ff_from_data_on(ff_backend *be, const void *data, int ndim, const int64_t *shape,
                           ff_dtype dtype);
/* Same shape/dtype/backend as t. */
ff_tensor *ff_empty_like(const ff_tensor *t);
ff_tensor *ff_zeros_like(const ff_tensor *t);
ff_tensor *ff_ones_like(const ff_tensor *t);
ff_tensor *ff_full_like(const ff_tensor *t, double value);

/* Copies the tensor's elements, row-major, into host memory of nbytes
 * (must equal numel * dtype size). Works for any strides. */
ff_status ff_tensor_to_host(const ff_tensor *t, void *dst, size_t nbytes);
/* Reads one element (any dtype) as double / int64; idx has ndim entries. */
ff_status ff_tensor_get(const ff_tensor *t, const int64_t *idx, double *out);
ff_status ff_tensor_item(const ff_tensor *t, double *out); /* numel must be 1 */
ff_status ff_tensor_item_i64(const ff_tensor *t, int64_t *out);

/* ---- views: share storage, never copy ----------------------------------- */
/* Differentiable (gradients flow through views). Negative axes count from the end. */
ff_tensor *ff_reshape(const ff_tensor *t, int ndim, const int64_t *shape);    /* one -1 allowed; copies only if no view is possible */
ff_tensor *ff_reshape_view(const ff_tensor *t, int ndim, const int64_t *shape); /* reshape that errors instead of copying */
ff_tensor *ff_permute(const ff_tensor *t, const int *perm);                   /* perm has ndim entries */
ff_tensor *ff_transpose(const ff_tensor *t, int axis0, int axis1);
ff_tensor *ff_mT(const ff_tensor *t);                                         /* swap the last two dims */
ff_tensor *ff_slice(const ff_tensor *t, int axis, int64_t start, int64_t stop, int64_t step); /* Python rules; step > 0 */
ff_tensor *ff_select(const ff_tensor *t, int axis, int64_t index);           /* drops axis */
ff_tensor *ff_narrow(const ff_tensor *t, int axis, int64_t start, int64_t length);
ff_tensor *ff_expand(const ff_tensor *t, int ndim, const int64_t *shape);     /* -1 keeps a dim */
ff_tensor *ff_broadcast_to(const ff_tensor *t, int ndim, const int64_t *shape);
ff_tensor *ff_squeeze(const ff_tensor *t, int axis);                          /* axis must have size 1 */
ff_tensor *ff_squeeze_all(const ff_tensor *t);
ff_tensor *ff_unsqueeze(const ff_tensor *t, int axis);
ff_tensor *ff_flatten(const ff_tensor *t, int start_axis, int end_axis);
/* Returns t itself (retained) if already contiguous, else a contiguous copy. */
ff_tensor *ff_contiguous(const ff_tensor *t);

/* ---- seeding ------------------------------------------------------------ */
/* Global generator state used by ops without an explicit seed (rand, dropout, init). */
void ff_manual_seed(uint64_t seed);
/* Reserves n counters from the global generator: returns the seed and the counter base. */
void ff_random_next(uint64_t n, uint64_t *seed, uint64_t *counter_base);

#ifdef __cplusplus
}
#endif
#endif /* FF_TENSOR_H */
