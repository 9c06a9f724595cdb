/*
 * fill, copy, unary, binary and where: checks, dim merging, then one kernel launch.
 * Dense f32 unary and arithmetic binary ops take the f32 kernels (no per-element dtype
 * switches or index arithmetic); everything else the general strided kernels.
 */
#include "ocl_impl.h"

ff_status ocl_fill(void *ctx, const ff_view *dst, ff_scalar value)
{
    ocl_ctx *c = ctx;
    ff_status st = ocl_check_storage_view(c, "fill", "dst", dst);
    int64_t n = st ? 0 : ff_view_numel(dst);
    if (st || n == 0) return st;
    ocl_kview d = ocl_kview_of(dst);
    ocl_kview_merge(&d, 1);
    cl_mem m = ocl_mem_of(dst->buf);
    cl_long i = value.i, nn = n;
    ocl_arg args[] = {OCL_ARG(d), OCL_ARG(m), OCL_ARG(value.f), OCL_ARG(i), OCL_ARG(nn)};
    return ocl_launch(c, "fill", OK_FILL, args, 5, ocl_grid(c, n), 0);
}

ff_status ocl_copy(void *ctx, const ff_view *dst, const ff_view *src)
{
    ocl_ctx *c = ctx;
    ff_status st;
    if ((st = ocl_check_storage_view(c, "copy", "dst", dst)) || (st = ocl_check_storage_view(c, "copy", "src", src)))
        return st;
    if (!ocl_same_shape(dst, src)) return ocl_shape_error(c, "copy", dst, src);
    int64_t n = ff_view_numel(dst);
    if (n == 0) return FF_OK;
    ocl_kview v[2] = {ocl_kview_of(dst), ocl_kview_of(src)};
    ocl_kview_merge(v, 2);
    cl_mem md = ocl_mem_of(dst->buf), ms = ocl_mem_of(src->buf);
    if (dst->dtype == src->dtype && md != ms && v[0].ndim == 1 && v[0].strides[0] == 1 && v[1].strides[0] == 1) {
        /* one dense run between two buffers: the runtime's copy (PoCL: 64 MiB in 3.2
         * against 11.4 ms through the element kernel) */
        size_t es = ff_dtype_size(dst->dtype);
        cl_int err = clEnqueueCopyBuffer(c->queue, ms, md, (size_t)v[1].offset * es, (size_t)v[0].offset * es,
                                         (size_t)n * es, 0, NULL, NULL);
        return err == CL_SUCCESS ? FF_OK : ocl_cl_fail(c, "copy", "clEnqueueCopyBuffer", err);
    }
    cl_long nn = n;
    ocl_arg args[] = {OCL_ARG(v[0]), OCL_ARG(md), OCL_ARG(v[1]), OCL_ARG(ms), OCL_ARG(nn)};
    return ocl_launch(c, "copy", OK_COPY, args, 5, ocl_grid(c, n), 0);
}

/* A merged view that is one dense run (or a single element). */
static int dense(const ocl_kview *v) { return v->ndim == 0 || (v->ndim == 1 && v->strides[0] == 1); }

ff_status ocl_unary(void *ctx, ff_unary_op op, const ff_view *dst, const ff_view *src)
{
    ocl_ctx *c = ctx;
    ff_status st;
    if ((st = ocl_check_storage_view(c, "unary", "dst", dst)) || (st = ocl_check_storage_view(c, "unary", "src", src)))
        return st;
    ff_dtype rule = ocl_rule_dtype(src->dtype);
    if (!ffb_unary_supported(op, rule))
        return ocl_error(c, FF_ERR_UNSUPPORTED, "opencl unary: %s is not supported on %s",
                         ffb_unary_name(op) ? ffb_unary_name(op) : "an unknown op", ffb_dtype_name(src->dtype));
    ff_dtype want = ffb_unary_writes_bool(op) ? FF_BOOL : src->dtype;
    if (dst->dtype != want)
        return ocl_error(c, FF_ERR_INVALID, "opencl unary %s: dst is %s, expected %s", ffb_unary_name(op),
                         ffb_dtype_name(dst->dtype), ffb_dtype_name(want));
    if (!ocl_same_shape(dst, src)) return ocl_shape_error(c, "unary", dst, src);
    int64_t n = ff_view_numel(dst);
    if (n == 0) return FF_OK;
    ocl_kview v[2] = {ocl_kview_of(dst), ocl_kview_of(src)};
    ocl_kview_merge(v, 2);
    cl_int cop = ffb_unary_effective(op, rule);
    cl_mem md = ocl_mem_of(dst->buf), ms = ocl_mem_of(src->buf);
    cl_long nn = n;
    if (src->dtype == FF_F32 && dst->dtype == FF_F32 && dense(&v[0]) && dense(&v[1])) {
        ocl_arg args[] = {OCL_ARG(cop), OCL_ARG(md), OCL_ARG(v[0].offset), OCL_ARG(ms), OCL_ARG(v[1].offset), OCL_ARG(nn)};
        return ocl_launch(c, "unary", OK_UNARY_F32, args, 6, ocl_grid(c, n), 0);
    }
    ocl_arg args[] = {OCL_ARG(cop), OCL_ARG(v[0]), OCL_ARG(md), OCL_ARG(v[1]), OCL_ARG(ms), OCL_ARG(nn)};
    return ocl_launch(c, "unary", OK_UNARY, args, 6, ocl_grid(c, n), 0);
}

/* Stride of a merged operand along the dense dst run: 1 (dense), 0 (one element
 * broadcast), or -1 (neither: take the general kernel). */
static cl_long run_stride(const ocl_kview *v)
{
    if (v->ndim == 0) return 0;
    return v->ndim == 1 && (v->strides[0] == 0 || v->strides[0] == 1) ? v->strides[0] : -1;
}

ff_status ocl_binary(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    ocl_ctx *c = ctx;
    ff_status st;
    if ((st = ocl_check_storage_view(c, "binary", "dst", dst)) || (st = ocl_check_storage_view(c, "binary", "a", a)) ||
        (st = ocl_check_storage_view(c, "binary", "b", b)))
        return st;
    if (a->dtype != b->dtype)
        return ocl_error(c, FF_ERR_INVALID, "opencl binary: a (%s) and b (%s) differ in dtype",
                         ffb_dtype_name(a->dtype), ffb_dtype_name(b->dtype));
    if (!ffb_binary_supported(op, ocl_rule_dtype(a->dtype)))
        return ocl_error(c, FF_ERR_UNSUPPORTED, "opencl binary: %s is not supported on %s",
                         ffb_binary_name(op) ? ffb_binary_name(op) : "an unknown op", ffb_dtype_name(a->dtype));
    ff_dtype want = ffb_binary_writes_bool(op) ? FF_BOOL : a->dtype;
    if (dst->dtype != want)
        return ocl_error(c, FF_ERR_INVALID, "opencl binary %s: dst is %s, expected %s", ffb_binary_name(op),
                         ffb_dtype_name(dst->dtype), ffb_dtype_name(want));
    if (!ocl_same_shape(dst, a)) return ocl_shape_error(c, "binary", dst, a);
    if (!ocl_same_shape(dst, b)) return ocl_shape_error(c, "binary", dst, b);
    int64_t n = ff_view_numel(dst);
    if (n == 0) return FF_OK;
    ocl_kview v[3] = {ocl_kview_of(dst), ocl_kview_of(a), ocl_kview_of(b)};
    ocl_kview_merge(v, 3);
    cl_int cop = op;
    cl_mem md = ocl_mem_of(dst->buf), ma = ocl_mem_of(a->buf), mb = ocl_mem_of(b->buf);
    cl_long nn = n, sa = run_stride(&v[1]), sb = run_stride(&v[2]);
    if (a->dtype == FF_F32 && dst->dtype == FF_F32 && dense(&v[0]) && sa >= 0 && sb >= 0) {
        ocl_arg args[] = {OCL_ARG(cop), OCL_ARG(md), OCL_ARG(v[0].offset), OCL_ARG(ma), OCL_ARG(v[1].offset),
                          OCL_ARG(sa), OCL_ARG(mb), OCL_ARG(v[2].offset), OCL_ARG(sb), OCL_ARG(nn)};
        return ocl_launch(c, "binary", OK_BINARY_F32, args, 10, ocl_grid(c, n), 0);
    }
    ocl_arg args[] = {OCL_ARG(cop), OCL_ARG(v[0]), OCL_ARG(md), OCL_ARG(v[1]), OCL_ARG(ma),
                      OCL_ARG(v[2]), OCL_ARG(mb), OCL_ARG(nn)};
    return ocl_launch(c, "binary", OK_BINARY, args, 8, ocl_grid(c, n), 0);
}

ff_status ocl_where(void *ctx, const ff_view *dst, const ff_view *cond, const ff_view *a, const ff_view *b)
{
    ocl_ctx *c = ctx;
    ff_status st;
    if ((st = ocl_check_storage_view(c, "where", "dst", dst)) || (st = ocl_check_view(c, "where", "cond", cond)) ||
        (st = ocl_check_storage_view(c, "where", "a", a)) || (st = ocl_check_storage_view(c, "where", "b", b)))
        return st;
    if (cond->dtype != FF_BOOL)
        return ocl_error(c, FF_ERR_INVALID, "opencl where: cond is %s, expected bool", ffb_dtype_name(cond->dtype));
    if (a->dtype != dst->dtype || b->dtype != dst->dtype)
        return ocl_error(c, FF_ERR_INVALID, "opencl where: dst, a and b must share a dtype (%s, %s, %s)",
                         ffb_dtype_name(dst->dtype), ffb_dtype_name(a->dtype), ffb_dtype_name(b->dtype));
    if (!ocl_same_shape(dst, cond)) return ocl_shape_error(c, "where", dst, cond);
    if (!ocl_same_shape(dst, a)) return ocl_shape_error(c, "where", dst, a);
    if (!ocl_same_shape(dst, b)) return ocl_shape_error(c, "where", dst, b);
    int64_t n = ff_view_numel(dst);
    if (n == 0) return FF_OK;
    ocl_kview v[4] = {ocl_kview_of(dst), ocl_kview_of(cond), ocl_kview_of(a), ocl_kview_of(b)};
    ocl_kview_merge(v, 4);
    cl_mem md = ocl_mem_of(dst->buf), mc = ocl_mem_of(cond->buf), ma = ocl_mem_of(a->buf), mb = ocl_mem_of(b->buf);
    cl_long nn = n;
    ocl_arg args[] = {OCL_ARG(v[0]), OCL_ARG(md), OCL_ARG(v[1]), OCL_ARG(mc), OCL_ARG(v[2]),
                      OCL_ARG(ma), OCL_ARG(v[3]), OCL_ARG(mb), OCL_ARG(nn)};
    return ocl_launch(c, "where", OK_WHERE, args, 9, ocl_grid(c, n), 0);
}
