/*
 * conv2d forward and both backward passes through oneDNN (the optional vtable entries).
 *
 * Why oneDNN and not an own im2col on our GEMM: im2col copies the input KH * KW times
 * (9x for 3x3) before a GEMM whose K = C * KH * KW is short, and the backward needs
 * col2im, another scattered pass; oneDNN's direct convolution kernels work on blocked
 * layouts (nChw16c) in cache-sized tiles without the copy, which is what PyTorch 1.13
 * runs on this CPU too. Measured (ff-bench conv2d_64x32x28x28_k3, 1 thread): see
 * benchmarks/README.md.
 *
 * Each call describes the problem with format_tag_any, lets oneDNN pick its layouts,
 * and reorders the user's strided views in and out where they differ (oneDNN's own
 * primitive cache makes the repeated creation of the same primitive cheap). A view goes
 * to oneDNN as it is only when its strides describe it (dnnl_strides); any other view
 * (a step in an outer dim, a broadcast) is copied to a dense scratch first, and an
 * output computed there is copied back (conv_operand). Rows of the
 * input that no window reaches (when (H + 2p - K) is not a multiple of the stride) are
 * cut from the view rather than described as negative right padding; for the input
 * gradient they are zero. Where no window reaches any row (all in the left padding:
 * windows_read_no_input) the cut would leave zero rows, so the entries write the zeros
 * themselves. f32 and bf16: oneDNN has no f64 convolution (the core
 * composes for f64) and 2.6 has no f16 one on CPU (the core's f32 detour). Without oneDNN
 * (FF_BLAS_HAVE_DNNL unset) supports() declines and the core composes.
 *
 * bf16 (conv_pass_half): the two inputs go to oneDNN as bf16, which runs them on AMX or
 * AVX512-BF16 with f32 accumulation into a dense f32 output (the weight gradient's
 * per-thread parts summed there too), rounded once into the user's bf16 view. Taken only
 * where oneDNN's kernel for the pass runs on bf16 hardware (its name says bf16 or amx;
 * under ONEDNN_MAX_CPU_ISA=AVX2 it is a reference loop, or an emulating gemm below
 * AVX512-BF16) and no input holds a subnormal (read as zero by the bf16 instructions);
 * otherwise the inputs are widened to f32 and the f32 pass runs: the detour's values.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "blas_impl.h"

int blas_conv2d_supported(int which, ff_dtype t)
{
#ifdef FF_BLAS_HAVE_DNNL
    return ((which >= 0 && which <= 2) || which == FF_CONV2D_DILATION_GROUPS) && (t == FF_F32 || t == FF_BF16);
#else
    (void)which, (void)t;
    return 0;
#endif
}

static ff_status check(void *ctx, const char *entry, const ff_view *a, const ff_view *b, const ff_view *c,
                       const ff_conv2d_params *p)
{
    ff_status st;
    if ((st = blas_check_storage_view(ctx, entry, "output", a)) || (st = blas_check_storage_view(ctx, entry, "a", b)) ||
        (st = blas_check_storage_view(ctx, entry, "b", c))) /* the dtype: below */
        return st;
    if (a->ndim != 4 || b->ndim != 4 || c->ndim != 4)
        return blas_error(ctx, FF_ERR_INVALID, "cpu_blas %s: views must be rank 4 (got %d, %d, %d)", entry,
                          (int)a->ndim, (int)b->ndim, (int)c->ndim);
    if (!blas_conv2d_supported(0, a->dtype) || b->dtype != a->dtype || c->dtype != a->dtype)
        return blas_error(ctx, FF_ERR_UNSUPPORTED, "cpu_blas %s: not supported on %s", entry, blas_dtype_name(a->dtype));
    if (!p || p->stride[0] < 1 || p->stride[1] < 1 || p->padding[0] < 0 || p->padding[1] < 0 || p->dilation[0] < 1 ||
        p->dilation[1] < 1 || p->groups < 1)
        return blas_error(ctx, FF_ERR_INVALID, "cpu_blas %s: stride, dilation and groups must be >= 1 and padding >= 0",
                          entry);
    return FF_OK;
}

#ifdef FF_BLAS_HAVE_DNNL
#include <dnnl.h>

static dnnl_data_type_t dt_of(const ff_view *v) { return v->dtype == FF_BF16 ? dnnl_bf16 : dnnl_f32; }

/* The pieces of one convolution problem: x [N, C, H, W] (H, W possibly cut), w, y. */
typedef struct conv_problem {
    ff_view x, w, y; /* x and y as the user's views; x cut to the rows windows reach */
    dnnl_dims_t strides, pad_l, pad_r, dilates; /* dilates: oneDNN's, 0 for none */
    int64_t groups;  /* > 1: w [O, C / G, KH, KW] goes to oneDNN as [G, O / G, C / G, KH, KW] */
} conv_problem;

/* x, w, y views -> the problem: y's size follows from x, w and p (the core checked). */
static void problem(conv_problem *q, const ff_view *x, const ff_view *w, const ff_view *y, const ff_conv2d_params *p)
{
    q->x = *x, q->w = *w, q->y = *y, q->groups = p->groups;
    for (int d = 0; d < 2; d++) {
        int64_t in = x->shape[2 + d], out = y->shape[2 + d], s = p->stride[d];
        int64_t k = p->dilation[d] * (w->shape[2 + d] - 1) + 1; /* the dilated kernel's reach */
        q->dilates[d] = p->dilation[d] - 1;
        int64_t used = (out - 1) * s + k - p->padding[d]; /* input rows [0, used) are read */
        if (used < in) q->x.shape[2 + d] = used;             /* the rest: never read */
        q->strides[d] = s;
        q->pad_l[d] = p->padding[d];
        q->pad_r[d] = (out - 1) * s + k - (used < in ? used : in) - p->padding[d];
    }
}

/* oneDNN's strides for the view v, or 0 when no strides of oneDNN's describe it. A
 * oneDNN layout nests: its dims, ordered by stride, each start at or past the extent of
 * the next inner one (stride * size). A view stepped in an outer dim need not: in
 * x[:, :, 1:5:3] of 5 rows a channel's 2 rows span 6 rows, past the next channel's
 * start. oneDNN refuses such strides (status 2) or, when size-1 dims with arbitrary
 * strides sit among them, takes them and reads wrong elements; so a size-1 dim, which
 * is never stepped over, gets the outermost extent, and a view that does not nest is
 * reported here and copied by the caller. */
static int dnnl_strides(const ff_view *v, dnnl_dims_t strides)
{
    int order[4], n = 0;
    for (int d = 0; d < 4; d++)
        if (v->shape[d] != 1) order[n++] = d;
    for (int i = 1; i < n; i++) /* innermost (smallest stride) first: insertion sort */
        for (int j = i; j > 0 && v->strides[order[j]] < v->strides[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
    int64_t extent = 1; /* of the dims nested so far: 1, so a stride of 0 never nests */
    for (int i = 0; i < n; i++) {
        int d = order[i];
        if (v->strides[d] < extent) return 0;
        strides[d] = v->strides[d];
        extent = v->strides[d] * v->shape[d];
    }
    for (int d = 0; d < 4; d++)
        if (v->shape[d] == 1) strides[d] = extent;
    return 1;
}

/* groups > 1 (weights only): dim 0 split into [groups, O / groups], oneDNN's grouped
 * weights. */
static dnnl_status_t md_of(dnnl_memory_desc_t *md, const ff_view *v, int64_t groups)
{
    dnnl_dims_t dims, strides;
    if (!dnnl_strides(v, strides)) return dnnl_invalid_arguments; /* the entries copied such views */
    if (groups > 1) { /* group g's rows start g * (O / G) rows in */
        dnnl_dims_t s5;
        dims[0] = groups, dims[1] = v->shape[0] / groups, s5[0] = strides[0] * dims[1], s5[1] = strides[0];
        for (int d = 1; d < 4; d++) dims[d + 1] = v->shape[d], s5[d + 1] = strides[d];
        return dnnl_memory_desc_init_by_strides(md, 5, dims, dt_of(v), s5);
    }
    for (int d = 0; d < 4; d++) dims[d] = v->shape[d];
    return dnnl_memory_desc_init_by_strides(md, 4, dims, dt_of(v), strides);
}

static void md_any(dnnl_memory_desc_t *md, const ff_view *v, int64_t groups, dnnl_data_type_t dt)
{
    dnnl_dims_t dims;
    int nd = groups > 1 ? 5 : 4;
    for (int d = 0; d < 4; d++) dims[d + nd - 4] = v->shape[d];
    if (groups > 1) dims[0] = groups, dims[1] = v->shape[0] / groups;
    dnnl_memory_desc_init_by_tag(md, nd, dims, dt, dnnl_format_tag_any);
}

/* A user view and, if oneDNN wants another layout, a buffer in that layout. The buffer
 * comes from the backend's caching allocator, not from oneDNN (DNNL_MEMORY_ALLOCATE):
 * oneDNN mallocs and frees it on every call, and a fresh 8 MB block is 2048 page faults
 * on first touch (super_resolution's step took 3x PyTorch's faults, 12k against 4k). */
typedef struct conv_arg {
    dnnl_memory_t user, prim; /* prim == user when the layouts agree */
    void *buf;                /* prim's data when it is ours */
} conv_arg;

static dnnl_status_t arg_make(void *ctx, conv_arg *a, const ff_view *v, int64_t groups, const dnnl_memory_desc_t *want,
                              dnnl_engine_t eng)
{
    dnnl_memory_desc_t md;
    a->user = a->prim = NULL, a->buf = NULL;
    void *ptr = (char *)v->buf + (size_t)v->offset * (v->dtype == FF_BF16 ? 2 : 4);
    dnnl_status_t s = md_of(&md, v, groups);
    if (s == dnnl_success) s = dnnl_memory_create(&a->user, &md, eng, ptr);
    if (s == dnnl_success && !dnnl_memory_desc_equal(&md, want)) {
        size_t n = dnnl_memory_desc_get_size(want);
        a->buf = blas_alloc(ctx, n ? n : 1);
        s = a->buf ? dnnl_memory_create(&a->prim, want, eng, a->buf) : dnnl_out_of_memory;
    } else if (s == dnnl_success) {
        a->prim = a->user;
    }
    return s;
}

static void arg_free(void *ctx, conv_arg *a)
{
    if (a->prim && a->prim != a->user) dnnl_memory_destroy(a->prim);
    if (a->user) dnnl_memory_destroy(a->user);
    if (a->buf) blas_free(ctx, a->buf);
}

static dnnl_status_t reorder(dnnl_memory_t from, dnnl_memory_t to, dnnl_engine_t eng, dnnl_stream_t stream)
{
    if (from == to) return dnnl_success;
    const dnnl_memory_desc_t *fmd, *tmd;
    dnnl_memory_get_memory_desc(from, &fmd);
    dnnl_memory_get_memory_desc(to, &tmd);
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_status_t s = dnnl_reorder_primitive_desc_create(&pd, fmd, eng, tmd, eng, NULL);
    if (s == dnnl_success) s = dnnl_primitive_create(&prim, pd);
    if (s == dnnl_success) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
        s = dnnl_primitive_execute(prim, stream, 2, args);
    }
    if (prim) dnnl_primitive_destroy(prim);
    if (pd) dnnl_primitive_desc_destroy(pd);
    return s;
}

/* Creates a pass's primitive descriptor with our attributes: the scratchpad is ours (user
 * mode), from the caching allocator per call, for the same page faults as conv_arg's buffers.
 * The attr lives only for this call (the descriptor keeps its own copy): one made once for
 * the process would never be freed, and LeakSanitizer counts it in every program that convs.
 * Without an attr (it cannot be made) the descriptor takes oneDNN's defaults. */
static dnnl_status_t pd_create(dnnl_primitive_desc_t *pd, const void *cd, dnnl_engine_t eng,
                               const_dnnl_primitive_desc_t hint)
{
    dnnl_primitive_attr_t attr = NULL;
    if (dnnl_primitive_attr_create(&attr) != dnnl_success) attr = NULL;
    else if (dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) != dnnl_success) {
        dnnl_primitive_attr_destroy(attr);
        attr = NULL;
    }
    dnnl_status_t s = dnnl_primitive_desc_create(pd, cd, attr, eng, hint);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return s;
}

/* The forward primitive descriptor (also the hint the backward ones need: for a bf16
 * problem, whose gradient is computed in f32, the hint is the bf16 forward, x and w bf16). */
static dnnl_status_t forward_pd(dnnl_primitive_desc_t *pd, const conv_problem *q, dnnl_engine_t eng)
{
    int half = q->x.dtype == FF_BF16 || q->w.dtype == FF_BF16 || q->y.dtype == FF_BF16;
    dnnl_data_type_t in = half ? dnnl_bf16 : dnnl_f32;
    dnnl_memory_desc_t x, w, y;
    md_any(&x, &q->x, 1, in), md_any(&w, &q->w, q->groups, in), md_any(&y, &q->y, 1, dt_of(&q->y));
    dnnl_convolution_desc_t cd;
    dnnl_status_t s = dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_training, dnnl_convolution_direct, &x,
                                                                 &w, NULL, &y, q->strides, q->dilates, q->pad_l, q->pad_r);
    return s == dnnl_success ? pd_create(pd, &cd, eng, NULL) : s;
}

/* The primitive descriptor of pass `which` (as run's) of problem q. */
static dnnl_status_t pass_pd(dnnl_primitive_desc_t *pd, int which, const conv_problem *q, dnnl_engine_t eng)
{
    dnnl_primitive_desc_t fpd = NULL;
    dnnl_status_t s = forward_pd(&fpd, q, eng);
    if (s != dnnl_success || which == 0) {
        *pd = fpd;
        return s;
    }
    dnnl_memory_desc_t x, w, y;
    md_any(&x, &q->x, 1, dt_of(&q->x)), md_any(&w, &q->w, q->groups, dt_of(&q->w)), md_any(&y, &q->y, 1, dt_of(&q->y));
    dnnl_convolution_desc_t cd;
    s = which == 1 ? dnnl_dilated_convolution_backward_data_desc_init(&cd, dnnl_convolution_direct, &x, &w, &y,
                                                                      q->strides, q->dilates, q->pad_l, q->pad_r)
                   : dnnl_dilated_convolution_backward_weights_desc_init(&cd, dnnl_convolution_direct, &x, &w, NULL, &y,
                                                                         q->strides, q->dilates, q->pad_l, q->pad_r);
    if (s == dnnl_success) s = pd_create(pd, &cd, eng, fpd);
    dnnl_primitive_desc_destroy(fpd);
    return s;
}

/* Runs pass `which` (0 forward, 1 backward data, 2 backward weights) of problem q on
 * this thread: F reads x, w and writes y; I reads y (gy), w and writes x (gx); W reads
 * y (gy), x and writes w (gw). */
static dnnl_status_t run(void *ctx, int which, const conv_problem *q)
{
    dnnl_engine_t eng = NULL;
    dnnl_stream_t stream = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    conv_arg a0 = {0}, a1 = {0}, ao = {0};
    void *scratch = NULL;
    dnnl_memory_t scratch_mem = NULL;
    blas_dnnl_threads(1); /* the pool splits the work (dispatch) */
    dnnl_status_t s = dnnl_engine_create(&eng, dnnl_cpu, 0);
    if (s == dnnl_success) s = dnnl_stream_create(&stream, eng, dnnl_stream_default_flags);
    if (s == dnnl_success) s = pass_pd(&pd, which, q, eng);
    /* the roles of the three tensors in each pass */
    const ff_view *in0[3] = {&q->x, &q->y, &q->y}, *in1[3] = {&q->w, &q->w, &q->x}, *out[3] = {&q->y, &q->x, &q->w};
    static const int arg_in0[3] = {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_DST};
    static const int arg_in1[3] = {DNNL_ARG_WEIGHTS, DNNL_ARG_WEIGHTS, DNNL_ARG_SRC};
    static const int arg_out[3] = {DNNL_ARG_DST, DNNL_ARG_DIFF_SRC, DNNL_ARG_DIFF_WEIGHTS};
    static const dnnl_query_t q_in0[3] = {dnnl_query_src_md, dnnl_query_diff_dst_md, dnnl_query_diff_dst_md};
    static const dnnl_query_t q_in1[3] = {dnnl_query_weights_md, dnnl_query_weights_md, dnnl_query_src_md};
    static const dnnl_query_t q_out[3] = {dnnl_query_dst_md, dnnl_query_diff_src_md, dnnl_query_diff_weights_md};
    if (s == dnnl_success) s = dnnl_primitive_create(&prim, pd);
    /* the weight's role: in1 of F and I, out of W */
    int64_t g1 = which == 2 ? 1 : q->groups, go = which == 2 ? q->groups : 1;
    if (s == dnnl_success) s = arg_make(ctx, &a0, in0[which], 1, dnnl_primitive_desc_query_md(pd, q_in0[which], 0), eng);
    if (s == dnnl_success) s = arg_make(ctx, &a1, in1[which], g1, dnnl_primitive_desc_query_md(pd, q_in1[which], 0), eng);
    if (s == dnnl_success) s = arg_make(ctx, &ao, out[which], go, dnnl_primitive_desc_query_md(pd, q_out[which], 0), eng);
    if (s == dnnl_success) s = reorder(a0.user, a0.prim, eng, stream);
    if (s == dnnl_success) s = reorder(a1.user, a1.prim, eng, stream);
    const dnnl_memory_desc_t *smd = s == dnnl_success ? dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0) : NULL;
    size_t sbytes = smd ? dnnl_memory_desc_get_size(smd) : 0;
    if (sbytes) {
        scratch = blas_alloc(ctx, sbytes);
        s = scratch ? dnnl_memory_create(&scratch_mem, smd, eng, scratch) : dnnl_out_of_memory;
    }
    if (s == dnnl_success) {
        dnnl_exec_arg_t args[4] = {{arg_in0[which], a0.prim}, {arg_in1[which], a1.prim}, {arg_out[which], ao.prim},
                                   {DNNL_ARG_SCRATCHPAD, scratch_mem}};
        s = dnnl_primitive_execute(prim, stream, scratch_mem ? 4 : 3, args);
    }
    if (s == dnnl_success) s = reorder(ao.prim, ao.user, eng, stream);
    if (s == dnnl_success) s = dnnl_stream_wait(stream);
    arg_free(ctx, &a0), arg_free(ctx, &a1), arg_free(ctx, &ao);
    if (scratch_mem) dnnl_memory_destroy(scratch_mem);
    if (scratch) blas_free(ctx, scratch);
    if (prim) dnnl_primitive_destroy(prim);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (stream) dnnl_stream_destroy(stream);
    if (eng) dnnl_engine_destroy(eng);
    return s;
}

/* The pool splits a pass into independent slices, each one oneDNN call on one thread
 * (as for sgemm: no OpenMP threads of oneDNN's own next to our pool): F and I over the
 * batch (gx[n] needs only gy[n]). W over the batch too, each part into its own dense
 * gw buffer, summed after: splitting W over output channels instead made every thread
 * reorder all of x (2 threads: 45 ms against 34 ms for PyTorch on the step). */
typedef struct conv_job {
    void *ctx; /* the backend's: run's buffers come from its caching allocator */
    int which;
    conv_problem q;
    int64_t nparts; /* W: the batch split into this many parts, part k into parts[k] */
    float *parts;
    int failed;     /* the first failing status, or 0 */
} conv_job;

static void slice_view(ff_view *v, int dim, int64_t b, int64_t e)
{
    v->offset += b * v->strides[dim];
    v->shape[dim] = e - b;
}

/* A dense [O, C, KH, KW] view of part k of j->parts. */
static ff_view part_view(const conv_job *j, int64_t k)
{
    ff_view v = j->q.w;
    int64_t n = ff_view_numel(&v);
    v.buf = j->parts, v.offset = k * n;
    v.strides[3] = 1, v.strides[2] = v.shape[3], v.strides[1] = v.shape[2] * v.shape[3];
    v.strides[0] = v.shape[1] * v.strides[1];
    return v;
}

static void conv_slice(void *arg, int64_t b, int64_t e)
{
    conv_job *j = arg;
    dnnl_status_t s = dnnl_success;
    if (j->which == 2 && j->parts) { /* parts [b, e): batch rows [k N / P, (k + 1) N / P) into part k */
        int64_t n = j->q.y.shape[0];
        for (int64_t k = b; k < e && s == dnnl_success; k++) {
            conv_problem q = j->q;
            int64_t r0 = k * n / j->nparts, r1 = (k + 1) * n / j->nparts;
            slice_view(&q.x, 0, r0, r1), slice_view(&q.y, 0, r0, r1);
            q.w = part_view(j, k);
            s = run(j->ctx, 2, &q);
        }
    } else if (j->which == 2) {
        s = run(j->ctx, 2, &j->q);
    } else {
        conv_problem q = j->q;
        slice_view(&q.x, 0, b, e), slice_view(&q.y, 0, b, e);
        s = run(j->ctx, j->which, &q);
    }
    if (s != dnnl_success) __atomic_store_n(&j->failed, (int)s, __ATOMIC_RELAXED);
}

static dnnl_status_t dispatch(void *ctx, int which, const conv_problem *q)
{
    blas_ctx *c = ctx;
    conv_job j = {ctx, which, *q, 1, NULL, 0};
    int64_t n = q->y.shape[0];
    double flop = 2.0 * (double)ff_view_numel(&q->y) * (double)(q->w.shape[1] * q->w.shape[2] * q->w.shape[3]);
    bool par = c->nthreads > 1 && n > 1 && flop > 4e6;
    if (which == 2 && par) { /* one part per thread, summed into gw below */
        j.nparts = c->nthreads < n ? c->nthreads : n;
        j.parts = blas_alloc(ctx, sizeof(float) * (size_t)(j.nparts * ff_view_numel(&q->w)));
        if (!j.parts) return dnnl_out_of_memory;
        blas_parallel_for(ctx, j.nparts, 2, 1, conv_slice, &j);
        for (int64_t k = 1; k < j.nparts && !j.failed; k++) {
            ff_view acc = part_view(&j, 0), pk = part_view(&j, k);
            blas_binary(ctx, FF_BINARY_ADD, &acc, &acc, &pk);
        }
        ff_view sum = part_view(&j, 0);
        if (!j.failed && blas_copy(ctx, &q->w, &sum)) j.failed = dnnl_runtime_error;
        blas_free(ctx, j.parts);
    } else {
        blas_parallel_for(ctx, which == 2 ? 1 : n, par ? 2 : n + 1, 1, conv_slice, &j); /* W: serial, into gw */
    }
    return (dnnl_status_t)j.failed;
}

/* 1 when, in H or in W, even the last window ends at or before input row 0: every
 * window lies wholly in the left padding, no input element is read and every sum of
 * the three passes is empty. problem() would cut x to zero rows there, which oneDNN
 * rejects (status 2), so the entries write the zeros themselves. */
static bool windows_read_no_input(const ff_view *y, const ff_view *w, const ff_conv2d_params *p)
{
    for (int d = 0; d < 2; d++) {
        int64_t k = p->dilation[d] * (w->shape[2 + d] - 1) + 1;
        if ((y->shape[2 + d] - 1) * p->stride[d] + k - p->padding[d] <= 0) return true;
    }
    return false;
}

static ff_status finish(void *ctx, const char *entry, dnnl_status_t s)
{
    if (s == dnnl_success) return FF_OK;
    return blas_error(ctx, s == dnnl_out_of_memory ? FF_ERR_OOM : FF_ERR_BACKEND, "cpu_blas %s: oneDNN failed (status %d)",
                      entry, (int)s);
}

/* An operand as oneDNN sees it: the user's view where dnnl_strides describes it, else
 * a dense copy in scratch (an input copied in here, an output copied back by
 * operand_done). */
typedef struct conv_operand {
    ff_view v;
    float *mem; /* the scratch, or NULL */
} conv_operand;

static ff_status operand_make(void *ctx, conv_operand *o, const ff_view *user, bool input)
{
    dnnl_dims_t strides;
    o->v = *user, o->mem = NULL;
    if (dnnl_strides(user, strides)) return FF_OK;
    o->mem = blas_scratch(ctx, (size_t)ff_view_numel(user) * sizeof(float));
    if (!o->mem) return FF_ERR_OOM;
    o->v = blas_f32_view(o->mem, user); /* dense strides; the dtype stays the user's */
    o->v.dtype = user->dtype;
    return input ? blas_copy(ctx, &o->v, user) : FF_OK;
}

/* Copies an output computed in scratch back to the user's view (when st is FF_OK), and
 * frees the scratch. */
static ff_status operand_done(void *ctx, conv_operand *o, const ff_view *user, ff_status st)
{
    if (o->mem && !st) st = blas_copy(ctx, user, &o->v);
    blas_free(ctx, o->mem);
    return st;
}

/* oneDNN's kernel for pass `which` of the bf16 problem q runs on bf16 hardware. */
static bool half_fast(int which, const conv_problem *q)
{
    dnnl_engine_t eng = NULL;
    dnnl_primitive_desc_t pd = NULL;
    const char *impl = NULL;
    bool fast = dnnl_engine_create(&eng, dnnl_cpu, 0) == dnnl_success && pass_pd(&pd, which, q, eng) == dnnl_success &&
                dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
                (strstr(impl, "bf16") || strstr(impl, "amx"));
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (eng) dnnl_engine_destroy(eng);
    return fast;
}

/* Pass `which` (as run's) on non-empty operands: out = y, gx or gw; a, b = (x, w),
 * (gy, w) or (gy, x), as the entries take them. a and b bf16 (out f32): *slow is set,
 * and nothing computed, when oneDNN has no bf16 hardware kernel for it. */
static ff_status conv_pass(void *ctx, int which, const char *entry, const ff_view *out, const ff_view *a,
                           const ff_view *b, const ff_conv2d_params *p, bool *slow)
{
    conv_operand o = {0}, oa = {0}, ob = {0};
    ff_status st = operand_make(ctx, &o, out, false);
    if (!st) st = operand_make(ctx, &oa, a, true);
    if (!st) st = operand_make(ctx, &ob, b, true);
    conv_problem q;
    if (!st && which == 0) problem(&q, &oa.v, &ob.v, &o.v, p);
    if (!st && which == 1) {
        problem(&q, &o.v, &ob.v, &oa.v, p);
        if (q.x.shape[2] != o.v.shape[2] || q.x.shape[3] != o.v.shape[3]) /* rows no window reads get no gradient */
            st = blas_fill(ctx, &o.v, (ff_scalar){0.0, 0});
    }
    if (!st && which == 2) problem(&q, &ob.v, &o.v, &oa.v, p);
    if (!st && a->dtype == FF_BF16 && !half_fast(which, &q)) *slow = true;
    else if (!st) st = finish(ctx, entry, dispatch(ctx, which, &q));
    blas_free(ctx, ob.mem), blas_free(ctx, oa.mem);
    return operand_done(ctx, &o, out, st);
}

/* 1 if a bf16 of the rank-4 view v is subnormal. A dense view is scanned as one row
 * (rows of a 28-wide image are too short for the vector loop). */
static int view_has_subnormal(const ff_view *v)
{
    const uint16_t *base = (const uint16_t *)v->buf + v->offset;
    int64_t n = ff_view_numel(v);
    if (v->strides[3] == 1 && v->strides[2] == v->shape[3] && v->strides[1] == v->shape[2] * v->shape[3] &&
        v->strides[0] == v->shape[1] * v->strides[1])
        return blas_bf16_has_subnormal(base, 1, n, n, 1);
    for (int64_t i = 0; i < v->shape[0]; i++)
        for (int64_t j = 0; j < v->shape[1]; j++)
            if (blas_bf16_has_subnormal(base + i * v->strides[0] + j * v->strides[1], v->shape[2], v->shape[3],
                                        v->strides[2], v->strides[3]))
                return 1;
    return 0;
}

/* A dense f32 copy of the bf16 view v in scratch (exact), or NULL on OOM. */
static float *widen(void *ctx, const ff_view *v, ff_view *out)
{
    float *mem = blas_scratch(ctx, (size_t)ff_view_numel(v) * sizeof(float));
    if (!mem) return NULL;
    *out = blas_f32_view(mem, v);
    blas_half_convert(ctx, out, v);
    return mem;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* d[j * ds + i] = s[i * rs + j] for a 16 x 16 block, in registers: pairs of rows
 * interleaved, then 4 x 4 blocks within each 128-bit lane, then the lanes themselves. */
__attribute__((target("avx512f"))) static void transpose16(const float *s, int64_t rs, float *d, int64_t ds)
{
    __m512 r[16], t[16];
    for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(s + i * rs);
    for (int i = 0; i < 16; i += 2) t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]), t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44), r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
        r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44), r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 16; i += 8)
        for (int k = 0; k < 4; k++)
            t[i + k] = _mm512_shuffle_f32x4(r[i + k], r[i + k + 4], 0x88),
                  t[i + k + 4] = _mm512_shuffle_f32x4(r[i + k], r[i + k + 4], 0xDD);
    for (int k = 0; k < 8; k++)
        r[k] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0x88), r[k + 8] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0xDD);
    for (int i = 0; i < 16; i++) _mm512_storeu_ps(d + i * ds, r[i]);
}
#define CONV_TRANSPOSE16 1
#endif

/* t[c][p] = s[p * C + c] for p < pn <= 64, c < cn <= 16: whole 16 x 16 blocks in
 * registers where the conversions run on AVX-512 (blas_half_isa, which FF_HALF_ISA caps,
 * so ctest covers the plain loop too; one value at a time, gcc's code for it, was 6-7
 * cycles a value: a fifth of a depthwise bf16 forward), the rest plainly. */
static void tile_transpose(const float *s, int64_t C, int64_t pn, int64_t cn, bool avx512, float t[16][64])
{
    int64_t p = 0;
#ifdef CONV_TRANSPOSE16
    if (avx512 && cn == 16)
        for (; p + 16 <= pn; p += 16) transpose16(s + p * C, C, &t[0][p], 64);
#else
    (void)avx512;
#endif
    for (; p < pn; p++)
        for (int64_t c = 0; c < cn; c++) t[c][p] = s[p * C + c];
}

/* out [N, C, H, W] (bf16, each H x W plane dense) = f32 [N, H, W, C] (dense) rounded:
 * per image, tiles of 16 channels x 64 positions transposed through a small buffer so
 * that the rounding runs on 64 contiguous values per channel (the strided walk of
 * blas_half_convert, one 2-byte store per channel step, took a third of the forward). */
typedef struct nhwc_job {
    const ff_view *out;
    const float *src;
    bool avx512;
} nhwc_job;

static void nhwc_round(void *arg, int64_t nb, int64_t ne)
{
    const nhwc_job *j = arg;
    const ff_view *o = j->out;
    int64_t C = o->shape[1], P = o->shape[2] * o->shape[3];
    float t[16][64];
    for (int64_t n = nb; n < ne; n++) {
        const float *s = j->src + n * P * C;
        uint16_t *d = (uint16_t *)o->buf + o->offset + n * o->strides[0];
        for (int64_t p0 = 0; p0 < P; p0 += 64)
            for (int64_t c0 = 0; c0 < C; c0 += 16) {
                int64_t pn = P - p0 < 64 ? P - p0 : 64, cn = C - c0 < 16 ? C - c0 : 16;
                tile_transpose(s + p0 * C + c0, C, pn, cn, j->avx512, t);
                for (int64_t c = 0; c < cn; c++) blas_f32_to_half(FF_BF16, pn, d + (c0 + c) * o->strides[1] + p0, t[c]);
            }
    }
}

/* A pass on bf16 views (the file's comment, "bf16"): the output in dense f32 scratch,
 * rounded once into out; a and b as bf16 on bf16 hardware, else widened first. An
 * activation output (y, gx) is laid out channels-last in the scratch, the layout the AMX
 * kernels write: oneDNN's reorder of it to [N, C, H, W] ran at ~1 GB/s (10 ms of a 23 ms
 * forward at 64x64x28x28), where the rounding pass permutes it for free. */
static ff_status conv_pass_half(void *ctx, int which, const char *entry, const ff_view *out, const ff_view *a,
                                const ff_view *b, const ff_conv2d_params *p)
{
    float *om = blas_scratch(ctx, (size_t)ff_view_numel(out) * sizeof(float)), *am = NULL, *bm = NULL;
    if (!om) return blas_error(ctx, FF_ERR_OOM, "cpu_blas %s: out of memory for the f32 output", entry);
    ff_view ov = blas_f32_view(om, out), av = *a, bv = *b;
    if (which != 2) /* [N, H, W, C] storage */
        ov.strides[1] = 1, ov.strides[3] = out->shape[1], ov.strides[2] = out->shape[3] * out->shape[1],
        ov.strides[0] = out->shape[2] * ov.strides[2];
    bool slow = view_has_subnormal(a) || view_has_subnormal(b);
    ff_status st = slow ? FF_OK : conv_pass(ctx, which, entry, &ov, a, b, p, &slow);
    if (!st && slow) {
        if (!(am = widen(ctx, a, &av)) || !(bm = widen(ctx, b, &bv)))
            st = blas_error(ctx, FF_ERR_OOM, "cpu_blas %s: out of memory widening bf16 operands", entry);
        else
            st = conv_pass(ctx, which, entry, &ov, &av, &bv, p, &slow);
    }
    if (!st && which != 2 && out->strides[3] == 1 && out->strides[2] == out->shape[3]) {
        nhwc_job j = {out, om, blas_half_isa() == 2};
        blas_parallel_for(ctx, out->shape[0], 2, 1, nhwc_round, &j);
    } else if (!st && which != 2) { /* walked in the scratch's [N, H, W, C] order: reads contiguous */
        ff_view o = *out, f = ov;
        for (int d = 1; d < 4; d++) {
            int from = d == 3 ? 1 : d + 1;
            o.shape[d] = out->shape[from], o.strides[d] = out->strides[from];
            f.shape[d] = ov.shape[from], f.strides[d] = ov.strides[from];
        }
        blas_half_convert(ctx, &o, &f);
    } else if (!st) {
        blas_half_convert(ctx, out, &ov);
    }
    blas_free(ctx, bm), blas_free(ctx, am), blas_free(ctx, om);
    return st;
}

/* The entries' common tail: bf16 through conv_pass_half, f32 straight. */
static ff_status conv_entry(void *ctx, int which, const char *entry, const ff_view *out, const ff_view *a,
                            const ff_view *b, const ff_conv2d_params *p)
{
    bool slow = false;
    if (out->dtype == FF_BF16) return conv_pass_half(ctx, which, entry, out, a, b, p);
    return conv_pass(ctx, which, entry, out, a, b, p, &slow);
}

ff_status blas_conv2d(void *ctx, const ff_view *y, const ff_view *x, const ff_view *w, const ff_conv2d_params *p)
{
    ff_status st = check(ctx, "conv2d", y, x, w, p);
    if (st || ff_view_numel(y) == 0) return st;
    if (ff_view_numel(x) == 0 || w->shape[1] == 0 || windows_read_no_input(y, w, p)) /* empty sums */
        return blas_fill(ctx, y, (ff_scalar){0.0, 0});
    return conv_entry(ctx, 0, "conv2d", y, x, w, p);
}

ff_status blas_conv2d_backward_input(void *ctx, const ff_view *gx, const ff_view *gy, const ff_view *w,
                                     const ff_conv2d_params *p)
{
    ff_status st = check(ctx, "conv2d_backward_input", gx, gy, w, p);
    if (st || ff_view_numel(gx) == 0) return st;
    if (ff_view_numel(gy) == 0 || windows_read_no_input(gy, w, p)) return blas_fill(ctx, gx, (ff_scalar){0.0, 0});
    return conv_entry(ctx, 1, "conv2d_backward_input", gx, gy, w, p);
}

ff_status blas_conv2d_backward_weight(void *ctx, const ff_view *gw, const ff_view *gy, const ff_view *x,
                                      const ff_conv2d_params *p)
{
    ff_status st = check(ctx, "conv2d_backward_weight", gw, gy, x, p);
    if (st || ff_view_numel(gw) == 0) return st;
    if (ff_view_numel(gy) == 0 || ff_view_numel(x) == 0 || windows_read_no_input(gy, gw, p))
        return blas_fill(ctx, gw, (ff_scalar){0.0, 0});
    return conv_entry(ctx, 2, "conv2d_backward_weight", gw, gy, x, p);
}
#else
ff_status blas_conv2d(void *ctx, const ff_view *y, const ff_view *x, const ff_view *w, const ff_conv2d_params *p)
{
    ff_status st = check(ctx, "conv2d", y, x, w, p);
    return st ? st : blas_error(ctx, FF_ERR_UNSUPPORTED, "cpu_blas conv2d: built without oneDNN");
}

ff_status blas_conv2d_backward_input(void *ctx, const ff_view *gx, const ff_view *gy, const ff_view *w,
                                     const ff_conv2d_params *p)
{
    ff_status st = check(ctx, "conv2d_backward_input", gx, gy, w, p);
    return st ? st : blas_error(ctx, FF_ERR_UNSUPPORTED, "cpu_blas conv2d_backward_input: built without oneDNN");
}

ff_status blas_conv2d_backward_weight(void *ctx, const ff_view *gw, const ff_view *gy, const ff_view *x,
                                      const ff_conv2d_params *p)
{
    ff_status st = check(ctx, "conv2d_backward_weight", gw, gy, x, p);
    return st ? st : blas_error(ctx, FF_ERR_UNSUPPORTED, "cpu_blas conv2d_backward_weight: built without oneDNN");
}
#endif
