/* With kernel_fused.c (an eager fused program), the only place the core calls a
 * backend's compute entries. Each wrapper checks what the ABI promises the backend (one
 * backend, dtypes, resolved shapes), asks supports(), calls the entry and turns a failure
 * into an error naming the public function being served. Writing dst bumps its storage
 * version (autograd uses it to detect in-place changes to saved values). */
#include <string.h>

#include "ff_impl.h"

/* The most views one entry takes (attention's backward: 3 outputs, 7 inputs). */
#define KERNEL_MAX_VIEWS 10

ff_backend *ff_common_backend(int n, const ff_tensor *const *ts, const char *fn)
{
    ff_backend *be = NULL;
    for (int i = 0; i < n; i++) {
        if (!ts[i]) return ff_error(FF_ERR_INVALID, "%s: tensor argument %d is NULL", fn, i), NULL;
        ff_backend *b = ts[i]->storage->backend;
        if (be && b != be)
            return ff_error(FF_ERR_INVALID, "%s: tensors live on different backends ('%s' and '%s'); move one with ff_to",
                            fn, be->name, b->name), NULL;
        be = b;
    }
    return be;
}

static ff_status unsupported(ff_backend *be, const char *fn, const char *what, ff_dtype dt)
{
    return ff_error(FF_ERR_UNSUPPORTED, "%s: backend '%s' does not support %s on %s", fn, be->name, what,
                    ff_dtype_name(dt));
}

static ff_status finish(ff_status st, const ff_tensor *dst, const char *fn)
{
    if (st) FF_OBSERVE(failure, st);
    ff_storage_note_write(dst->storage);
    if (st == FF_OK) return FF_OK;
    ff_error_prefix(fn);
    return ff_error(st, "%s", ff_last_error());
}

/* finish() for an entry the kernel observer hears of: n views v over the tensors ts
 * (outputs first; p's n_dst of them, or 1). */
static ff_status finish_rec(ff_status st, const ff_tensor *dst, const char *fn, int kind, int op, int n,
                            const ff_view *v, const ff_tensor *const *ts, const ff_kernel_params *p)
{
    ff_kernel_observer *obs = ff_kernel_observing;
    if (!st && obs) {
        ff_storage *stor[KERNEL_MAX_VIEWS];
        for (int i = 0; i < n; i++) stor[i] = ts[i]->storage;
        obs->kernel(obs, kind, op, n, v, stor, p);
    }
    return finish(st, dst, fn);
}

/* t's layout stretched to dst's shape with stride-0 dims (a plain copy when the shapes
 * already agree, the common case for tiny ops). */
static ff_status broadcast_to_dst(const ff_tensor *t, const ff_tensor *dst, ff_layout *out, const char *fn)
{
    const ff_layout *l = &t->layout;
    if (l->ndim == dst->layout.ndim && memcmp(l->shape, dst->layout.shape, sizeof(int64_t) * (size_t)l->ndim) == 0) {
        *out = *l;
        return FF_OK;
    }
    return ff_layout_expand(l, dst->layout.ndim, dst->layout.shape, out, fn);
}

/* ---- narrow dtypes: the f32 / i32 detour ------------------------------------------- */
/* A backend that declines an entry on F16/BF16 but takes it on F32 gets the f32 form
 * (I8/I16: the i32 form, likewise):
 * every half tensor of the call is replaced by an f32 temporary (inputs, and outputs the
 * entry reads, copied in: exact), the wrapper runs again on the temporaries, and the
 * outputs are copied back, rounding once. A half result is then f32's rounded once, as
 * PyTorch's CPU kernels compute it; reductions and matmul accumulate as the f32 entry
 * does (the reference in double). Outputs come first among the tensors. */
#define DETOUR_MAX KERNEL_MAX_VIEWS

typedef struct narrow_detour {
    int n, n_out;
    const ff_tensor *t[DETOUR_MAX]; /* what the wrapper runs on: ts, or its f32 temporaries */
    ff_tensor *tmp[DETOUR_MAX];
} narrow_detour;

static bool is_narrow(ff_dtype t) { return t == FF_F16 || t == FF_BF16 || t == FF_I8 || t == FF_I16; }

/* The dtype a narrow one computes in: f32 for the halves, i32 for i8/i16 (whose
 * wrap-around results are i32's cut to their width on the copy back). */
static ff_dtype wide_of(ff_dtype t) { return t == FF_I8 || t == FF_I16 ? FF_I32 : FF_F32; }

static bool narrow_detour_needed(ff_backend *be, ff_op_kind kind, int op, ff_dtype dt)
{
    return is_narrow(dt) && !be->vt->supports(be->ctx, kind, op, dt) && be->vt->supports(be->ctx, kind, op, wide_of(dt));
}

static void narrow_detour_release(narrow_detour *d)
{
    for (int i = 0; i < d->n; i++) ff_tensor_release(d->tmp[i]);
}

/* read_out: the entry reads its outputs too (scatter_add accumulates into dst). */
static ff_status narrow_detour_begin(narrow_detour *d, int n, const ff_tensor *const *ts, int n_out, bool read_out,
                                   const char *fn)
{
    d->n = n, d->n_out = n_out;
    for (int i = 0; i < n; i++) d->t[i] = ts[i], d->tmp[i] = NULL;
    for (int i = 0; i < n; i++) {
        if (!is_narrow(ts[i]->dtype)) continue;
        ff_tensor *r = ff_tensor_new(ts[i]->storage->backend, ts[i]->layout.ndim, ts[i]->layout.shape,
                                     wide_of(ts[i]->dtype), fn);
        d->tmp[i] = r;
        if (!r || ((i >= n_out || read_out) && ff_kernel_copy(r, ts[i], fn))) {
            narrow_detour_release(d);
            return ff_last_status();
        }
        d->t[i] = r;
    }
    return FF_OK;
}

/* st: the wrapper's status on the temporaries. The outputs get their rounded values. */
static ff_status narrow_detour_end(narrow_detour *d, const ff_tensor *const *ts, ff_status st, const char *fn)
{
    for (int i = 0; i < d->n_out && !st; i++)
        if (d->tmp[i]) st = ff_kernel_copy(ts[i], d->tmp[i], fn);
    narrow_detour_release(d);
    return st;
}

#define BEGIN_KERNEL(n, ...)                                                 \
    const ff_tensor *ts_[] = {__VA_ARGS__};                                  \
    ff_backend *be = ff_common_backend(n, ts_, fn);                          \
    if (!be) return ff_last_status();                                        \
    ff_clear_error()

/* The backend's fill value for dst's dtype: f for floats; i for integers (NaN -> 0 and
 * out-of-range doubles saturated, since that conversion is UB in C) and bool (any
 * non-zero value, NaN included, is true: the same rule as copy). */
static ff_scalar fill_value(ff_dtype dt, ff_number n)
{
    ff_scalar s = {.f = n.kind == FF_NUMBER_FLOAT ? n.f : (double)n.i, .i = n.i};
    if (n.kind != FF_NUMBER_FLOAT) {
        if (dt == FF_BOOL) s.i = n.i != 0;
        return s;
    }
    double v = n.f;
    if (dt == FF_BOOL) s.i = v != 0.0; /* true for NaN */
    else if (v != v) s.i = 0;
    else if (v >= 9.2233720368547758e18) s.i = INT64_MAX;
    else if (v <= -9.2233720368547758e18) s.i = INT64_MIN;
    else s.i = (int64_t)v;
    return s;
}

ff_status ff_kernel_fill_number(const ff_tensor *dst, ff_number value, const char *fn)
{
    BEGIN_KERNEL(1, dst);
    if (ff_kernel_complex_needed(be, FF_KIND_FILL, 0, dst->dtype)) return ff_complex_fill(dst, value, fn);
    if (!be->vt->supports(be->ctx, FF_KIND_FILL, 0, dst->dtype)) return unsupported(be, fn, "fill", dst->dtype);
    ff_view v;
    ff_tensor_view(dst, &v);
    ff_kernel_params p = {.value = fill_value(dst->dtype, value)};
    return finish_rec(be->vt->fill(be->ctx, &v, p.value), dst, fn, FF_KIND_FILL, 0, 1, &v, ts_, &p);
}

ff_status ff_kernel_fill(const ff_tensor *dst, double value, const char *fn)
{
    return ff_kernel_fill_number(dst, ff_number_float(value), fn);
}

/* Two dense layouts with the same strides (a cast that kept a transpose's strides, see
 * ff_tensor_new_like) hold their elements in the same storage order: copied as one run
 * each, a straight pass instead of a walk in the logical order, which for a transpose
 * steps across rows on both sides. */
static void same_order_flatten(ff_layout *d, ff_layout *s)
{
    if (ff_layout_is_contiguous(d) && ff_layout_is_contiguous(s)) return; /* already one run */
    for (int i = 0; i < d->ndim; i++)
        if (d->shape[i] > 1 && d->strides[i] != s->strides[i]) return;
    if (!ff_layout_is_dense(d) || !ff_layout_is_dense(s)) return;
    int64_t n = 1;
    for (int i = 0; i < d->ndim; i++) n *= d->shape[i];
    /* strides are >= 0, so a dense layout's first element in storage is at its offset */
    d->ndim = s->ndim = 1;
    d->shape[0] = s->shape[0] = n;
    d->strides[0] = s->strides[0] = 1;
}

ff_status ff_kernel_copy(const ff_tensor *dst, const ff_tensor *src, const char *fn)
{
    BEGIN_KERNEL(2, dst, src);
    if ((ff_dtype_is_complex(dst->dtype) || ff_dtype_is_complex(src->dtype)) &&
        !be->vt->supports(be->ctx, FF_KIND_COPY, (int)src->dtype, dst->dtype))
        return ff_complex_copy(dst, src, fn);
    if (!be->vt->supports(be->ctx, FF_KIND_COPY, (int)src->dtype, dst->dtype))
        return ff_error(FF_ERR_UNSUPPORTED, "%s: backend '%s' cannot copy %s to %s", fn, be->name,
                        ff_dtype_name(src->dtype), ff_dtype_name(dst->dtype));
    ff_layout sl, dl = dst->layout;
    if (broadcast_to_dst(src, dst, &sl, fn)) return ff_last_status();
    same_order_flatten(&dl, &sl);
    ff_view v[2];
    ff_tensor_view_layout(dst, &dl, &v[0]);
    ff_tensor_view_layout(src, &sl, &v[1]);
    return finish_rec(be->vt->copy(be->ctx, &v[0], &v[1]), dst, fn, FF_KIND_COPY, 0, 2, v, ts_, NULL);
}

ff_status ff_kernel_upload(const ff_tensor *dst, const void *src, size_t nbytes, const char *fn)
{
    if (!nbytes) return FF_OK;
    ff_backend *be = dst->storage->backend;
    size_t off = (size_t)dst->layout.offset * ff_dtype_size(dst->dtype);
    ff_clear_error();
    ff_status st = be->vt->upload(be->ctx, dst->storage->buf, off, src, nbytes);
    if (!st) FF_OBSERVE(upload, dst->storage, off, src, nbytes);
    return finish(st, dst, fn);
}

ff_status ff_kernel_unary(ff_unary_op op, const ff_tensor *dst, const ff_tensor *src, const char *fn)
{
    BEGIN_KERNEL(2, dst, src);
    if ((unsigned)op >= FF_UNARY_COUNT) return ff_error(FF_ERR_INVALID, "%s: invalid unary op %d", fn, (int)op);
    if (ff_kernel_complex_needed(be, FF_KIND_UNARY, (int)op, src->dtype)) return ff_complex_unary(op, dst, src, fn);
    if (narrow_detour_needed(be, FF_KIND_UNARY, (int)op, src->dtype)) {
        narrow_detour d;
        if (narrow_detour_begin(&d, 2, ts_, 1, false, fn)) return ff_last_status();
        return narrow_detour_end(&d, ts_, ff_kernel_unary(op, d.t[0], d.t[1], fn), fn);
    }
    if (!be->vt->supports(be->ctx, FF_KIND_UNARY, (int)op, src->dtype))
        return unsupported(be, fn, "this unary op", src->dtype);
    ff_view v[2];
    ff_tensor_view(dst, &v[0]);
    ff_tensor_view(src, &v[1]);
    return finish_rec(be->vt->unary(be->ctx, op, &v[0], &v[1]), dst, fn, FF_KIND_UNARY, (int)op, 2, v, ts_, NULL);
}

ff_status ff_kernel_binary(ff_binary_op op, const ff_tensor *dst, const ff_tensor *a, const ff_tensor *b,
                           const char *fn)
{
    BEGIN_KERNEL(3, dst, a, b);
    if ((unsigned)op >= FF_BINARY_COUNT) return ff_error(FF_ERR_INVALID, "%s: invalid binary op %d", fn, (int)op);
    if (a->dtype != b->dtype)
        return ff_error(FF_ERR_INVALID, "%s: internal: binary operands %s and %s not promoted", fn,
                        ff_dtype_name(a->dtype), ff_dtype_name(b->dtype));
    if (ff_kernel_complex_needed(be, FF_KIND_BINARY, (int)op, a->dtype)) return ff_complex_binary(op, dst, a, b, fn);
    if (narrow_detour_needed(be, FF_KIND_BINARY, (int)op, a->dtype)) {
        narrow_detour d;
        if (narrow_detour_begin(&d, 3, ts_, 1, false, fn)) return ff_last_status();
        return narrow_detour_end(&d, ts_, ff_kernel_binary(op, d.t[0], d.t[1], d.t[2], fn), fn);
    }
    if (!be->vt->supports(be->ctx, FF_KIND_BINARY, (int)op, a->dtype))
        return unsupported(be, fn, "this binary op", a->dtype);
    ff_layout la, lb;
    if (broadcast_to_dst(a, dst, &la, fn) || broadcast_to_dst(b, dst, &lb, fn)) return ff_last_status();
    ff_view v[3];
    ff_tensor_view(dst, &v[0]);
    ff_tensor_view_layout(a, &la, &v[1]);
    ff_tensor_view_layout(b, &lb, &v[2]);
    return finish_rec(be->vt->binary(be->ctx, op, &v[0], &v[1], &v[2]), dst, fn, FF_KIND_BINARY, (int)op, 3, v, ts_,
                      NULL);
}

ff_status ff_kernel_reduce(ff_reduce_op op, const ff_tensor *dst, const ff_tensor *src, uint32_t axes_mask,
                           const char *fn)
{
    BEGIN_KERNEL(2, dst, src);
    if (ff_kernel_complex_needed(be, FF_KIND_REDUCE, (int)op, src->dtype))
        return ff_complex_reduce(op, dst, src, axes_mask, fn);
    if (narrow_detour_needed(be, FF_KIND_REDUCE, (int)op, src->dtype)) {
        narrow_detour d;
        if (narrow_detour_begin(&d, 2, ts_, 1, false, fn)) return ff_last_status();
        return narrow_detour_end(&d, ts_, ff_kernel_reduce(op, d.t[0], d.t[1], axes_mask, fn), fn);
    }
    if (!be->vt->supports(be->ctx, FF_KIND_REDUCE, (int)op, src->dtype))
        return unsupported(be, fn, "this reduction", src->dtype);
    if (dst->layout.ndim != src->layout.ndim)
        return ff_error(FF_ERR_INVALID, "%s: internal: reduce dst must be in keepdim form", fn);
    ff_view v[2];
    ff_tensor_view(dst, &v[0]);
    ff_tensor_view(src, &v[1]);
    ff_kernel_params p = {.axes_mask = axes_mask};
    return finish_rec(be->vt->reduce(be->ctx, op, &v[0], &v[1], axes_mask), dst, fn, FF_KIND_REDUCE, (int)op, 2, v,
                      ts_, &p);
}

ff_status ff_kernel_matmul(const ff_tensor *dst, const ff_tensor *a, const ff_tensor *b, const char *fn)
{
    BEGIN_KERNEL(3, dst, a, b);
    if (ff_kernel_complex_needed(be, FF_KIND_MATMUL, 0, a->dtype)) /* ops/complex.c composes it from real ones */
        return unsupported(be, fn, "matmul", a->dtype);
    if (narrow_detour_needed(be, FF_KIND_MATMUL, 0, a->dtype)) {
        narrow_detour d;
        if (narrow_detour_begin(&d, 3, ts_, 1, false, fn)) return ff_last_status();
        return narrow_detour_end(&d, ts_, ff_kernel_matmul(d.t[0], d.t[1], d.t[2], fn), fn);
    }
    if (!be->vt->supports(be->ctx, FF_KIND_MATMUL, 0, a->dtype)) return unsupported(be, fn, "matmul", a->dtype);
    ff_view v[3];
    ff_tensor_view(dst, &v[0]);
    ff_tensor_view(a, &v[1]);
    ff_tensor_view(b, &v[2]);
    return finish_rec(be->vt->matmul(be->ctx, &v[0], &v[1], &v[2]), dst, fn, FF_KIND_MATMUL, 0, 3, v, ts_, NULL);
}

ff_status ff_kernel_where(const ff_tensor *dst, const ff_tensor *cond, const ff_tensor *a, const ff_tensor *b,
                          const char *fn)
{
    BEGIN_KERNEL(4, dst, cond, a, b);
    if (ff_kernel_complex_needed(be, FF_KIND_WHERE, 0, dst->dtype)) return ff_complex_where(dst, cond, a, b, fn);
    if (narrow_detour_needed(be, FF_KIND_WHERE, 0, dst->dtype)) {
        narrow_detour d;
        if (narrow_detour_begin(&d, 4, ts_, 1, false, fn)) return ff_last_status();
        return narrow_detour_end(&d, ts_, ff_kernel_where(d.t[0], d.t[1], d.t[2], d.t[3], fn), fn);
    }
    if (!be->vt->supports(be->ctx, FF_KIND_WHERE, 0, dst->dtype)) return unsupported(be, fn, "where", dst->dtype);
    ff_layout lc, la, lb;
    if (broadcast_to_dst(cond, dst, &lc, fn) || broadcast_to_dst(a, dst, &la, fn) || broadcast_to_dst(b, dst, &lb, fn))
        return ff_last_status();
    ff_view v[4];
    ff_tensor_view(dst, &v[0]);
    ff_tensor_view_layout(cond, &lc, &v[1]);
    ff_tensor_view_layout(a, &la, &v[2]);
    ff_tensor_view_layout(b, &lb, &v[3]);
    return finish_rec(be->vt->where(be->ctx, &v[0], &v[1], &v[2], &v[3]), dst, fn, FF_KIND_WHERE, 0, 4, v, ts_, NULL);
}

ff_status ff_kernel_gather(const ff_tensor *dst, const ff_tensor *src, const ff_tensor *index, int axis,
                           const char *fn)
{
    BEGIN_KERNEL(3, dst, src, index);
    if (ff_kernel_complex_needed(be, FF_KIND_GATHER, 0, src->dtype)) return ff_complex_gather(dst, src, index, axis, fn);
    if (narrow_detour_needed(be, FF_KIND_GATHER, 0, src->dtype)) {
        narrow_detour d;
        if (narrow_detour_begin(&d, 3, ts_, 1, false, fn)) return ff_last_status();
        return narrow_detour_end(&d, ts_, ff_kernel_gather(d.t[0], d.t[1], d.t[2], axis, fn), fn);
    }
    if (!be->vt->supports(be->ctx, FF_KIND_GATHER, 0, src->dtype)) return unsupported(be, fn, "gather", src->dtype);
    ff_view v[3];
    ff_tensor_view(dst, &v[0]);
    ff_tensor_view(src, &v[1]);
    ff_tensor_view(index, &v[2]);
    ff_kernel_params p = {.axis = axis};
    return finish_rec(be->vt->gather(be->ctx, &v[0], &v[1], &v[2], axis), dst, fn, FF_KIND_GATHER, 0, 3, v, ts_, &p);
}

ff_status ff_kernel_scatter_add(const ff_tensor *dst, const ff_tensor *index, const ff_tensor *src, int axis,
                                const char *fn)
{
    BEGIN_KERNEL(3, dst, index, src);
    if (ff_kernel_complex_needed(be, FF_KIND_SCATTER_ADD, 0, dst->dtype))
        return ff_complex_scatter_add(dst, index, src, axis, fn);
    if (narrow_detour_needed(be, FF_KIND_SCATTER_ADD, 0, dst->dtype)) {
        narrow_detour d;
        if (narrow_detour_begin(&d, 3, ts_, 1, true, fn)) return ff_last_status();
        return narrow_detour_end(&d, ts_, ff_kernel_scatter_add(d.t[0], d.t[1], d.t[2], axis, fn), fn);
    }
    if (!be->vt->supports(be->ctx, FF_KIND_SCATTER_ADD, 0, dst->dtype))
        return unsupported(be, fn, "scatter_add", dst->dtype);
    ff_view v[3];
    ff_tensor_view(dst, &v[0]);
    ff_tensor_view(index, &v[1]);
    ff_tensor_view(src, &v[2]);
    ff_kernel_params p = {.axis = axis};
    return finish_rec(be->vt->scatter_add(be->ctx, &v[0], &v[1], &v[2], axis), dst, fn, FF_KIND_SCATTER_ADD, 0, 3, v,
                      ts_, &p);
}

ff_status ff_kernel_random(const ff_tensor *dst, ff_random_dist dist, uint64_t seed, uint64_t counter_base,
                           double p0, double p1, const char *fn)
{
    BEGIN_KERNEL(1, dst);
    if (ff_kernel_complex_needed(be, FF_KIND_RANDOM, (int)dist, dst->dtype))
        return ff_complex_random(dst, dist, seed, counter_base, p0, p1, fn);
    if (narrow_detour_needed(be, FF_KIND_RANDOM, (int)dist, dst->dtype)) {
        narrow_detour d;
        if (narrow_detour_begin(&d, 1, ts_, 1, false, fn)) return ff_last_status();
        return narrow_detour_end(&d, ts_, ff_kernel_random(d.t[0], dist, seed, counter_base, p0, p1, fn), fn);
    }
    if (!be->vt->supports(be->ctx, FF_KIND_RANDOM, (int)dist, dst->dtype))
        return unsupported(be, fn, "random fill", dst->dtype);
    ff_view v;
    ff_tensor_view(dst, &v);
    ff_kernel_params p = {.dist = dist, .seed = seed, .counter_base = counter_base, .p0 = p0, .p1 = p1};
    return finish_rec(be->vt->random(be->ctx, &v, dist, seed, counter_base, p0, p1), dst, fn, FF_KIND_RANDOM,
                      (int)dist, 1, &v, ts_, &p);
}

ff_status ff_kernel_softmax(const ff_tensor *dst, const ff_tensor *src, int axis, bool log, const char *fn)
{
    BEGIN_KERNEL(2, dst, src);
    ff_status (*softmax)(void *, const ff_view *, const ff_view *, int, int) = FF_VT_OPT(be, softmax);
    if (softmax && narrow_detour_needed(be, FF_KIND_SOFTMAX, log, src->dtype)) {
        narrow_detour d;
        if (narrow_detour_begin(&d, 2, ts_, 1, false, fn)) return ff_last_status();
        return narrow_detour_end(&d, ts_, ff_kernel_softmax(d.t[0], d.t[1], axis, log, fn), fn);
    }
    if (!softmax || !be->vt->supports(be->ctx, FF_KIND_SOFTMAX, log, src->dtype)) return FF_ERR_UNSUPPORTED;
    ff_view v[2];
    ff_tensor_view(dst, &v[0]);
    ff_tensor_view(src, &v[1]);
    ff_kernel_params p = {.axis = axis, .flag = log};
    return finish_rec(softmax(be->ctx, &v[0], &v[1], axis, log), dst, fn, FF_KIND_SOFTMAX, log, 2, v, ts_, &p);
}

/* which: 0 forward (a = x, b = w -> dst = y), 1 backward to the input (a = gy, b = w ->
 * dst = gx), 2 backward to the weight (a = gy, b = x -> dst = gw). FF_ERR_UNSUPPORTED
 * (no message) when the backend lacks the entries or declines the dtype: the caller
 * composes instead. */
ff_status ff_kernel_conv2d(int which, const ff_tensor *dst, const ff_tensor *a, const ff_tensor *b,
                           const ff_conv2d_params *p, const char *fn)
{
    BEGIN_KERNEL(3, dst, a, b);
    if (ff_backend_has_conv2d(be) && narrow_detour_needed(be, FF_KIND_CONV2D, which, dst->dtype)) {
        narrow_detour d;
        if (narrow_detour_begin(&d, 3, ts_, 1, false, fn)) return ff_last_status();
        return narrow_detour_end(&d, ts_, ff_kernel_conv2d(which, d.t[0], d.t[1], d.t[2], p, fn), fn);
    }
    if (!ff_backend_has_conv2d(be) || !be->vt->supports(be->ctx, FF_KIND_CONV2D, which, dst->dtype))
        return FF_ERR_UNSUPPORTED;
    ff_view v[3];
    ff_tensor_view(dst, &v[0]);
    ff_tensor_view(a, &v[1]);
    ff_tensor_view(b, &v[2]);
    ff_status st = which == 0   ? be->vt->conv2d(be->ctx, &v[0], &v[1], &v[2], p)
                   : which == 1 ? be->vt->conv2d_backward_input(be->ctx, &v[0], &v[1], &v[2], p)
                                : be->vt->conv2d_backward_weight(be->ctx, &v[0], &v[1], &v[2], p);
    ff_kernel_params gp = {.conv = *p};
    return finish_rec(st, dst, fn, FF_KIND_CONV2D, which, 3, v, ts_, &gp);
}

/* op 0 cumsum, 1 cumprod along axis (normalized; 0 for 0-d); dst has src's shape and dtype. */
ff_status ff_kernel_scan(int op, const ff_tensor *dst, const ff_tensor *src, int axis, const char *fn)
{
    BEGIN_KERNEL(2, dst, src);
    ff_status (*scan)(void *, int, const ff_view *, const ff_view *, int) = FF_VT_OPT(be, scan);
    if (scan && narrow_detour_needed(be, FF_KIND_SCAN, op, src->dtype)) {
        narrow_detour d;
        if (narrow_detour_begin(&d, 2, ts_, 1, false, fn)) return ff_last_status();
        return narrow_detour_end(&d, ts_, ff_kernel_scan(op, d.t[0], d.t[1], axis, fn), fn);
    }
    if (!scan || !be->vt->supports(be->ctx, FF_KIND_SCAN, op, src->dtype))
        return unsupported(be, fn, op ? "cumprod" : "cumsum", src->dtype);
    ff_view v[2];
    ff_tensor_view(dst, &v[0]);
    ff_tensor_view(src, &v[1]);
    ff_kernel_params p = {.axis = axis};
    return finish_rec(scan(be->ctx, op, &v[0], &v[1], axis), dst, fn, FF_KIND_SCAN, op, 2, v, ts_, &p);
}

/* Stable argsort of src along axis (normalized; 0 for 0-d) into dst (i64, src's shape). */
ff_status ff_kernel_argsort(const ff_tensor *dst, const ff_tensor *src, int axis, bool descending, const char *fn)
{
    BEGIN_KERNEL(2, dst, src);
    ff_status (*argsort)(void *, const ff_view *, const ff_view *, int, int) = FF_VT_OPT(be, argsort);
    if (argsort && narrow_detour_needed(be, FF_KIND_SORT, descending, src->dtype)) {
        narrow_detour d;
        if (narrow_detour_begin(&d, 2, ts_, 1, false, fn)) return ff_last_status();
        return narrow_detour_end(&d, ts_, ff_kernel_argsort(d.t[0], d.t[1], axis, descending, fn), fn);
    }
    if (!argsort || !be->vt->supports(be->ctx, FF_KIND_SORT, descending, src->dtype))
        return unsupported(be, fn, "argsort", src->dtype);
    ff_view v[2];
    ff_tensor_view(dst, &v[0]);
    ff_tensor_view(src, &v[1]);
    ff_kernel_params p = {.axis = axis, .flag = descending};
    return finish_rec(argsort(be->ctx, &v[0], &v[1], axis, descending), dst, fn, FF_KIND_SORT, descending, 2, v, ts_,
                      &p);
}

/* The views of an entry that takes arrays of views (n_dst <= 4 outputs, then n_src <= 7
 * inputs, KERNEL_MAX_VIEWS in all, in v and their tensors in ts) and their common backend, or NULL with the
 * error set. */
static ff_backend *view_arrays(ff_tensor *const *dst, int n_dst, const ff_tensor *const *src, int n_src, ff_view *v,
                               const ff_tensor **ts, const char *fn)
{
    if (n_dst < 1 || n_dst > 4 || n_src < 1 || n_src > 7 || n_dst + n_src > KERNEL_MAX_VIEWS)
        return ff_error(FF_ERR_INVALID, "%s: internal: %d outputs and %d inputs", fn, n_dst, n_src), NULL;
    for (int i = 0; i < n_dst; i++) ts[i] = dst[i], ff_tensor_view(dst[i], &v[i]);
    for (int i = 0; i < n_src; i++) ts[n_dst + i] = src[i], ff_tensor_view(src[i], &v[n_dst + i]);
    ff_backend *be = ff_common_backend(n_dst + n_src, ts, fn);
    if (be) ff_clear_error();
    return be;
}

/* Ends an entry with several outputs: every output's version moves. */
static ff_status finish_all(ff_status st, const char *fn, int kind, int op, int n, const ff_view *v,
                            const ff_tensor *const *ts, ff_kernel_params *p)
{
    for (int i = 1; i < p->n_dst; i++) ff_storage_note_write(ts[i]->storage);
    return finish_rec(st, ts[0], fn, kind, op, n, v, ts, p);
}

/* Dense linear algebra (ff_linalg_op): n_dst outputs, n_src inputs, shapes checked by
 * the caller (ops/decomp.c). */
ff_status ff_kernel_linalg(int op, ff_tensor *const *dst, int n_dst, const ff_tensor *const *src, int n_src,
                           const char *fn)
{
    ff_view v[KERNEL_MAX_VIEWS];
    const ff_tensor *ts[KERNEL_MAX_VIEWS];
    ff_backend *be = view_arrays(dst, n_dst, src, n_src, v, ts, fn);
    if (!be) return ff_last_status();
    ff_status (*linalg)(void *, int, const ff_view *, int, const ff_view *, int) = FF_VT_OPT(be, linalg);
    if (linalg && narrow_detour_needed(be, FF_KIND_LINALG, op, src[0]->dtype)) {
        narrow_detour d;
        if (narrow_detour_begin(&d, n_dst + n_src, ts, n_dst, false, fn)) return ff_last_status();
        return narrow_detour_end(&d, ts, ff_kernel_linalg(op, (ff_tensor *const *)d.t, n_dst, d.t + n_dst, n_src, fn), fn);
    }
    static const char *const names[] = {"solve", "det", "cholesky", "qr", "svd", "lstsq"};
    if (!linalg || !be->vt->supports(be->ctx, FF_KIND_LINALG, op, src[0]->dtype))
        return unsupported(be, fn, op >= 0 && op < FF_LINALG_COUNT ? names[op] : "linalg", src[0]->dtype);
    ff_kernel_params p = {.n_dst = n_dst};
    return finish_all(linalg(be->ctx, op, v, n_dst, v + n_dst, n_src), fn, FF_KIND_LINALG, op, n_dst + n_src, v, ts,
                      &p);
}

/* Batch norm's training passes (op 0 forward, 1 backward; views as the ABI comment). */
ff_status ff_kernel_batch_norm(int op, ff_tensor *const *dst, int n_dst, const ff_tensor *const *src, int n_src,
                               double eps, const char *fn)
{
    ff_view v[KERNEL_MAX_VIEWS];
    const ff_tensor *ts[KERNEL_MAX_VIEWS];
    ff_backend *be = view_arrays(dst, n_dst, src, n_src, v, ts, fn);
    if (!be) return ff_last_status();
    ff_status (*bn)(void *, int, const ff_view *, int, const ff_view *, int, double) = FF_VT_OPT(be, batch_norm);
    const ff_tensor *x = src[op == 1]; /* op 1's src[0] is g */
    if (bn && narrow_detour_needed(be, FF_KIND_BATCH_NORM, op, x->dtype)) {
        narrow_detour d;
        if (narrow_detour_begin(&d, n_dst + n_src, ts, n_dst, false, fn)) return ff_last_status();
        return narrow_detour_end(&d, ts, ff_kernel_batch_norm(op, (ff_tensor *const *)d.t, n_dst, d.t + n_dst, n_src, eps, fn),
                               fn);
    }
    if (!bn || !be->vt->supports(be->ctx, FF_KIND_BATCH_NORM, op, x->dtype))
        return unsupported(be, fn, "batch_norm", x->dtype);
    ff_kernel_params p = {.n_dst = n_dst, .eps = eps};
    return finish_all(bn(be->ctx, op, v, n_dst, v + n_dst, n_src, eps), fn, FF_KIND_BATCH_NORM, op, n_dst + n_src, v,
                      ts, &p);
}

/* Layer norm's passes over x [R, D] (op 0 forward, 1 backward; views as the ABI
 * comment). FF_ERR_UNSUPPORTED without a message when the backend lacks the entry or
 * declines the dtype (and, for half, its f32 form too): the caller composes. Recorded
 * through finish_all, so a captured graph replays the entry. */
ff_status ff_kernel_layer_norm(int op, ff_tensor *const *dst, int n_dst, const ff_tensor *const *src, int n_src,
                               double eps, const char *fn)
{
    if ((op != 0 && op != 1) || n_dst != 3 || n_src != (op ? 5 : 3))
        return ff_error(FF_ERR_INVALID, "%s: internal: layer_norm op %d with %d outputs and %d inputs (want 3 and %d)",
                        fn, op, n_dst, n_src, op ? 5 : 3);
    ff_view v[KERNEL_MAX_VIEWS];
    const ff_tensor *ts[KERNEL_MAX_VIEWS];
    ff_backend *be = view_arrays(dst, n_dst, src, n_src, v, ts, fn);
    if (!be) return ff_last_status();
    const ff_tensor *x = src[op ? 1 : 0];
    /* the [R] statistics are F64 on both sides of the entry: dst 1, 2 (forward), src 2, 3 */
    for (int i = 0; i < 2; i++) {
        const ff_tensor *st = op ? src[2 + i] : dst[1 + i];
        if (st->dtype != FF_F64 || st->layout.ndim != 1)
            return ff_error(FF_ERR_INVALID, "%s: layer_norm's mean and invstd must be 1-D f64, got %s of rank %d", fn,
                            ff_dtype_name(st->dtype), st->layout.ndim);
    }
    if (x->layout.ndim != 2)
        return ff_error(FF_ERR_INVALID, "%s: layer_norm takes x as [R, D], got rank %d", fn, x->layout.ndim);
    ff_status (*ln)(void *, int, const ff_view *, int, const ff_view *, int, double) = FF_VT_OPT(be, layer_norm);
    if (ln && narrow_detour_needed(be, FF_KIND_LAYER_NORM, op, x->dtype)) {
        narrow_detour d;
        if (narrow_detour_begin(&d, n_dst + n_src, ts, n_dst, false, fn)) return ff_last_status();
        return narrow_detour_end(&d, ts, ff_kernel_layer_norm(op, (ff_tensor *const *)d.t, n_dst, d.t + n_dst, n_src, eps, fn),
                               fn);
    }
    if (!ln || !be->vt->supports(be->ctx, FF_KIND_LAYER_NORM, op, x->dtype)) return FF_ERR_UNSUPPORTED;
    ff_kernel_params p = {.n_dst = n_dst, .eps = eps};
    return finish_all(ln(be->ctx, op, v, n_dst, v + n_dst, n_src, eps), fn, FF_KIND_LAYER_NORM, op, n_dst + n_src, v,
                      ts, &p);
}

/* 2-D pooling (ff_pool2d_op) into dst; views and shapes as the ABI comment. */
ff_status ff_kernel_pool2d(int op, ff_tensor *dst, const ff_tensor *const *src, int n_src, const ff_pool2d_params *p,
                           const char *fn)
{
    ff_view v[KERNEL_MAX_VIEWS];
    const ff_tensor *ts[KERNEL_MAX_VIEWS];
    ff_backend *be = view_arrays(&dst, 1, src, n_src, v, ts, fn);
    if (!be) return ff_last_status();
    ff_status (*pool)(void *, int, const ff_view *, const ff_view *, int, const ff_pool2d_params *) =
        FF_VT_OPT(be, pool2d);
    if (pool && narrow_detour_needed(be, FF_KIND_POOL2D, op, dst->dtype)) {
        narrow_detour d;
        if (narrow_detour_begin(&d, 1 + n_src, ts, 1, false, fn)) return ff_last_status();
        return narrow_detour_end(&d, ts, ff_kernel_pool2d(op, (ff_tensor *)d.t[0], d.t + 1, n_src, p, fn), fn);
    }
    if (!pool || !be->vt->supports(be->ctx, FF_KIND_POOL2D, op, dst->dtype))
        return unsupported(be, fn, "pool2d", dst->dtype);
    ff_kernel_params gp = {.n_dst = 1, .pool = *p};
    return finish_all(pool(be->ctx, op, v, v + 1, n_src, p), fn, FF_KIND_POOL2D, op, 1 + n_src, v, ts, &gp);
}

/* One transform (ff_fft_op) of src along axis (a signal dim: never the complex pair's)
 * into dst; the shapes follow the ABI comment at the fft entry. */
ff_status ff_kernel_fft(int op, const ff_tensor *dst, const ff_tensor *src, int axis, const char *fn)
{
    BEGIN_KERNEL(2, dst, src);
    ff_status (*fft)(void *, int, const ff_view *, const ff_view *, int) = FF_VT_OPT(be, fft);
    if (fft && narrow_detour_needed(be, FF_KIND_FFT, op, src->dtype)) {
        narrow_detour d;
        if (narrow_detour_begin(&d, 2, ts_, 1, false, fn)) return ff_last_status();
        return narrow_detour_end(&d, ts_, ff_kernel_fft(op, d.t[0], d.t[1], axis, fn), fn);
    }
    if (!fft || !be->vt->supports(be->ctx, FF_KIND_FFT, op, src->dtype)) return unsupported(be, fn, "fft", src->dtype);
    ff_view v[2];
    ff_tensor_view(dst, &v[0]);
    ff_tensor_view(src, &v[1]);
    ff_kernel_params p = {.axis = axis};
    return finish_rec(fft(be->ctx, op, &v[0], &v[1], axis), dst, fn, FF_KIND_FFT, op, 2, v, ts_, &p);
}

/* Scaled dot-product attention (ff_attention_op; views and lists as the ABI comment).
 * FF_ERR_UNSUPPORTED without a message when the backend lacks the entry or declines the
 * dtype (and, for half, its f32 form too): the caller composes instead. */
ff_status ff_kernel_attention(int op, ff_tensor *const *dst, int n_dst, const ff_tensor *const *src, int n_src,
                              const ff_attention_params *p, const char *fn)
{
    ff_view v[KERNEL_MAX_VIEWS];
    const ff_tensor *ts[KERNEL_MAX_VIEWS];
    ff_backend *be = view_arrays(dst, n_dst, src, n_src, v, ts, fn);
    if (!be) return ff_last_status();
    ff_status (*attn)(void *, int, const ff_view *, int, const ff_view *, int, const ff_attention_params *) =
        FF_VT_OPT(be, attention);
    ff_dtype dt = src[op ? 1 : 0]->dtype;
    if (attn && narrow_detour_needed(be, FF_KIND_ATTENTION, op, dt)) {
        narrow_detour d;
        if (narrow_detour_begin(&d, n_dst + n_src, ts, n_dst, false, fn)) return ff_last_status();
        return narrow_detour_end(&d, ts, ff_kernel_attention(op, (ff_tensor *const *)d.t, n_dst, d.t + n_dst, n_src, p, fn),
                               fn);
    }
    if (!attn || !be->vt->supports(be->ctx, FF_KIND_ATTENTION, op, dt)) return FF_ERR_UNSUPPORTED;
    ff_kernel_params gp = {.n_dst = n_dst, .attn = *p};
    return finish_all(attn(be->ctx, op, v, n_dst, v + n_dst, n_src, p), fn, FF_KIND_ATTENTION, op, n_dst + n_src, v, ts,
                      &gp);
}

/* Quantized matmul (ff_qmatmul_params; dst y, src {a, b, b_scale (, bias)}, shapes
 * checked by the caller, ops/quant_linear.c). The kernel observer (graph capture) has no
 * record for it yet, so under an observer it fails rather than vanish from a replay. */
ff_status ff_kernel_qmatmul(ff_tensor *dst, const ff_tensor *const *src, int n_src, const ff_qmatmul_params *p,
                            const char *fn)
{
    ff_view v[KERNEL_MAX_VIEWS];
    const ff_tensor *ts[KERNEL_MAX_VIEWS];
    ff_backend *be = view_arrays(&dst, 1, src, n_src, v, ts, fn);
    if (!be) return ff_last_status();
    if (ff_kernel_observing)
        return ff_error(FF_ERR_UNSUPPORTED, "%s: int8 qmatmul cannot be captured in a graph yet; run it eagerly", fn);
    if (v[1].ndim == 2 && v[1].shape[1] > FF_QMATMUL_MAX_K) /* the ABI's promise: s32 sums never overflow */
        return ff_error(FF_ERR_INVALID, "%s: K = %lld exceeds FF_QMATMUL_MAX_K (%d)", fn, (long long)v[1].shape[1],
                        FF_QMATMUL_MAX_K);
    ff_status (*qmm)(void *, const ff_view *, const ff_view *, int, const ff_qmatmul_params *) = FF_VT_OPT(be, qmatmul);
    if (!qmm || !be->vt->supports(be->ctx, FF_KIND_QMATMUL, 0, FF_U8))
        return ff_error(FF_ERR_UNSUPPORTED,
                        "%s: backend '%s' has no qmatmul entry (int8 matmul); move the tensors to cpu or cpu_blas "
                        "with ff_to",
                        fn, be->name);
    /* dynamic mode (a float activation) only where the backend said yes for its dtype:
     * an older plugin reads a as u8 and never looks at the appended fields */
    if (p->a_dynamic &&
        (!ff_dtype_is_float(v[1].dtype) || !be->vt->supports(be->ctx, FF_KIND_QMATMUL, FF_QMATMUL_DYNAMIC, v[1].dtype)))
        return ff_error(FF_ERR_UNSUPPORTED,
                        "%s: backend '%s' does not quantize a %s activation itself (qmatmul dynamic mode); send u8 "
                        "activations quantized by the core",
                        fn, be->name, ff_dtype_name(v[1].dtype));
    if (!p->a_dynamic && v[1].dtype != FF_U8)
        return ff_error(FF_ERR_INVALID, "%s: the activation is %s, expected U8 (or a float one with a_dynamic = 1)", fn,
                        ff_dtype_name(v[1].dtype));
    return finish(qmm(be->ctx, &v[0], v + 1, n_src, p), dst, fn);
}

/* The linear entry (dst = act(a b + bias); src {a, b (, bias)}, 2-D views as the ABI
 * comment, checked by the caller, ops/linear.c). FF_ERR_UNSUPPORTED, no message, where it
 * cannot run as the plain ops would record: under a kernel observer (a capture must see
 * matmul, add and act), without the entry, or where the backend declines act or dtype;
 * the caller composes. */
ff_status ff_kernel_linear(ff_tensor *dst, const ff_tensor *const *src, int n_src, int act, const char *fn)
{
    ff_view v[KERNEL_MAX_VIEWS];
    const ff_tensor *ts[KERNEL_MAX_VIEWS];
    ff_backend *be = view_arrays(&dst, 1, src, n_src, v, ts, fn);
    if (!be) return ff_last_status();
    ff_status (*lin)(void *, const ff_view *, const ff_view *, int, int) = FF_VT_OPT(be, linear);
    if (ff_kernel_observing || !lin || !be->vt->supports(be->ctx, FF_KIND_LINEAR, act, dst->dtype))
        return FF_ERR_UNSUPPORTED;
    return finish(lin(be->ctx, &v[0], v + 1, n_src, act), dst, fn);
}
