/*
 * gather, scatter_add and random fill.
 *
 * Index errors have to come back as FF_ERR_INDEX from the call, so these entries wait
 * for the device: the kernels raise a flag in a small buffer, which is read back (a
 * blocking read, so the host waits for the queue). scatter_add checks every index in
 * a first kernel and only then enqueues the accumulation: a bad index leaves dst as
 * it was, as the ABI requires.
 */
#include <string.h>

#include "ocl_impl.h"

static ff_status check_index(ocl_ctx *c, const char *entry, const ff_view *dst, const ff_view *src,
                             const ff_view *index, int axis)
{
    ff_status st;
    if ((st = ocl_check_storage_view(c, entry, "dst", dst)) || (st = ocl_check_storage_view(c, entry, "src", src)) ||
        (st = ocl_check_view(c, entry, "index", index)))
        return st;
    if (dst->dtype != src->dtype)
        return ocl_error(c, FF_ERR_INVALID, "opencl %s: dst (%s) and src (%s) differ in dtype", entry,
                         ffb_dtype_name(dst->dtype), ffb_dtype_name(src->dtype));
    if (index->dtype != FF_I64 && index->dtype != FF_I32)
        return ocl_error(c, FF_ERR_INVALID, "opencl %s: index is %s, expected i64 or i32", entry,
                         ffb_dtype_name(index->dtype));
    if (dst->ndim != src->ndim || index->ndim != src->ndim)
        return ocl_error(c, FF_ERR_INVALID, "opencl %s: dst, src and index ranks differ (%d, %d, %d)", entry,
                         (int)dst->ndim, (int)src->ndim, (int)index->ndim);
    int rank = src->ndim ? src->ndim : 1;
    if (axis < 0 || axis >= rank)
        return ocl_error(c, FF_ERR_INVALID, "opencl %s: axis %d out of range for rank %d", entry, axis, (int)src->ndim);
    return FF_OK;
}

/* index.shape[d] <= other.shape[d] for every d (but axis, when skip_axis). */
static ff_status check_fits(ocl_ctx *c, const char *entry, const ff_view *index, const ff_view *other,
                            const char *what, int axis, int skip_axis)
{
    for (int d = 0; d < index->ndim; d++)
        if (!(skip_axis && d == axis) && index->shape[d] > other->shape[d])
            return ocl_error(c, FF_ERR_INVALID, "opencl %s: index size %lld at dim %d exceeds %s's %lld", entry,
                             (long long)index->shape[d], d, what, (long long)other->shape[d]);
    return FF_OK;
}

/* A zeroed two-long flag buffer: [0] = 1 if an index was bad, [1] = one bad value. */
static ff_status flag_new(ocl_ctx *c, void **flag)
{
    cl_long zero[2] = {0, 0};
    *flag = ocl_alloc(c, sizeof zero);
    if (!*flag) return FF_ERR_OOM;
    ff_status st = ocl_upload(c, *flag, 0, zero, sizeof zero);
    if (st) ocl_free(c, *flag);
    return st;
}

/* Reads the flag (waiting for the kernels before it) and frees it. */
static ff_status flag_read(ocl_ctx *c, void *flag, const char *entry, int64_t size, int axis)
{
    cl_long got[2] = {0, 0};
    ff_status st = ocl_download(c, flag, 0, got, sizeof got);
    ocl_free(c, flag);
    if (st) return st;
    if (got[0])
        return ocl_error(c, FF_ERR_INDEX, "opencl %s: index %lld is out of range [0, %lld) along axis %d", entry,
                         (long long)got[1], (long long)size, axis);
    return FF_OK;
}

ff_status ocl_gather(void *ctx, const ff_view *dst, const ff_view *src, const ff_view *index, int axis)
{
    ocl_ctx *c = ctx;
    ff_status st = check_index(c, "gather", dst, src, index, axis);
    if (st) return st;
    ff_view d1, s1, i1;
    dst = ffb_as_rank1(dst, &d1);
    src = ffb_as_rank1(src, &s1);
    index = ffb_as_rank1(index, &i1);
    if (!ocl_same_shape(dst, index)) return ocl_shape_error(c, "gather", dst, index);
    if ((st = check_fits(c, "gather", index, src, "src", axis, 1))) return st;
    int64_t n = ff_view_numel(index);
    if (n == 0) return FF_OK;
    int64_t size = src->shape[axis];
    ocl_kview v[3] = {ocl_kview_of(dst), ocl_kview_of(src), ocl_kview_of(index)};
    cl_long step = src->strides[axis], csize = size, nn = n;
    v[1].strides[axis] = 0; /* the index supplies the position along axis */
    for (int d = 0; d < src->ndim; d++) v[1].shape[d] = index->shape[d];
    ocl_kview_merge(v, 3);
    void *flag;
    if ((st = flag_new(c, &flag))) return st;
    cl_mem md = ocl_mem_of(dst->buf), ms = ocl_mem_of(src->buf), mi = ocl_mem_of(index->buf), mf = ocl_mem_of(flag);
    int nd = v[0].ndim;
    cl_long len = nd ? v[0].shape[nd - 1] : 1;
    if (index->dtype == FF_I64 && nd >= 1 && nd <= 3 && len > 1 && v[2].strides[nd - 1] == 0 &&
        v[0].strides[nd - 1] == 1 && v[1].strides[nd - 1] == 1) {
        /* the row form: the index constant along a contiguous innermost run, rows over
         * at most two leading dims (ocl_lead2_of: their offsets and strides as scalars) */
        static const ocl_kernel_id by_size[9] = {[1] = OK_GATHER_ROWS_U8, [2] = OK_GATHER_ROWS_U16,
                                                 [4] = OK_GATHER_ROWS_U32, [8] = OK_GATHER_ROWS_U64};
        ocl_lead2 ld = ocl_lead2_of(&v[0], nd - 1), ls = ocl_lead2_of(&v[1], nd - 1), li = ocl_lead2_of(&v[2], nd - 1);
        ocl_arg args[] = {OCL_ARG(md),    OCL_ARG(ld.off), OCL_ARG(ld.s1), OCL_ARG(ld.s2), OCL_ARG(ms),
                          OCL_ARG(ls.off), OCL_ARG(ls.s1), OCL_ARG(ls.s2), OCL_ARG(step), OCL_ARG(mi),
                          OCL_ARG(li.off), OCL_ARG(li.s1), OCL_ARG(li.s2), OCL_ARG(csize), OCL_ARG(mf)};
        st = ocl_launch_rows(c, "gather", by_size[ff_dtype_size(dst->dtype)], args, 15, (size_t)len, (size_t)ld.n2,
                             (size_t)ld.n1);
        if (st) {
            ocl_free(c, flag);
            return st;
        }
        return flag_read(c, flag, "gather", size, axis);
    }
    ocl_arg args[] = {OCL_ARG(v[0]), OCL_ARG(md), OCL_ARG(v[1]), OCL_ARG(ms), OCL_ARG(step), OCL_ARG(v[2]),
                      OCL_ARG(mi), OCL_ARG(csize), OCL_ARG(nn), OCL_ARG(mf)};
    st = ocl_launch(c, "gather", OK_GATHER, args, 10, ocl_grid(c, n), 0);
    if (st) {
        ocl_free(c, flag);
        return st;
    }
    return flag_read(c, flag, "gather", size, axis);
}

/* scatter_add's row form (kernels/index.cl) for an I64 index that, past axis, is constant
 * (stride 0) where dst and src hold its trailing shape as one contiguous run of len
 * elements, with at most two dims of more than one element before axis:
 * FF_ERR_UNSUPPORTED (nothing enqueued) otherwise. The indices are already checked. */
static ff_status scatter_add_rows(ocl_ctx *c, const ff_view *dst, const ff_view *index, const ff_view *src, int axis)
{
    cl_long len = 1;
    if (index->dtype != FF_I64) return FF_ERR_UNSUPPORTED;
    for (int d = index->ndim - 1; d > axis; d--) {
        if (index->shape[d] == 1) continue;
        if (index->strides[d] != 0 || dst->strides[d] != len || src->strides[d] != len) return FF_ERR_UNSUPPORTED;
        len *= index->shape[d];
    }
    if (len < 2) return FF_ERR_UNSUPPORTED;
    /* the rows' positions: the dims before axis (the index's shape), those of one element
     * dropped; axis itself is walked by the kernel's loop (iax, sax) and, in dst, by the
     * index's value (step) */
    ocl_kview v[3] = {ocl_kview_of(dst), ocl_kview_of(index), ocl_kview_of(src)};
    int lead = 0;
    for (int d = 0; d < axis; d++) {
        if (index->shape[d] == 1) continue;
        if (lead == 2) return FF_ERR_UNSUPPORTED;
        for (int i = 0; i < 3; i++) v[i].shape[lead] = index->shape[d], v[i].strides[lead] = v[i].strides[d];
        lead++;
    }
    ocl_lead2 ld = ocl_lead2_of(&v[0], lead), li = ocl_lead2_of(&v[1], lead), ls = ocl_lead2_of(&v[2], lead);
    cl_long step = dst->strides[axis], iax = index->strides[axis], sax = src->strides[axis], nidx = index->shape[axis];
    cl_mem md = ocl_mem_of(dst->buf), mi = ocl_mem_of(index->buf), ms = ocl_mem_of(src->buf);
    /* parts (a power of two, CPU devices only): about one item per compute unit where the
     * row positions alone give fewer; each part reads the whole index, so no more */
    cl_long parts = 1, slots = dst->shape[axis];
    while (c->cpu_device && parts * 2 <= slots && ld.n2 * ld.n1 * parts < (cl_long)c->compute_units && parts < 64)
        parts *= 2;
    /* both kernels' arguments; the per-element (GPU) one takes the first 16 */
    ocl_arg args[] = {OCL_ARG(md),   OCL_ARG(ld.off), OCL_ARG(ld.s1), OCL_ARG(ld.s2), OCL_ARG(step),
                      OCL_ARG(mi),   OCL_ARG(li.off), OCL_ARG(li.s1), OCL_ARG(li.s2), OCL_ARG(iax),
                      OCL_ARG(ms),   OCL_ARG(ls.off), OCL_ARG(ls.s1), OCL_ARG(ls.s2), OCL_ARG(sax),
                      OCL_ARG(nidx), OCL_ARG(len),    OCL_ARG(parts)};
    int f32 = dst->dtype == FF_F32;
    if (!c->cpu_device)
        return ocl_launch_rows(c, "scatter_add", f32 ? OK_SCATTER_ADD_ROWS_F32 : OK_SCATTER_ADD_ROWS_F64, args, 16,
                               (size_t)len, (size_t)ld.n2, (size_t)ld.n1);
    return ocl_launch_rows(c, "scatter_add", f32 ? OK_SCATTER_ADD_ROWS_CPU_F32 : OK_SCATTER_ADD_ROWS_CPU_F64, args, 18,
                           (size_t)parts, (size_t)ld.n2, (size_t)ld.n1);
}

ff_status ocl_scatter_add(void *ctx, const ff_view *dst, const ff_view *index, const ff_view *src, int axis)
{
    ocl_ctx *c = ctx;
    ff_status st = check_index(c, "scatter_add", dst, src, index, axis);
    if (st) return st;
    if (ffb_is_half(dst->dtype)) /* supports() declines it: the core sums in f32 and rounds once */
        return ocl_error(c, FF_ERR_UNSUPPORTED, "opencl scatter_add: not supported on %s (the core computes it in f32)",
                         ffb_dtype_name(dst->dtype));
    ff_view d1, s1, i1;
    dst = ffb_as_rank1(dst, &d1);
    src = ffb_as_rank1(src, &s1);
    index = ffb_as_rank1(index, &i1);
    if ((st = check_fits(c, "scatter_add", index, src, "src", axis, 0)) ||
        (st = check_fits(c, "scatter_add", index, dst, "dst", axis, 1)))
        return st;
    int64_t n = ff_view_numel(index);
    if (n == 0) return FF_OK;
    int64_t size = dst->shape[axis];
    void *flag;
    if ((st = flag_new(c, &flag))) return st;
    ocl_kview ix = ocl_kview_of(index), ixm = ix;
    /* each stored index value once: a dim the index is broadcast along (stride 0, as
     * embedding's backward has it along the row) repeats the same values */
    cl_long distinct = 1;
    for (int d = 0; d < ixm.ndim; d++) {
        if (ixm.strides[d] == 0) ixm.shape[d] = 1;
        distinct *= ixm.shape[d];
    }
    ocl_kview_merge(&ixm, 1);
    cl_long csize = size, nn = distinct;
    cl_mem mi = ocl_mem_of(index->buf), mf = ocl_mem_of(flag);
    ocl_arg cargs[] = {OCL_ARG(ixm), OCL_ARG(mi), OCL_ARG(csize), OCL_ARG(nn), OCL_ARG(mf)};
    if ((st = ocl_launch(c, "scatter_add", OK_INDEX_CHECK, cargs, 5, ocl_grid(c, distinct), 0))) {
        ocl_free(c, flag);
        return st;
    }
    if ((st = flag_read(c, flag, "scatter_add", size, axis))) return st;

    if (dst->dtype == FF_F32 || dst->dtype == FF_F64) {
        st = scatter_add_rows(c, dst, index, src, axis);
        if (st != FF_ERR_UNSUPPORTED) return st;
    }
    ocl_kview d0 = ocl_kview_of(dst), s = ocl_kview_of(src), lines = ix;
    cl_long step = dst->strides[axis];
    d0.strides[axis] = 0;
    lines.shape[axis] = 1;
    cl_long nlines = n / index->shape[axis];
    cl_int ax = axis;
    cl_mem md = ocl_mem_of(dst->buf), ms = ocl_mem_of(src->buf);
    ocl_arg args[] = {OCL_ARG(d0), OCL_ARG(md), OCL_ARG(step), OCL_ARG(ix), OCL_ARG(mi),
                      OCL_ARG(s), OCL_ARG(ms), OCL_ARG(lines), OCL_ARG(ax), OCL_ARG(nlines)};
    return ocl_launch(c, "scatter_add", OK_SCATTER_ADD, args, 10, ocl_grid(c, nlines), 0);
}

ff_status ocl_random(void *ctx, const ff_view *dst, ff_random_dist dist, uint64_t seed, uint64_t counter_base,
                     double p0, double p1)
{
    ocl_ctx *c = ctx;
    ff_status st = ocl_check_view(c, "random", "dst", dst);
    if (st) return st;
    if ((dist != FF_RANDOM_UNIFORM && dist != FF_RANDOM_NORMAL) || !ffb_is_float(dst->dtype))
        return ocl_error(c, FF_ERR_UNSUPPORTED, "opencl random: %s fill is not supported on %s",
                         dist == FF_RANDOM_UNIFORM ? "uniform" : dist == FF_RANDOM_NORMAL ? "normal" : "this",
                         ffb_dtype_name(dst->dtype));
    int64_t n = ff_view_numel(dst);
    if (n == 0) return FF_OK;
    ocl_kview d = ocl_kview_of(dst);
    ocl_kview_merge(&d, 1); /* merging keeps the row-major order, so element n keeps counter n */
    cl_mem md = ocl_mem_of(dst->buf);
    cl_int normal = dist == FF_RANDOM_NORMAL;
    cl_ulong s = seed, cb = counter_base;
    cl_long nn = n;
    ocl_arg args[] = {OCL_ARG(d), OCL_ARG(md), OCL_ARG(normal), OCL_ARG(s), OCL_ARG(cb), OCL_ARG(p0), OCL_ARG(p1),
                      OCL_ARG(nn)};
    return ocl_launch(c, "random", OK_RANDOM, args, 8, ocl_grid(c, n), 0);
}
