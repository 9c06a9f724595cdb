/*
 * ff-bench-cuda: FusionFlow's cuda backend against the hardware and cuBLAS, on a GPU
 * (built only with the cuda backend; scripts/gpu-check.sh runs it).
 *
 *   ff-bench-cuda [--json FILE] [--md FILE] [--quick] [--filter S]   (S: rows whose name has S)
 *
 * Rows, each with a target; the exit status is 1 when any row misses its target:
 *   matmul_f32_<n>, n = 1024 .. 8192: ff_matmul on the cuda backend against a direct
 *     cublasSgemm on the very same device buffers (the tensors' storage), same shapes
 *     and math mode; ratio = cuBLAS time / FusionFlow time, target >= 0.95.
 *   matmul_bf16_<n>, matmul_f16_<n>, n = 4096, 8192 (issue 52): the same in half
 *     precision against a direct cublasGemmEx (CUBLAS_COMPUTE_32F, the tensor cores, the
 *     backend's math mode: no half-precision split-K reductions); target >= 0.9.
 *   add_f32_64M, exp_f32_64M: ff_add / ff_exp of 64M floats (a fresh output each call,
 *     from the allocator's cache), as a fraction of the measured device bandwidth: the
 *     best of 10 cudaMemcpy device-to-device copies of 1 GiB, counting read + write
 *     (the theoretical peak from the memory clock and bus width is printed beside it);
 *     target >= 0.8 (issue 15's; dense f32 runs take 16-byte loads and stores).
 *   add_bf16_64M, exp_bf16_64M: the same on bf16 (eight elements a 16-byte load), reported
 *     as a fraction of that bandwidth with no target yet (issue 52).
 * Times are medians of 7 samples, each a run of calls ended by a device sync, so host
 * overhead hides behind the queued GPU work as it does in real use.
 *
 * Beside them, with no target of their own: mlp_784_256_10_step (batch 64, cross-entropy,
 * SGD: ff-bench's workload, bench_work.c) eager and captured + replayed as a graph; the
 * report compares them with benchmarks/bench_cuda_torch.py's PyTorch step on the same GPU.
 * And attention (B = 4, H = 8, T = 2048, D = 64, causal, f32), reported as a ratio with no
 * target: attention_fwd_T2048 is the attention entry (cuda_attention.cu) against the
 * composition on the same q, k, v buffers with cuBLAS doing the products
 * (cublasSgemmStridedBatched for q k^T scale and p v, our add of the causal -inf mask and
 * our softmax between them, the streams joined by syncs); its outputs are compared too.
 * attention_fwdbwd_T2048 is forward + backward through autograd, the entry against the
 * op's own composition (FF_ATTENTION=compose: the matmul entry is cuBLAS); ratio =
 * composition time / entry time. Each attention row has a _simple twin: the same entry
 * with FF_CUDA_ATTENTION=simple (cuda_attention.cu's general kernels, before issue 34's
 * tiled f32 ones), so one run shows the speedup and either kernel's time.
 * And causal attention beside PyTorch's SDPA (issue 52): sdpa_<bf16|f32>_causal_<fwd|fwdbwd>_T<t>
 * for T = 2048 (B 4, H 8) and 8192 (B 1, H 8), D 64, the entry alone (bf16: the
 * tensor-core kernels of cuda_attention_mma.cuh) and forward + backward through autograd;
 * benchmarks/bench_cuda_torch.py times F.scaled_dot_product_attention(is_causal=True) on the
 * same shapes and gpu-check wants at most 1.2x its time.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h" /* bench_now */
#include "bench_work.h"
#include "ff/ff.h"
#include "ff_impl.h" /* the tensors' device pointers, for cuBLAS on the same buffers */

#define SAMPLES 7
#define MAX_ROWS 16

typedef struct row {
    char workload[48]; /* target 0: a timing with no baseline here (the MLP rows) */
    double ff_s, base_s, ratio, target;
    const char *metric; /* what ratio means */
} row;

static row rows[MAX_ROWS];
static int nrows;
static int att_bad; /* the attention entry's output differs from the composition's */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(const char *what)
{
    fprintf(stderr, "ff-bench-cuda: %s: %s\n", what, ff_last_error());
    exit(2);
}

static void cuda_check(cudaError_t err, const char *what)
{
    if (err != cudaSuccess) {
        fprintf(stderr, "ff-bench-cuda: %s: %s\n", what, cudaGetErrorString(err));
        exit(2);
    }
}

/* Median seconds per call of fn over SAMPLES runs of `calls` calls, each ending in sync(). */
typedef int (*call_fn)(void *);
static double time_calls(call_fn fn, void *state, int (*sync)(void *), int calls)
{
    double t[SAMPLES];
    if (fn(state) || sync(state)) die("warm-up");
    for (int s = 0; s < SAMPLES; s++) {
        double t0 = bench_now();
        for (int i = 0; i < calls; i++)
            if (fn(state)) die("timed call");
        if (sync(state)) die("sync");
        t[s] = (bench_now() - t0) / calls;
    }
    qsort(t, SAMPLES, sizeof t[0], cmp_double);
    return t[SAMPLES / 2];
}

/* ---- FusionFlow calls -------------------------------------------------------------- */

typedef struct ff_state {
    ff_backend *be;
    ff_tensor *a, *b;
    int op; /* 0 matmul, 1 add, 2 exp */
} ff_state;

static int ff_call(void *v)
{
    ff_state *s = v;
    ff_tensor *r = s->op == 0 ? ff_matmul(s->a, s->b) : s->op == 1 ? ff_add(s->a, s->b) : ff_exp(s->a);
    if (!r) return -1;
    ff_tensor_release(r);
    return 0;
}

static int ff_sync(void *v) { return ff_backend_sync(((ff_state *)v)->be) ? -1 : 0; }
static int ff_sync_be(void *v) { return ff_backend_sync(*(ff_backend **)v) ? -1 : 0; } /* a struct starting with be */

/* ---- cuBLAS on the same buffers ------------------------------------------------------ */

typedef struct blas_state {
    cublasHandle_t h;
    const void *a, *b;
    void *c;
    int n;
    ff_dtype t;
} blas_state;

static int blas_call(void *v)
{
    blas_state *s = v;
    const float one = 1.0f, zero = 0.0f;
    /* row-major C = A B is column-major C^T = B^T A^T: FusionFlow's own call; halves
     * through GemmEx with f32 compute, as cuda_matmul.c */
    if (s->t == FF_F32)
        return cublasSgemm(s->h, CUBLAS_OP_N, CUBLAS_OP_N, s->n, s->n, s->n, &one, s->b, s->n, s->a, s->n, &zero, s->c,
                           s->n) == CUBLAS_STATUS_SUCCESS ? 0 : -1;
    cudaDataType ht = s->t == FF_F16 ? CUDA_R_16F : CUDA_R_16BF;
    return cublasGemmEx(s->h, CUBLAS_OP_N, CUBLAS_OP_N, s->n, s->n, s->n, &one, s->b, ht, s->n, s->a, ht, s->n, &zero,
                        s->c, ht, s->n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS ? 0 : -1;
}

static int device_sync(void *v)
{
    (void)v;
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : -1;
}

static void add_row(const char *w, double ff_s, double base_s, double ratio, double target, const char *metric)
{
    if (nrows == MAX_ROWS) return;
    row *r = &rows[nrows++];
    snprintf(r->workload, sizeof r->workload, "%s", w);
    r->ff_s = ff_s, r->base_s = base_s, r->ratio = ratio, r->target = target, r->metric = metric;
    if (target <= 0 && base_s > 0)
        printf("%-26s ff %10.3f ms  baseline %10.3f ms  %s %.3f\n", w, ff_s * 1e3, base_s * 1e3, metric, ratio);
    else if (target <= 0)
        printf("%-26s ff %10.3f ms\n", w, ff_s * 1e3);
    else
        printf("%-26s ff %10.3f ms  baseline %10.3f ms  %s %.3f (target >= %.2f) %s\n", w, ff_s * 1e3, base_s * 1e3,
               metric, ratio, target, ratio >= target ? "ok" : "MISSED");
    fflush(stdout);
}

static float *dev_ptr(const ff_tensor *t)
{
    return (float *)t->storage->buf + t->layout.offset;
}

static void *dev_ptr_any(const ff_tensor *t)
{
    return (char *)t->storage->buf + t->layout.offset * (int64_t)ff_dtype_size(t->dtype);
}

/* matmul_<f32|bf16|f16>_<n>: ff_matmul against cuBLAS on the same buffers (target 0.95
 * for f32, 0.9 for the halves, issue 52's). */
static void bench_matmul(ff_backend *be, ff_dtype dt, int n)
{
    int64_t shape[2] = {n, n};
    ff_tensor *a = ff_rand(2, shape, FF_F32), *b = ff_rand(2, shape, FF_F32);
    ff_state s = {be, a, b, 0};
    if (dt != FF_F32) {
        s.a = a ? ff_astype(a, dt) : NULL, s.b = b ? ff_astype(b, dt) : NULL;
        ff_tensor_release(a);
        ff_tensor_release(b);
    }
    ff_tensor *c = s.a && s.b ? ff_matmul(s.a, s.b) : NULL;
    if (!c) die("matmul setup");
    int calls = dt == FF_F32 ? (n >= 8192 ? 5 : n >= 4096 ? 20 : 50) : (n >= 8192 ? 10 : 40);
    double t_ff = time_calls(ff_call, &s, ff_sync, calls);
    blas_state bs = {NULL, dev_ptr_any(s.a), dev_ptr_any(s.b), dev_ptr_any(c), n, dt};
    if (cublasCreate(&bs.h) != CUBLAS_STATUS_SUCCESS) die("cublasCreate");
    /* the backend's math mode: no TF32 unless FF_CUDA_TF32=1, no half split-K sums */
    const char *tf32 = getenv("FF_CUDA_TF32");
    cublasSetMathMode(bs.h, (cublasMath_t)((tf32 && !strcmp(tf32, "1") ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH) |
                                           CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
    double t_blas = time_calls(blas_call, &bs, device_sync, calls);
    cublasDestroy(bs.h);
    char w[48];
    snprintf(w, sizeof w, "matmul_%s_%d", dt == FF_F32 ? "f32" : dt == FF_F16 ? "f16" : "bf16", n);
    add_row(w, t_ff, t_blas, t_blas / t_ff, dt == FF_F32 ? 0.95 : 0.9, "cublas/ff");
    ff_tensor_release(c);
    ff_tensor_release(s.a);
    ff_tensor_release(s.b);
}

/* linear_<act>_bf16_4096: y = act(x W^T + b) with x [8192, 4096], W [4096, 4096] (a
 * GPT-2-size MLP layer at 8 sequences of 1024), the linear entry's cuBLASLt paths: "bias"
 * the epilogue inside the product, "gelu" (tanh form) the product in f32 then the epilogue
 * kernel. PyTorch's F.linear (+ F.gelu) beside it in the gpu-check report (target 0.9). */
typedef struct lin_state {
    ff_backend *be;
    ff_tensor *x, *w, *b;
    int act;
} lin_state;

static int lin_call(void *v)
{
    lin_state *s = v;
    bool grad = ff_set_grad_enabled(false);
    ff_tensor *y = ff_linear_act(s->x, s->w, s->b, s->act);
    ff_set_grad_enabled(grad);
    ff_tensor_release(y);
    return y ? 0 : -1;
}

static void bench_linear(ff_backend *be, int act)
{
    int64_t xs[2] = {8192, 4096}, ws[2] = {4096, 4096}, bs = 4096;
    ff_tensor *x = ff_rand(2, xs, FF_F32), *w = ff_rand(2, ws, FF_F32), *b = ff_rand(1, &bs, FF_F32);
    lin_state s = {be, x ? ff_astype(x, FF_BF16) : NULL, w ? ff_astype(w, FF_BF16) : NULL,
                   b ? ff_astype(b, FF_BF16) : NULL, act};
    ff_tensor_release(x), ff_tensor_release(w), ff_tensor_release(b);
    if (!s.x || !s.w || !s.b) die("linear setup"); /* W [N, K] as nn.Linear stores it */
    double t = time_calls(lin_call, &s, ff_sync_be, 20);
    add_row(act == FF_LINEAR_NO_ACT ? "linear_bias_bf16_4096" : "linear_gelu_bf16_4096", t, 0, 0, 0, "ms");
    ff_tensor_release(s.x), ff_tensor_release(s.w), ff_tensor_release(s.b);
}

/* Device-to-device copy bandwidth in bytes/s (read + write), best of 10. */
static double measured_bandwidth(size_t bytes)
{
    void *x = NULL, *y = NULL;
    cuda_check(cudaMalloc(&x, bytes), "cudaMalloc");
    cuda_check(cudaMalloc(&y, bytes), "cudaMalloc");
    cuda_check(cudaMemcpy(y, x, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy");
    double best = 1e30;
    for (int i = 0; i < 10; i++) {
        cuda_check(cudaDeviceSynchronize(), "sync");
        double t0 = bench_now();
        cuda_check(cudaMemcpy(y, x, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy");
        cuda_check(cudaDeviceSynchronize(), "sync");
        double t = bench_now() - t0;
        if (t < best) best = t;
    }
    cudaFree(x);
    cudaFree(y);
    return 2.0 * (double)bytes / best;
}

/* add or exp of n elements of dt as a fraction of the copy bandwidth: f32 with a target
 * (0.8), bf16 (the eight-wide half kernels) reported beside it. */
static void bench_elementwise(ff_backend *be, int op, double bw, int64_t n, ff_dtype dt)
{
    int64_t shape[1] = {n};
    ff_state s = {be, ff_rand(1, shape, FF_F32), ff_rand(1, shape, FF_F32), op};
    if (!s.a || !s.b) die("elementwise setup");
    if (dt != FF_F32) {
        ff_tensor *a = ff_astype(s.a, dt), *b = ff_astype(s.b, dt);
        ff_tensor_release(s.a), ff_tensor_release(s.b);
        s.a = a, s.b = b;
        if (!s.a || !s.b) die("elementwise setup");
    }
    double t = time_calls(ff_call, &s, ff_sync, 10);
    /* add reads 2, writes 1; exp reads 1, writes 1 */
    double bytes = (double)n * (double)ff_dtype_size(dt) * (op == 1 ? 3.0 : 2.0);
    char w[48];
    snprintf(w, sizeof w, "%s_%s_%lldM", op == 1 ? "add" : "exp", dt == FF_F32 ? "f32" : "bf16", (long long)(n >> 20));
    add_row(w, t, bytes / bw, bytes / t / bw, dt == FF_F32 ? 0.8 : 0, "of_bandwidth");
    ff_tensor_release(s.a);
    ff_tensor_release(s.b);
}

static ff_backend *mlp_be;
static int mlp_sync(void *v) { return ff_backend_sync(mlp_be) ? -1 : 0; }
static int mlp_step(void *v)
{
    ff_tensor *loss = bench_step_loss(v);
    ff_tensor_release(loss);
    return loss ? 0 : -1;
}
static int mlp_replay(void *v) { return ff_graph_replay(((bench_state *)v)->g) ? -1 : 0; }

/* The MLP 784-256-10 training step (batch 64), eager and as a replayed graph. */
static void bench_mlp(ff_backend *be, int calls)
{
    static const int64_t dims[3] = {784, 256, 10};
    mlp_be = be;
    for (int graph = 0; graph < 2; graph++) {
        bench_state s = {0};
        if (bench_mlp_setup(&s, 3, dims, 64, true, false)) die("mlp setup");
        if (graph && (mlp_step(&s) || bench_capture(&s, bench_step_loss))) die("mlp capture");
        double t = time_calls(graph ? mlp_replay : mlp_step, &s, mlp_sync, calls);
        add_row(graph ? "mlp_784_256_10_step_graph" : "mlp_784_256_10_step", t, 0, 0, 0, "ms");
        bench_state_free(&s);
    }
}

/* ---- conv2d: a ResNet-50 layer set, forward and both gradients ------------------------------ */

/* Batch 32, one layer of each kind ResNet-50 runs (stem, bottleneck 1x1 and 3x3 at every
 * stage, a strided 3x3): x [32, C, H, H], w [O, C, K, K], stride, padding. The same list
 * is in benchmarks/bench_cuda_torch.py. */
static const int conv_set[6][6] = {
    {3, 224, 64, 7, 2, 3}, {64, 56, 64, 3, 1, 1},   {64, 56, 256, 1, 1, 0},
    {128, 56, 128, 3, 2, 1}, {256, 14, 256, 3, 1, 1}, {512, 7, 2048, 1, 1, 0},
};
#define CONV_BATCH 32

typedef struct conv_state {
    ff_backend *be;
    ff_tensor *x[6], *w[6], *gy[6];
} conv_state;

/* one call: every layer's forward and the gradients of x and w (cuDNN's three passes) */
static int conv_call(void *v)
{
    conv_state *s = v;
    for (int i = 0; i < 6; i++) {
        const int *L = conv_set[i];
        ff_tensor *y = ff_conv2d(s->x[i], s->w[i], NULL, L[4], L[4], L[5], L[5]);
        ff_tensor *in[2] = {s->x[i], s->w[i]}, *g[2] = {NULL, NULL};
        ff_status st = y ? ff_autograd_grad(y, s->gy[i], 2, in, g, NULL) : FF_ERR_INVALID;
        ff_tensor_release(y);
        ff_tensor_release(g[0]);
        ff_tensor_release(g[1]);
        if (st) return -1;
    }
    return 0;
}

/* conv_resnet50_set_<f32|bf16>: FusionFlow's time for the set; PyTorch's beside it in the
 * gpu-check report (issue 52: at most 1.1x PyTorch's, cuDNN on both sides). */
static void bench_conv(ff_backend *be, ff_dtype dt)
{
    conv_state s = {.be = be};
    for (int i = 0; i < 6; i++) {
        const int *L = conv_set[i];
        int64_t xs[4] = {CONV_BATCH, L[0], L[1], L[1]}, ws[4] = {L[2], L[0], L[3], L[3]};
        int64_t oh = (L[1] + 2 * L[5] - L[3]) / L[4] + 1, ys[4] = {CONV_BATCH, L[2], oh, oh};
        ff_tensor *x = ff_rand(4, xs, FF_F32), *w = ff_rand(4, ws, FF_F32), *gy = ff_rand(4, ys, FF_F32);
        s.x[i] = x ? ff_astype(x, dt) : NULL, s.w[i] = w ? ff_astype(w, dt) : NULL;
        s.gy[i] = gy ? ff_astype(gy, dt) : NULL;
        ff_tensor_release(x), ff_tensor_release(w), ff_tensor_release(gy);
        if (!s.x[i] || !s.w[i] || !s.gy[i] || ff_set_requires_grad(s.x[i], true) ||
            ff_set_requires_grad(s.w[i], true))
            die("conv setup");
    }
    double t = time_calls(conv_call, &s, ff_sync_be, 5);
    char w[48];
    snprintf(w, sizeof w, "conv_resnet50_set_%s", dt == FF_F32 ? "f32" : "bf16");
    add_row(w, t, 0, 0, 0, "ms");
    for (int i = 0; i < 6; i++) {
        ff_tensor_release(s.x[i]);
        ff_tensor_release(s.w[i]);
        ff_tensor_release(s.gy[i]);
    }
}

/* ---- attention: the entry against the cuBLAS composition -------------------------------- */

typedef struct att_state {
    ff_backend *be;
    ff_tensor *q, *k, *v, *go, *mask; /* mask: the causal -inf triangle, [T, T] */
    ff_tensor *s, *o;                 /* the composition's scores and output, written by cuBLAS */
    cublasHandle_t h;
    int64_t bh, t, d;
    int backward;
} att_state;

static int att_entry(void *v)
{
    att_state *a = v;
    ff_tensor *o = ff_scaled_dot_product_attention(a->q, a->k, a->v, NULL, 0.0, true, 0.0, 0);
    if (!o) return -1;
    int bad = a->backward && (ff_backward(o, a->go, NULL) || ff_zero_grad(a->q) || ff_zero_grad(a->k) ||
                              ff_zero_grad(a->v));
    ff_tensor_release(o);
    return bad ? -1 : 0;
}

/* q k^T scale (cuBLAS), + mask and softmax (ours), p v (cuBLAS); row-major products as
 * column-major ones with the operands swapped, as cuda_matmul.c calls them. */
static int att_blas(void *v)
{
    att_state *a = v;
    const float scale = 1.0f / sqrtf((float)a->d), one = 1.0f, zero = 0.0f;
    int T = (int)a->t, D = (int)a->d;
    long long sq = (long long)T * D, ss = (long long)T * T;
    if (cublasSgemmStridedBatched(a->h, CUBLAS_OP_T, CUBLAS_OP_N, T, T, D, &scale, dev_ptr(a->k), D, sq, dev_ptr(a->q), D,
                                  sq, &zero, dev_ptr(a->s), T, ss, (int)a->bh) != CUBLAS_STATUS_SUCCESS ||
        cudaDeviceSynchronize() != cudaSuccess) /* cuBLAS's stream is not the backend's */
        return -1;
    ff_tensor *m = ff_add(a->s, a->mask), *p = m ? ff_softmax(m, 3) : NULL;
    ff_tensor_release(m);
    int bad = !p || ff_backend_sync(a->be) ||
              cublasSgemmStridedBatched(a->h, CUBLAS_OP_N, CUBLAS_OP_N, D, T, T, &one, dev_ptr(a->v), D, sq, dev_ptr(p), T,
                                        ss, &zero, dev_ptr(a->o), D, sq, (int)a->bh) != CUBLAS_STATUS_SUCCESS;
    ff_tensor_release(p);
    return bad ? -1 : 0;
}

/* Largest |x - y| of two device arrays of n floats. */
static double att_maxdiff(const float *x, const float *y, size_t n)
{
    float *hx = malloc(n * sizeof *hx), *hy = malloc(n * sizeof *hy);
    double m = -1;
    if (hx && hy && cudaDeviceSynchronize() == cudaSuccess &&
        cudaMemcpy(hx, x, n * sizeof *hx, cudaMemcpyDeviceToHost) == cudaSuccess &&
        cudaMemcpy(hy, y, n * sizeof *hy, cudaMemcpyDeviceToHost) == cudaSuccess)
        for (size_t i = 0; i < n; i++) {
            double e = fabs((double)hx[i] - hy[i]);
            if (e > m || e != e) m = e; /* a NaN stays */
        }
    free(hx), free(hy);
    return m;
}

/* The entry timed on cuda_attention.cu's general kernels (it reads the switch per call). */
static double att_time_simple(att_state *a, int calls)
{
    const char *was = getenv("FF_CUDA_ATTENTION"); /* gpu-check's (mma) comes back after */
    char keep[32];
    snprintf(keep, sizeof keep, "%s", was ? was : "");
    if (setenv("FF_CUDA_ATTENTION", "simple", 1)) die("setenv");
    double t = time_calls(att_entry, a, ff_sync_be, calls);
    if (was ? setenv("FF_CUDA_ATTENTION", keep, 1) : unsetenv("FF_CUDA_ATTENTION")) die("setenv");
    return t;
}

static void bench_attention(ff_backend *be, int64_t t)
{
    int64_t B = 4, H = 8, D = 64, shape[4] = {B, H, t, D}, ts[4] = {B, H, t, t}, sq[2] = {t, t};
    att_state a = {be, ff_rand(4, shape, FF_F32), ff_rand(4, shape, FF_F32), ff_rand(4, shape, FF_F32),
                   ff_rand(4, shape, FF_F32), NULL, ff_full(4, ts, FF_F32, 0.0), ff_full(4, shape, FF_F32, 0.0),
                   NULL, B * H, t, D, 0};
    ff_tensor *inf = ff_full(2, sq, FF_F32, -INFINITY);
    a.mask = inf ? ff_triu(inf, 1) : NULL;
    ff_tensor_release(inf);
    if (!a.q || !a.k || !a.v || !a.go || !a.mask || !a.s || !a.o) die("attention setup");
    if (cublasCreate(&a.h) != CUBLAS_STATUS_SUCCESS) die("cublasCreate");
    cublasSetMathMode(a.h, CUBLAS_DEFAULT_MATH); /* f32 products, as the entry's */
    char w[48];
    double t_ff = time_calls(att_entry, &a, ff_sync_be, 5), t_blas = time_calls(att_blas, &a, device_sync, 5);
    ff_tensor *o = ff_scaled_dot_product_attention(a.q, a.k, a.v, NULL, 0.0, true, 0.0, 0);
    if (!o || ff_backend_sync(be)) die("attention forward");
    double diff = att_maxdiff(dev_ptr(o), dev_ptr(a.o), (size_t)(B * H * t * D));
    att_bad = !(diff >= 0 && diff <= 1e-4); /* outputs are averages of values in [0, 1) */
    printf("attention_fwd_T%lld: max |entry - cuBLAS composition| = %.3g (at most 1e-4) %s\n", (long long)t, diff,
           att_bad ? "MISSED" : "ok");
    ff_tensor_release(o);
    snprintf(w, sizeof w, "attention_fwd_T%lld", (long long)t);
    add_row(w, t_ff, t_blas, t_blas / t_ff, 0, "compose/ff");
    double t_simple = att_time_simple(&a, 5);
    snprintf(w, sizeof w, "attention_fwd_T%lld_simple", (long long)t);
    add_row(w, t_simple, t_blas, t_blas / t_simple, 0, "compose/ff");
    cublasDestroy(a.h);
    ff_tensor_release(a.s), a.s = NULL; /* the composition's backward needs the room */
    a.backward = 1;
    if (ff_set_requires_grad(a.q, true) || ff_set_requires_grad(a.k, true) || ff_set_requires_grad(a.v, true))
        die("requires_grad");
    t_ff = time_calls(att_entry, &a, ff_sync_be, 3);
    ff_ops_force_compose(FF_KIND_ATTENTION, true);
    double t_comp = time_calls(att_entry, &a, ff_sync_be, 3);
    ff_ops_force_compose(FF_KIND_ATTENTION, false);
    snprintf(w, sizeof w, "attention_fwdbwd_T%lld", (long long)t);
    add_row(w, t_ff, t_comp, t_comp / t_ff, 0, "compose/ff");
    t_simple = att_time_simple(&a, 3);
    snprintf(w, sizeof w, "attention_fwdbwd_T%lld_simple", (long long)t);
    add_row(w, t_simple, t_comp, t_comp / t_simple, 0, "compose/ff");
    ff_tensor *ts_[] = {a.q, a.k, a.v, a.go, a.mask, a.o};
    for (size_t i = 0; i < sizeof ts_ / sizeof ts_[0]; i++) ff_tensor_release(ts_[i]);
}

/* The entry (and with bwd its backward through autograd) on causal [B, H, T, 64] inputs of
 * dtype dt, for the report to set beside PyTorch's SDPA (no baseline here). */
static void bench_sdpa(ff_backend *be, ff_dtype dt, int64_t t, int bwd)
{
    int64_t B = t >= 8192 ? 1 : 4, H = 8, D = 64, shape[4] = {B, H, t, D};
    att_state a = {be, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, B * H, t, D, bwd};
    ff_tensor **in[4] = {&a.q, &a.k, &a.v, &a.go};
    for (int i = 0; i < 4; i++) {
        ff_tensor *x = ff_rand(4, shape, FF_F32);
        *in[i] = x ? ff_astype(x, dt) : NULL;
        ff_tensor_release(x);
        if (!*in[i]) die("sdpa setup");
    }
    if (bwd && (ff_set_requires_grad(a.q, true) || ff_set_requires_grad(a.k, true) || ff_set_requires_grad(a.v, true)))
        die("requires_grad");
    char w[64];
    snprintf(w, sizeof w, "sdpa_%s_causal_%s_T%lld", dt == FF_BF16 ? "bf16" : "f32", bwd ? "fwdbwd" : "fwd", (long long)t);
    add_row(w, time_calls(att_entry, &a, ff_sync_be, bwd ? 3 : 5), 0, 0, 0, "ms");
    for (int i = 0; i < 4; i++) ff_tensor_release(*in[i]);
}

static int write_reports(const char *json, const char *md, const char *device, double bw, double peak)
{
    int missed = 0;
    for (int i = 0; i < nrows; i++) missed += rows[i].ratio < rows[i].target;
    FILE *f = json ? fopen(json, "w") : NULL;
    if (f) {
        fprintf(f, "{\n  \"tool\": \"ff-bench-cuda\",\n  \"device\": \"%s\",\n  \"measured_bandwidth_gbs\": %.1f,\n"
                   "  \"theoretical_bandwidth_gbs\": %.1f,\n  \"results\": [\n", device, bw / 1e9, peak / 1e9);
        for (int i = 0; i < nrows; i++)
            fprintf(f, "    {\"workload\": \"%s\", \"ff_s\": %.9g, \"baseline_s\": %.9g, \"metric\": \"%s\", "
                       "\"value\": %.4f, \"target\": %.2f, \"ok\": %s}%s\n", rows[i].workload, rows[i].ff_s,
                    rows[i].base_s, rows[i].metric, rows[i].ratio, rows[i].target,
                    rows[i].ratio >= rows[i].target ? "true" : "false", i + 1 < nrows ? "," : "");
        fprintf(f, "  ]\n}\n");
        fclose(f);
    }
    f = md ? fopen(md, "w") : NULL;
    if (f) {
        fprintf(f, "Device: %s; measured D2D bandwidth %.0f GB/s (theoretical %.0f GB/s)\n\n", device, bw / 1e9,
                peak / 1e9);
        fprintf(f, "| workload | FusionFlow ms | baseline ms | metric | value | target | |\n|---|---|---|---|---|---|---|\n");
        for (int i = 0; i < nrows; i++)
            if (rows[i].target <= 0 && rows[i].base_s > 0)
                fprintf(f, "| %s | %.3f | %.3f | %s | %.3f | | |\n", rows[i].workload, rows[i].ff_s * 1e3,
                        rows[i].base_s * 1e3, rows[i].metric, rows[i].ratio);
            else if (rows[i].target <= 0)
                fprintf(f, "| %s | %.3f | | | | | |\n", rows[i].workload, rows[i].ff_s * 1e3);
            else
                fprintf(f, "| %s | %.3f | %.3f | %s | %.3f | >= %.2f | %s |\n", rows[i].workload,
                        rows[i].ff_s * 1e3, rows[i].base_s * 1e3, rows[i].metric, rows[i].ratio, rows[i].target,
                        rows[i].ratio >= rows[i].target ? "ok" : "**missed**");
        fclose(f);
    }
    return missed;
}

int main(int argc, char **argv)
{
    const char *json = NULL, *md = NULL, *filter = "";
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else if (!strcmp(argv[i], "--md") && i + 1 < argc) md = argv[++i];
        else if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--filter") && i + 1 < argc) filter = argv[++i];
        else {
            fprintf(stderr, "usage: ff-bench-cuda [--json FILE] [--md FILE] [--quick] [--filter S]\n");
            return 2;
        }
    }
    ff_backend *be = ff_backend_load("cuda");
    if (!be || ff_backend_set_default(be)) die("cuda backend");
    char device[512] = "";
    ff_backend_device_info(be, device, sizeof device);
    for (char *p = device; *p; p++)
        if (*p == '"' || *p == '\\') *p = '\'';
    printf("%s\n", device);
    int dev = 0, clock_khz = 0, bus_bits = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, dev);
    cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev);
    double peak = 2.0 * clock_khz * 1e3 * bus_bits / 8.0; /* double data rate */
    double bw = measured_bandwidth(quick ? (size_t)256 << 20 : (size_t)1 << 30);
    printf("device-to-device copy: %.0f GB/s measured, %.0f GB/s theoretical\n", bw / 1e9, peak / 1e9);
    static const int sizes[] = {1024, 2048, 4096, 8192};
    for (int i = 0; i < (quick ? 2 : 4) && strstr("matmul_f32", filter); i++) bench_matmul(be, FF_F32, sizes[i]);
    static const int half_sizes[] = {4096, 8192};
    for (int i = 0; i < (quick ? 1 : 2); i++) {
        if (strstr("matmul_bf16", filter)) bench_matmul(be, FF_BF16, quick ? 2048 : half_sizes[i]);
        if (strstr("matmul_f16", filter)) bench_matmul(be, FF_F16, quick ? 2048 : half_sizes[i]);
    }
    int64_t n = quick ? (int64_t)4 << 20 : (int64_t)64 << 20;
    if (strstr("add_f32", filter)) bench_elementwise(be, 1, bw, n, FF_F32);
    if (strstr("exp_f32", filter)) bench_elementwise(be, 2, bw, n, FF_F32);
    if (strstr("add_bf16", filter)) bench_elementwise(be, 1, bw, n, FF_BF16);
    if (strstr("exp_bf16", filter)) bench_elementwise(be, 2, bw, n, FF_BF16);
    if (strstr("mlp_784_256_10_step", filter)) bench_mlp(be, quick ? 20 : 200);
    if (strstr("attention", filter)) bench_attention(be, quick ? 1024 : 2048);
    static const int64_t sdpa_t[] = {2048, 8192};
    for (int i = 0; i < (quick ? 1 : 2); i++)
        for (int bf = 1; bf >= 0; bf--)
            for (int bwd = 0; bwd < 2; bwd++)
                if (strstr("sdpa_causal", filter)) bench_sdpa(be, bf ? FF_BF16 : FF_F32, quick ? 1024 : sdpa_t[i], bwd);
    if (strstr("conv_resnet50_set_f32", filter)) bench_conv(be, FF_F32);
    if (strstr("conv_resnet50_set_bf16", filter)) bench_conv(be, FF_BF16);
    if (strstr("linear_bias_bf16_4096", filter)) bench_linear(be, FF_LINEAR_NO_ACT);
    if (strstr("linear_gelu_bf16_4096", filter)) bench_linear(be, FF_UNARY_GELU_TANH);
    int missed = write_reports(json, md, device, bw, peak) + att_bad;
    ff_shutdown();
    if (missed) fprintf(stderr, "ff-bench-cuda: %d row(s) missed their target\n", missed);
    return missed ? 1 : 0;
}
