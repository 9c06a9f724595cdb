/*
 * reduce, softmax, scan (cumsum / cumprod) and argsort. The reduce dtype rules are the
 * reference's (backends/cpu/cpu_reduce.c): SUM/PROD write any dtype, MAX/MIN src's, ARG*
 * I64 over at most one axis, ANY/ALL bool. Long rows get a work-group each and a tree in
 * local memory (kernels/reduce.cl), short rows one work-item each. softmax, scan and
 * argsort give each line one work-item (argsort: a merge sort in a scratch buffer).
 */
#include "ocl_impl.h"
#include "ff_backend_lines.h"

#define RED_WG 256    /* kernels/reduce.cl: the local array */
#define RACC_BYTES 32 /* kernels/reduce.cl: sizeof(racc), a double and three 64-bit integers */

static ff_status check_reduce(ocl_ctx *c, ff_reduce_op op, const ff_view *dst, const ff_view *src, uint32_t mask)
{
    int axis;
    /* half views are checked under the f32 rules they follow (ocl_rule_dtype) */
    ff_view d = dst ? *dst : (ff_view){0}, s = src ? *src : (ff_view){0};
    d.dtype = ocl_rule_dtype(d.dtype), s.dtype = ocl_rule_dtype(s.dtype);
    ff_status st = ffb_reduce_check(c->host, "opencl", op, dst ? &d : NULL, src ? &s : NULL, mask, &axis);
    if (st) return st;
    if (ff_view_numel(src) == 0 && ff_view_numel(dst) > 0 &&
        (op == FF_REDUCE_MAX || op == FF_REDUCE_MIN || ffb_reduce_is_arg(op)))
        return ocl_error(c, FF_ERR_INVALID, "opencl reduce: %s of an empty set", ffb_reduce_name(op));
    return FF_OK;
}

/* The largest power of two <= n. */
static size_t pow2_floor(size_t n)
{
    size_t p = 1;
    while (p * 2 <= n) p *= 2;
    return p;
}

/* The middle-axis sum (kernels/reduce.cl, ff_sum_rows_*): f32/f64 SUM over one merged
 * axis of rn rows, the kept innermost run contiguous in dst and src (v, merged) and a
 * multiple of the kernel's width, at most two kept dims before it. FF_ERR_UNSUPPORTED
 * (nothing enqueued) for everything else. */
static ff_status sum_rows(ocl_ctx *c, ff_reduce_op op, const ff_view *dst, const ff_view *src, const ocl_kview *v,
                          const ocl_kview *r, int64_t rn)
{
    int nd = v[0].ndim;
    int64_t w = src->dtype == FF_F32 ? 8 : 4;
    if (op != FF_REDUCE_SUM || dst->dtype != src->dtype || (src->dtype != FF_F32 && src->dtype != FF_F64) ||
        r->ndim != 1 || rn < 1 || nd < 1 || nd > 3 || v[0].strides[nd - 1] != 1 || v[1].strides[nd - 1] != 1 ||
        v[0].shape[nd - 1] % w)
        return FF_ERR_UNSUPPORTED;
    ocl_lead2 ld = ocl_lead2_of(&v[0], nd - 1), ls = ocl_lead2_of(&v[1], nd - 1);
    cl_long rs = r->strides[0], rows = rn;
    cl_mem md = ocl_mem_of(dst->buf), ms = ocl_mem_of(src->buf);
    ocl_arg args[] = {OCL_ARG(md), OCL_ARG(ld.off), OCL_ARG(ld.s1), OCL_ARG(ld.s2), OCL_ARG(ms),
                      OCL_ARG(ls.off), OCL_ARG(ls.s1), OCL_ARG(ls.s2), OCL_ARG(rs), OCL_ARG(rows)};
    return ocl_launch_rows(c, "reduce", src->dtype == FF_F32 ? OK_SUM_ROWS_F32 : OK_SUM_ROWS_F64, args, 10,
                           (size_t)(v[0].shape[nd - 1] / w), (size_t)ld.n2, (size_t)ld.n1);
}

ff_status ocl_reduce(void *ctx, ff_reduce_op op, const ff_view *dst, const ff_view *src, uint32_t axes_mask)
{
    ocl_ctx *c = ctx;
    ff_status st = check_reduce(c, op, dst, src, axes_mask);
    int64_t nout = st ? 0 : ff_view_numel(dst);
    if (st || nout == 0) return st;

    ocl_kview v[2] = {ocl_kview_of(dst), ocl_kview_of(src)}, r = ocl_kview_of(src);
    r.offset = 0;
    r.ndim = 0;
    for (int d = 0; d < src->ndim; d++) {
        if (!((axes_mask >> d) & 1u)) continue;
        r.shape[r.ndim] = src->shape[d];
        r.strides[r.ndim++] = src->strides[d];
        v[1].shape[d] = 1; /* s walks dst's positions: the row's base */
    }
    int64_t rn = 1;
    for (int d = 0; d < r.ndim; d++) rn *= r.shape[d];
    ocl_kview_merge(v, 2);
    if (!ffb_reduce_is_arg(op)) ocl_kview_merge(&r, 1); /* ARG* needs k = the index along its axis */
    if ((st = sum_rows(c, op, dst, src, v, &r, rn)) != FF_ERR_UNSUPPORTED) return st;

    size_t L = rn < 64 ? 1 : rn < 4096 ? 32 : RED_WG;
    if (L > c->max_wg) L = pow2_floor(c->max_wg);
    /* Few long rows would leave most of the device idle: split each row into chunks of
     * at least 16 elements per lane, enough chunks for ~256 work-groups in all, and fold
     * the chunks in a second pass. */
    int64_t nchunks = 1, chunk = rn;
    if (L == RED_WG && nout < 256) {
        int64_t want = (256 + nout - 1) / nout, most = rn / ((int64_t)L * 16);
        nchunks = want < most ? want : most;
        if (nchunks < 1) nchunks = 1;
        chunk = (rn + nchunks - 1) / nchunks;
        nchunks = (rn + chunk - 1) / chunk;
    }
    int64_t ngroups = nout * nchunks;
    size_t groups = L == 1 ? ocl_grid(c, nout) : (size_t)(ngroups < 65536 ? ngroups : 65536);
    ff_dtype sr = ocl_rule_dtype(src->dtype), dr = ocl_rule_dtype(dst->dtype);
    cl_int cop = op, float_acc = ffb_is_float(sr) || ((op == FF_REDUCE_SUM || op == FF_REDUCE_PROD) && ffb_is_float(dr));
    cl_mem md = ocl_mem_of(dst->buf), ms = ocl_mem_of(src->buf);
    void *partial = NULL;
    if (nchunks > 1 && !(partial = ocl_alloc(c, (size_t)ngroups * RACC_BYTES))) return FF_ERR_OOM;
    cl_mem mp = partial ? ocl_mem_of(partial) : md; /* unused when nchunks == 1 */
    cl_long no = nout, nr = rn, ch = chunk, nc = nchunks;
    ocl_arg args[] = {OCL_ARG(cop), OCL_ARG(float_acc), OCL_ARG(v[0]), OCL_ARG(md), OCL_ARG(v[1]), OCL_ARG(ms),
                      OCL_ARG(r), OCL_ARG(no), OCL_ARG(nr), OCL_ARG(ch), OCL_ARG(nc), OCL_ARG(mp)};
    st = ocl_launch(c, "reduce", OK_REDUCE, args, 12, groups * L, L);
    if (!st && partial) {
        ocl_arg fargs[] = {OCL_ARG(cop), OCL_ARG(float_acc), OCL_ARG(v[0]), OCL_ARG(md), OCL_ARG(mp), OCL_ARG(no),
                           OCL_ARG(nc)};
        st = ocl_launch(c, "reduce", OK_REDUCE_FINISH, fargs, 7, ocl_grid(c, nout), 0);
    }
    if (partial) ocl_free(c, partial);
    return st;
}

/* The per-line entries' views: dst and src (0-d as one line of one element), and `lines`,
 * src's shape with the axis set to 1. Returns the number of lines, 0 when there is no work. */
static int64_t line_views(const ff_view *dst, const ff_view *src, int axis, ocl_kview *d, ocl_kview *s,
                          ocl_kview *lines)
{
    ff_view d1, s1;
    dst = ffb_as_rank1(dst, &d1);
    src = ffb_as_rank1(src, &s1);
    int64_t len = src->shape[axis], numel = ff_view_numel(src);
    if (len == 0 || numel == 0) return 0;
    *d = ocl_kview_of(dst), *s = ocl_kview_of(src), *lines = *s;
    lines->shape[axis] = 1;
    return numel / len;
}

ff_status ocl_softmax(void *ctx, const ff_view *dst, const ff_view *src, int axis, int want_log)
{
    ocl_ctx *c = ctx;
    ff_status st;
    if ((st = ocl_check_storage_view(c, "softmax", "dst", dst)) ||
        (st = ocl_check_storage_view(c, "softmax", "src", src)))
        return st;
    if (!ffb_is_float(ocl_rule_dtype(src->dtype)))
        return ocl_error(c, FF_ERR_UNSUPPORTED, "opencl softmax: not supported on %s", ffb_dtype_name(src->dtype));
    if (dst->dtype != src->dtype)
        return ocl_error(c, FF_ERR_INVALID, "opencl softmax: dst (%s) and src (%s) differ in dtype",
                         ffb_dtype_name(dst->dtype), ffb_dtype_name(src->dtype));
    if (!ocl_same_shape(dst, src)) return ocl_shape_error(c, "softmax", dst, src);
    int rank = src->ndim > 0 ? src->ndim : 1;
    if (axis < 0 || axis >= rank)
        return ocl_error(c, FF_ERR_INVALID, "opencl softmax: axis %d out of range for rank %d", axis, (int)src->ndim);
    ocl_kview d, s, rows;
    cl_long nrows = line_views(dst, src, axis, &d, &s, &rows);
    if (!nrows) return FF_OK;
    cl_int ax = axis, lg = want_log != 0;
    cl_mem md = ocl_mem_of(dst->buf), ms = ocl_mem_of(src->buf);
    ocl_arg args[] = {OCL_ARG(d), OCL_ARG(md), OCL_ARG(s), OCL_ARG(ms), OCL_ARG(rows), OCL_ARG(ax), OCL_ARG(lg),
                      OCL_ARG(nrows)};
    return ocl_launch(c, "softmax", OK_SOFTMAX, args, 8, ocl_grid(c, nrows), 0);
}

ff_status ocl_scan(void *ctx, int op, const ff_view *dst, const ff_view *src, int axis)
{
    ocl_ctx *c = ctx;
    ff_status st = ffb_scan_check(c->host, "opencl", op, dst, src, axis);
    if (st) return st;
    ocl_kview d, s, lines;
    cl_long nlines = line_views(dst, src, axis, &d, &s, &lines);
    if (!nlines) return FF_OK;
    cl_int cop = op, ax = axis;
    cl_mem md = ocl_mem_of(dst->buf), ms = ocl_mem_of(src->buf);
    ocl_arg args[] = {OCL_ARG(cop), OCL_ARG(d), OCL_ARG(md), OCL_ARG(s), OCL_ARG(ms), OCL_ARG(lines), OCL_ARG(ax),
                      OCL_ARG(nlines)};
    return ocl_launch(c, "scan", OK_SCAN, args, 8, ocl_grid(c, nlines), 0);
}

ff_status ocl_argsort(void *ctx, const ff_view *dst, const ff_view *src, int axis, int descending)
{
    ocl_ctx *c = ctx;
    ff_status st = ffb_argsort_check(c->host, "opencl", dst, src, axis);
    if (st) return st;
    ocl_kview d, s, lines;
    cl_long nlines = line_views(dst, src, axis, &d, &s, &lines);
    if (!nlines) return FF_OK;
    void *tmp = ocl_alloc(c, (size_t)ff_view_numel(src) * 2 * sizeof(cl_long)); /* merge sort scratch */
    if (!tmp) return FF_ERR_OOM;
    cl_int ax = axis, desc = descending != 0;
    cl_mem md = ocl_mem_of(dst->buf), ms = ocl_mem_of(src->buf), mt = ocl_mem_of(tmp);
    ocl_arg args[] = {OCL_ARG(d), OCL_ARG(md), OCL_ARG(s), OCL_ARG(ms), OCL_ARG(mt), OCL_ARG(lines), OCL_ARG(ax),
                      OCL_ARG(desc), OCL_ARG(nlines)};
    st = ocl_launch(c, "argsort", OK_ARGSORT, args, 9, ocl_grid(c, nlines), 0);
    ocl_free(c, tmp); /* reused only by later commands in the in-order queue */
    return st;
}
