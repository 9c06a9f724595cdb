/*
 * The attention entry (kernels/attention.cl): the forward in one launch, the backward in
 * two (gq and delta over query tiles, then gk and gv over key tiles). Groups of ATT_ROWS
 * work-items, one per row; the other side's tiles go through local memory in doubles,
 * as many rows a tile as the device's local memory holds (up to ATT_TMAX).
 */
#include "ocl_impl.h"
#include "ff_backend_attention.h"

#define ATT_ROWS 32 /* work-items (rows) per group */
#define ATT_TMAX 64 /* kernels/attention.cl: the most rows of a local tile */

/* Rows of a local tile of `per_row` doubles a row that fit the device's local memory. */
static long att_tile_rows(ocl_ctx *c, long per_row)
{
    cl_ulong local = 0;
    if (clGetDeviceInfo(c->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, NULL) != CL_SUCCESS) local = 16384;
    long rows = (long)(local / 2 / (sizeof(double) * (size_t)per_row)); /* half: the runtime keeps some */
    return rows > ATT_TMAX ? ATT_TMAX : rows < 1 ? 1 : rows;
}

/* Groups for B * H * ceil(t / rows) tiles, as work-items. */
static size_t att_items(const ff_view *q, int64_t t, size_t rows)
{
    int64_t tiles = (t + (int64_t)rows - 1) / (int64_t)rows;
    return (size_t)(q->shape[0] * q->shape[1] * tiles) * rows;
}

static ff_status att_forward(ocl_ctx *c, const ff_view *dst, const ff_view *src, const ff_attention_params *p,
                             size_t rows)
{
    const ff_view *q = &src[0], *k = &src[1], *v = &src[2], *mv = p->mask ? &src[3] : q;
    ocl_kview kq = ocl_kview_of(q), kk = ocl_kview_of(k), kvv = ocl_kview_of(v), km = ocl_kview_of(mv);
    ocl_kview ko = ocl_kview_of(&dst[0]), kl = ocl_kview_of(&dst[1]);
    cl_mem mq = ocl_mem_of(q->buf), mk = ocl_mem_of(k->buf), mvb = ocl_mem_of(v->buf), mm = ocl_mem_of(mv->buf);
    cl_mem mo = ocl_mem_of(dst[0].buf), ml = ocl_mem_of(dst[1].buf);
    cl_int kind = p->mask, causal = p->causal != 0;
    cl_double scale = p->scale, drop = p->dropout_p;
    cl_ulong seed = p->seed;
    cl_long lt = att_tile_rows(c, k->shape[3] + v->shape[3]);
    size_t kbytes = (size_t)lt * (size_t)k->shape[3] * sizeof(double);
    size_t vbytes = (size_t)lt * (size_t)v->shape[3] * sizeof(double);
    ocl_arg args[] = {OCL_ARG(kq), OCL_ARG(mq), OCL_ARG(kk), OCL_ARG(mk), OCL_ARG(kvv), OCL_ARG(mvb), OCL_ARG(km),
                      OCL_ARG(mm), OCL_ARG(kind), OCL_ARG(causal), OCL_ARG(scale), OCL_ARG(drop),
                      OCL_ARG(seed), OCL_ARG(ko), OCL_ARG(mo),
                      OCL_ARG(kl), OCL_ARG(ml), OCL_ARG(lt), {kbytes, NULL}, {vbytes, NULL}};
    return ocl_launch(c, "attention", OK_ATT_FWD, args, 20, att_items(q, q->shape[2], rows), rows);
}

static ff_status att_backward(ocl_ctx *c, const ff_view *dst, const ff_view *src, const ff_attention_params *p,
                              size_t rows)
{
    const ff_view *go = &src[0], *q = &src[1], *k = &src[2], *v = &src[3], *o = &src[4], *l = &src[5];
    const ff_view *mv = p->mask ? &src[6] : q;
    int64_t D = q->shape[3], Dv = v->shape[3], nrows = q->shape[0] * q->shape[1] * q->shape[2];
    void *delta = ocl_alloc(c, (size_t)(nrows > 0 ? nrows : 1) * sizeof(double));
    if (!delta) return FF_ERR_OOM;
    ocl_kview kgo = ocl_kview_of(go), kq = ocl_kview_of(q), kk = ocl_kview_of(k), kvv = ocl_kview_of(v);
    ocl_kview ko = ocl_kview_of(o), kl = ocl_kview_of(l), km = ocl_kview_of(mv);
    ocl_kview kgq = ocl_kview_of(&dst[0]), kgk = ocl_kview_of(&dst[1]), kgv = ocl_kview_of(&dst[2]);
    cl_mem mgo = ocl_mem_of(go->buf), mq = ocl_mem_of(q->buf), mk = ocl_mem_of(k->buf), mvb = ocl_mem_of(v->buf);
    cl_mem mo = ocl_mem_of(o->buf), ml = ocl_mem_of(l->buf), mm = ocl_mem_of(mv->buf), md = ocl_mem_of(delta);
    cl_mem mgq = ocl_mem_of(dst[0].buf), mgk = ocl_mem_of(dst[1].buf), mgv = ocl_mem_of(dst[2].buf);
    cl_int kind = p->mask, causal = p->causal != 0;
    cl_double scale = p->scale, drop = p->dropout_p;
    cl_ulong seed = p->seed;

    cl_long lt = att_tile_rows(c, D + Dv);
    ocl_arg qargs[] = {OCL_ARG(kgo), OCL_ARG(mgo), OCL_ARG(kq), OCL_ARG(mq), OCL_ARG(kk), OCL_ARG(mk),
                       OCL_ARG(kvv), OCL_ARG(mvb), OCL_ARG(ko), OCL_ARG(mo), OCL_ARG(kl), OCL_ARG(ml),
                       OCL_ARG(km), OCL_ARG(mm), OCL_ARG(kind), OCL_ARG(causal), OCL_ARG(scale), OCL_ARG(drop),
                       OCL_ARG(seed), OCL_ARG(kgq),
                       OCL_ARG(mgq), OCL_ARG(md), OCL_ARG(lt),
                       {(size_t)(lt * D) * sizeof(double), NULL}, {(size_t)(lt * Dv) * sizeof(double), NULL}};
    ff_status st = ocl_launch(c, "attention", OK_ATT_DQ, qargs, 25, att_items(q, q->shape[2], rows), rows);

    cl_long lt2 = att_tile_rows(c, D + Dv + 2);
    ocl_arg kargs[] = {OCL_ARG(kgo), OCL_ARG(mgo), OCL_ARG(kq), OCL_ARG(mq), OCL_ARG(kk), OCL_ARG(mk),
                       OCL_ARG(kvv), OCL_ARG(mvb), OCL_ARG(kl), OCL_ARG(ml), OCL_ARG(km), OCL_ARG(mm),
                       OCL_ARG(kind), OCL_ARG(causal), OCL_ARG(scale), OCL_ARG(drop),
                       OCL_ARG(seed), OCL_ARG(kgk), OCL_ARG(mgk), OCL_ARG(kgv),
                       OCL_ARG(mgv), OCL_ARG(md), OCL_ARG(lt2),
                       {(size_t)(lt2 * D) * sizeof(double), NULL}, {(size_t)(lt2 * Dv) * sizeof(double), NULL},
                       {(size_t)(2 * lt2) * sizeof(double), NULL}};
    if (!st) st = ocl_launch(c, "attention", OK_ATT_DKV, kargs, 26, att_items(k, k->shape[2], rows), rows);
    ocl_free(c, delta); /* reused only by later commands in the in-order queue */
    return st;
}

ff_status ocl_attention(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src,
                        const ff_attention_params *p)
{
    ocl_ctx *c = ctx;
    ff_status st = ffb_attention_check(c->host, "opencl", op, dst, n_dst, src, n_src, p, 1);
    if (st) return st;
    size_t rows = c->max_wg < ATT_ROWS ? c->max_wg : ATT_ROWS;
    return op == FF_ATTENTION_FORWARD ? att_forward(c, dst, src, p, rows) : att_backward(c, dst, src, p, rows);
}
