/*
 * The layer_norm entry (kernels/layer_norm.cl): the forward in one launch (a work-group
 * per row), the backward in three (gx a work-group per row; gw and gb as per-block
 * column sums, then the blocks added in order: deterministic, no atomics).
 */
#include "ocl_impl.h"
#include "ff_backend_layer_norm.h"

#define LN_WG 64 /* the most lanes of a row's work-group (PoCL: 64 ran [8192, 768] faster than 256) */
#define LN_RB 32  /* kernels/layer_norm.cl: rows per block of the column sums */

/* Lanes per row: a power of two covering D up to LN_WG, at least 16 (fewer leave a row's
 * group mostly barrier overhead), within the device's work-group limit. */
static size_t ln_lanes(const ocl_ctx *c, int64_t d)
{
    size_t l = 16;
    while (l < LN_WG && (int64_t)l < d) l *= 2;
    while (l > c->max_wg && l > 1) l /= 2;
    return l;
}

static ff_status ln_forward(ocl_ctx *c, const ff_view *dst, const ff_view *src, double eps)
{
    ocl_kview kx = ocl_kview_of(&src[0]), kw = ocl_kview_of(&src[1]), kb = ocl_kview_of(&src[2]);
    ocl_kview ky = ocl_kview_of(&dst[0]), km = ocl_kview_of(&dst[1]), ki = ocl_kview_of(&dst[2]);
    cl_mem mx = ocl_mem_of(src[0].buf), mw = ocl_mem_of(src[1].buf), mb = ocl_mem_of(src[2].buf);
    cl_mem my = ocl_mem_of(dst[0].buf), mm = ocl_mem_of(dst[1].buf), mi = ocl_mem_of(dst[2].buf);
    cl_double e = eps;
    size_t L = ln_lanes(c, src[0].shape[1]);
    ocl_arg args[] = {OCL_ARG(kx), OCL_ARG(mx), OCL_ARG(kw), OCL_ARG(mw), OCL_ARG(kb), OCL_ARG(mb), OCL_ARG(ky),
                      OCL_ARG(my), OCL_ARG(km), OCL_ARG(mm), OCL_ARG(ki), OCL_ARG(mi), OCL_ARG(e),
                      {L * sizeof(double), NULL}};
    return ocl_launch(c, "layer_norm", OK_LN_FWD, args, 14, (size_t)src[0].shape[0] * L, L);
}

static ff_status ln_backward(ocl_ctx *c, const ff_view *dst, const ff_view *src)
{
    int64_t r = src[1].shape[0], d = src[1].shape[1], nblk = (r + LN_RB - 1) / LN_RB;
    ocl_kview kg = ocl_kview_of(&src[0]), kx = ocl_kview_of(&src[1]), km = ocl_kview_of(&src[2]);
    ocl_kview ki = ocl_kview_of(&src[3]), kw = ocl_kview_of(&src[4]);
    ocl_kview kgx = ocl_kview_of(&dst[0]), kgw = ocl_kview_of(&dst[1]), kgb = ocl_kview_of(&dst[2]);
    cl_mem mg = ocl_mem_of(src[0].buf), mx = ocl_mem_of(src[1].buf), mm = ocl_mem_of(src[2].buf);
    cl_mem mi = ocl_mem_of(src[3].buf), mw = ocl_mem_of(src[4].buf);
    cl_mem mgx = ocl_mem_of(dst[0].buf), mgw = ocl_mem_of(dst[1].buf), mgb = ocl_mem_of(dst[2].buf);
    size_t L = ln_lanes(c, d);
    ocl_arg rargs[] = {OCL_ARG(kg), OCL_ARG(mg), OCL_ARG(kx), OCL_ARG(mx), OCL_ARG(km), OCL_ARG(mm), OCL_ARG(ki),
                       OCL_ARG(mi), OCL_ARG(kw), OCL_ARG(mw), OCL_ARG(kgx), OCL_ARG(mgx), {L * sizeof(double), NULL}};
    ff_status st = ocl_launch(c, "layer_norm", OK_LN_BWD, rargs, 13, (size_t)r * L, L);
    if (st) return st;

    /* the blocks' sums of g xhat, then of g: 2 nblk D doubles (one, for R = 0) */
    void *part = ocl_alloc(c, (size_t)(nblk > 0 ? 2 * nblk * d : 1) * sizeof(double));
    if (!part) return ocl_error(c, FF_ERR_OOM, "opencl layer_norm: no device memory for the %lld x %lld column sums",
                                (long long)nblk, (long long)d);
    cl_mem mp = ocl_mem_of(part);
    cl_long cn = nblk, cd = d;
    ocl_arg cargs[] = {OCL_ARG(kg), OCL_ARG(mg), OCL_ARG(kx), OCL_ARG(mx), OCL_ARG(km),
                       OCL_ARG(mm), OCL_ARG(ki), OCL_ARG(mi), OCL_ARG(mp), OCL_ARG(cn)};
    st = ocl_launch(c, "layer_norm", OK_LN_COLS, cargs, 10, ocl_grid(c, nblk * d), 0);
    ocl_arg sargs[] = {OCL_ARG(mp), OCL_ARG(cn), OCL_ARG(cd), OCL_ARG(kgw), OCL_ARG(mgw), OCL_ARG(kgb), OCL_ARG(mgb)};
    if (!st) st = ocl_launch(c, "layer_norm", OK_LN_COLS_SUM, sargs, 7, ocl_grid(c, d), 0);
    ocl_free(c, part); /* reused only by later commands in the in-order queue */
    return st;
}

ff_status ocl_layer_norm(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src, double eps)
{
    ocl_ctx *c = ctx;
    ff_status st = ffb_layer_norm_check(c->host, "opencl", op, dst, n_dst, src, n_src);
    if (st) return st;
    return op == 0 ? ln_forward(c, dst, src, eps) : ln_backward(c, dst, src);
}
