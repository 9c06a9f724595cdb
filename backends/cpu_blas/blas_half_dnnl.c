/*
 * BF16 matmul through oneDNN's matmul primitive: the matrix units (AMX) or AVX512-BF16,
 * whichever oneDNN finds (ONEDNN_MAX_CPU_ISA caps it).
 *
 * Why not only the own vdpbf16ps kernel (blas_half_dot.c): on a CPU with AMX one tile
 * instruction does 16 x 16 x 32 multiply-adds, several times what any zmm kernel can;
 * oneDNN's brgemm kernels are the ones PyTorch runs on bf16 here.
 *
 * When it is taken: oneDNN is asked for a primitive descriptor and the call goes ahead
 * only when the implementation it picks is a brgemm one on bf16 hardware ("brg:" with
 * "bf16" in its name: AMX or AVX512-BF16). Anything else (oneDNN 2.6 has no f16 CPU
 * matmul at all, bf16 below AVX512-BF16 is an emulating gemm or nothing) declines, and
 * the caller takes its other paths, which are never slower than the f32 gemm.
 *
 * Values: oneDNN accumulates in f32 and rounds once to nearest even. Where dst is a
 * row-major matrix (any leading dimension, any batch strides) apart from the operands'
 * buffers, oneDNN writes the bf16 dst itself; else it writes a dense f32 C, rounded into
 * dst by blas_half_convert. Both give the same bits except for a NaN's payload (our
 * conversion makes every NaN the canonical quiet one; vcvtneps2bf16 keeps the payload's
 * top bits): the f32 accumulator on AMX and AVX512-BF16 already flushes subnormal sums to
 * zero (measured: a sum of 2^-127 comes back 0 in f32 C too, as from PyTorch), so the
 * store's own flush of subnormals loses nothing more. Writing bf16 directly saves the f32
 * C (twice dst's bytes) and the rounding pass over it: 10-20% of the product at n = 512 to
 * 2048 (benchmarks/README.md). The bf16 instructions read subnormal inputs as zero, so an
 * operand holding a subnormal declines (as blas_half_dot.c does); products and sums
 * below 2^-126 may be flushed, an absolute error under K * 2^-126.
 *
 * The subnormal scan runs optimistically inside each row slice: its rows of A and its
 * share of B's rows are scanned right before oneDNN reads them (so they are in cache for
 * the kernel, and the threads split the scan), and a slice that finds one fails the
 * whole call, which the caller then recomputes on its other path. That is safe because C
 * is dst only when dst is no operand's buffer, else f32 scratch: a product computed on
 * flushed inputs is always overwritten, never returned.
 *
 * The linear entry (blas_linear.c) comes here with a bias row and an activation, which
 * become the primitive's bias and eltwise post-op: oneDNN adds them to the f32 sum before
 * its one rounding, in the tile it just computed, so y is written once.
 *
 * Primitives: kept between calls in blas_dnnl_cache.c (keyed by shape, strides, dtypes,
 * thread count and oneDNN's ISA), so a repeated shape only sets data handles and
 * executes; oneDNN's own cache still needed a descriptor per call (3-5% of a 1024^3
 * product). Whether oneDNN's pick is fast is asked once per key too.
 * Layouts: a matrix that is row- or column-major (any leading dimension) goes to oneDNN
 * with its strides; any other (a step in both dims) is first copied to a dense half copy
 * by the copy entry. The batch is walked here (a broadcast, stride 0, needs no copy), the
 * rows of C split across the pool, each slice one single-threaded oneDNN call per batch
 * element, as for the f32 gemm. With several threads C's columns are cut into blocks
 * first (up to one per thread, at least 64 wide, a multiple of 16; column_block says
 * why: each execution packs the B it reads, so row slices would pack all of B once each),
 * and the slices run over (column block, rows) pairs, each a primitive of its own width
 * writing a dense tile that is copied into C (oneDNN 2.6's brgemm declines a dst whose
 * row stride exceeds its width). Blocks are taken only where oneDNN runs one on brgemm
 * too: a column-major B (a Linear's W^T) yes; a row-major B's block is strided, which 2.6
 * sends to its jit gemm, 10-100x slower on bf16, so such a product is cut into row slices
 * of at least 128 rows. Every element of A and of B is still scanned by exactly one
 * slice: A's rows by the slices of column block 0, B's rows of a column block shared out
 * among that block's slices.
 */
#include <stdlib.h>
#include <string.h>

#include "blas_impl.h"

/* Below this many multiply-adds the primitive's set-up costs more than it saves. */
#define DNNL_MIN_MNK ((int64_t)1 << 15)

/* 1 if any bf16 of the rows x cols matrix is subnormal (exponent 0, mantissa set: the
 * magnitude bits m in [1, 0x7f]). (m - 1) | 0x7f is 0x7f exactly then and >= 0xff for
 * every other value, so a 16-bit min over the matrix answers; a min stays in 16-bit lanes
 * (vpminuw, 32 per zmm) where an |= of compare results widened them to 32 bits. Cloned
 * per ISA: at n = 512 the scan is a visible part of the product's time (~9% before). */
BLAS_CLONES int blas_bf16_has_subnormal(const uint16_t *p, int64_t rows, int64_t cols, int64_t rs, int64_t cs)
{
    if (cs != 1 && rs == 1) { /* column-major: walk along the unit stride */
        int64_t t = rows;
        rows = cols, cols = t, rs = cs, cs = 1;
    }
    if (cs == 1 && rs == cols) /* dense: one run, so one horizontal min instead of one per row */
        cols *= rows, rows = 1;
    uint16_t lo = 0xffff;
    for (int64_t i = 0; i < rows && lo != 0x7f; i++) {
        const uint16_t *r = p + i * rs;
        if (cs == 1)
            for (int64_t j = 0; j < cols; j++) {
                uint16_t u = (uint16_t)(((r[j] & 0x7fffu) - 1u) | 0x7fu);
                lo = u < lo ? u : lo;
            }
        else
            for (int64_t j = 0; j < cols; j++) {
                uint16_t u = (uint16_t)(((r[j * cs] & 0x7fffu) - 1u) | 0x7fu);
                lo = u < lo ? u : lo;
            }
    }
    return lo == 0x7f;
}

#ifdef FF_BLAS_HAVE_DNNL
#include <pthread.h>

#include "blas_dnnl_cache.h"

/* FF_HALF_DNNL=0 turns the path off (read once). */
static int enabled;
static pthread_once_t enabled_once = PTHREAD_ONCE_INIT;

static void enabled_init(void)
{
    const char *env = getenv("FF_HALF_DNNL");
    enabled = !(env && !strcmp(env, "0")) && blas_dnnl_engine() != NULL;
}

/* oneDNN takes a matrix whose one stride is 1 and the other at least the extent of that
 * dim (a leading dimension); 0 when the matrix needs a dense copy. */
static int plain_layout(int64_t rows, int64_t cols, int64_t *rs, int64_t *cs)
{
    if (cols == 1) *cs = 1; /* a stride over one element is meaningless */
    if (rows == 1) *rs = cols > 1 ? cols : 1;
    if (*cs == 1 && *rs >= cols) return 1;
    if (*rs == 1 && *cs >= rows) return 1;
    return 0;
}

typedef struct mm_mat {
    const uint16_t *p; /* batch element 0 */
    int64_t rs, cs;    /* element strides of the matrix */
} mm_mat;

typedef struct dnnl_job {
    blas_ctx *ctx;
    int64_t M, N, K, nbatch;
    const uint16_t *bias; /* the linear entry's bias row (unit stride), or NULL */
    int post;             /* the eltwise post-op (blas_dnnl_key.post), 0 for none */
    int64_t cbw;         /* column block width (N when the columns are not cut) */
    mm_mat A, B;
    char *C;             /* batch element 0 of the dst oneDNN writes: bf16 dst or f32 scratch */
    int64_t ldc;         /* C's row stride in elements */
    size_t ces;          /* C's element size: 2 (bf16) or 4 (f32) */
    const int64_t *offs; /* per batch element: a's, b's and C's element offsets, interleaved */
    atomic_int failed;
} dnnl_job;

/* The cache key of rows m, columns n of the job's product (one OpenMP thread: the pool
 * splits); a column block writes a dense tile of its own (row stride n). */
static blas_dnnl_key job_key(const dnnl_job *j, int64_t m, int64_t n)
{
    int64_t crs = n < j->N ? n : j->ldc;
    return (blas_dnnl_key){.kind = j->ces == 2 ? BLAS_DNNL_BF16_BF16 : BLAS_DNNL_BF16_F32, .threads = 1,
                           .bias = j->bias != NULL, .post = j->post, .m = m,
                           .n = n, .k = j->K, .ars = j->A.rs, .acs = j->A.cs, .brs = j->B.rs, .bcs = j->B.cs,
                           .crs = crs, .ccs = 1};
}

/* The implementation oneDNN picked is a brgemm kernel on bf16 hardware. */
static int pd_fast(const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl) return 0;
    return !strncmp(impl, "brg:", 4) && strstr(impl, "bf16") != NULL;
}

/* Rows [rb, re) of column block cb of C for every batch element: one primitive, executed
 * per element. A slice's primitive is whatever oneDNN picks for its rows and columns (the
 * whole product's pick decided that the path is taken). */
static void dnnl_block(dnnl_job *j, int64_t cb, int64_t rb, int64_t re)
{
    int64_t c0 = cb * j->cbw, nc = j->N - c0 < j->cbw ? j->N - c0 : j->cbw, m = re - rb;
    blas_dnnl_key key = job_key(j, m, nc);
    blas_dnnl_prim *p = blas_dnnl_acquire(&key, NULL);
    void *sp = p && p->scratch_bytes ? blas_scratch(j->ctx, p->scratch_bytes) : NULL;
    /* a block's tile is dense (oneDNN 2.6's brgemm declines a dst whose row stride exceeds
     * its width) and copied into C after each product */
    char *tile = nc < j->N ? blas_scratch(j->ctx, (size_t)(m * nc) * j->ces) : NULL;
    dnnl_status_t s = p && p->accepted && (sp || !p->scratch_bytes) && (tile || nc == j->N) ? dnnl_success
                                                                                             : dnnl_runtime_error;
    /* this slice's share of B's rows (within its column block), so that the slices scan
     * all of B once between them; A's rows only in column block 0 */
    int64_t kb = rb * j->K / j->M, ke = re * j->K / j->M;
    for (int64_t n = 0; n < j->nbatch && s == dnnl_success && !atomic_load(&j->failed); n++) {
        const uint16_t *pa = j->A.p + j->offs[3 * n] + rb * j->A.rs, *pb = j->B.p + j->offs[3 * n + 1] + c0 * j->B.cs;
        char *pc = j->C + (size_t)(j->offs[3 * n + 2] + rb * j->ldc + c0) * j->ces;
        /* the hardware reads subnormals as zero: scanned here, right before the kernel
         * reads the same rows (then in cache), in parallel */
        if ((cb == 0 && blas_bf16_has_subnormal(pa, m, j->K, j->A.rs, j->A.cs)) ||
            blas_bf16_has_subnormal(pb + kb * j->B.rs, ke - kb, nc, j->B.rs, j->B.cs))
            s = dnnl_runtime_error;
        if (s == dnnl_success) s = blas_dnnl_execute(p, pa, pb, j->bias ? j->bias + c0 : NULL, tile ? tile : pc, sp);
        for (int64_t r = 0; tile && s == dnnl_success && r < m; r++)
            memcpy(pc + (size_t)(r * j->ldc) * j->ces, tile + (size_t)(r * nc) * j->ces, (size_t)nc * j->ces);
    }
    blas_free(j->ctx, tile);
    blas_free(j->ctx, sp);
    blas_dnnl_release(p);
    if (s != dnnl_success) atomic_store(&j->failed, 1);
}

/* Indices [b, e) of the (column block, row) pairs, block-major: each block's rows run as
 * one slice. */
static void dnnl_slice(void *arg, int64_t b, int64_t e)
{
    dnnl_job *j = arg;
    blas_dnnl_threads(1); /* the pool splits the work */
    for (int64_t i = b; i < e;) {
        int64_t cb = i / j->M, r0 = i - cb * j->M, r1 = e - cb * j->M < j->M ? e - cb * j->M : j->M;
        dnnl_block(j, cb, r0, r1);
        i = cb * j->M + r1;
    }
}

/* Column block width: with several threads, C's columns are cut into up to one block per
 * thread (at least 64 wide, a multiple of 16, AMX's tile width). Blocks rather than row
 * slices because every execution packs the part of B it reads into the VNNI layout the
 * bf16 instructions take: row slices each pack all of B (16 threads on MiniLM's
 * [640, 384] x [384, 1536] packed it 16 times, more work than their share of the
 * product), blocks pack B once between them and only re-read A, which is small here. */
static int64_t column_block(const blas_ctx *c, int64_t N)
{
    int64_t t = c->pool ? c->nthreads : 1, nb = t < N / 64 ? t : N / 64;
    if (nb < 2) return N;
    int64_t w = (N + nb - 1) / nb;
    w = (w + 15) / 16 * 16;
    return w < 64 ? 64 : w >= N ? N : w;
}

/* A dense copy of v in scratch (same dtype), or NULL on OOM. */
static void *dense_copy(blas_ctx *c, const ff_view *v, ff_view *out)
{
    int64_t n = ff_view_numel(v);
    void *mem = blas_scratch(c, (size_t)n * 2);
    if (!mem) return NULL;
    *out = blas_f32_view(mem, v); /* dense strides; the dtype is set back below */
    out->dtype = v->dtype;
    if (blas_copy(c, out, v)) {
        blas_free(c, mem);
        return NULL;
    }
    return mem;
}

/* The linear entry's activation as a oneDNN eltwise post-op; -1 for one it lacks. */
static int post_of(int act)
{
    switch (act) {
    case FF_LINEAR_NO_ACT: return 0;
    case FF_UNARY_RELU: return dnnl_eltwise_relu;
    case FF_UNARY_GELU_ERF: return dnnl_eltwise_gelu_erf;
    case FF_UNARY_GELU_TANH: return dnnl_eltwise_gelu_tanh;
    case FF_UNARY_TANH: return dnnl_eltwise_tanh;
    case FF_UNARY_SIGMOID: return dnnl_eltwise_logistic;
    case FF_UNARY_SILU: return dnnl_eltwise_swish;
    default: return -1;
    }
}

int blas_half_matmul_dnnl(blas_ctx *c, const ff_view *dst, const ff_view *a, const ff_view *b, const ff_view *bias,
                          int act)
{
    int r = dst->ndim, post = post_of(act);
    if (dst->dtype != FF_BF16 || r < 2 || a->ndim != r || b->ndim != r || post < 0) return 0;
    if (bias && (bias->dtype != FF_BF16 || bias->strides[r - 1] != 1)) return 0; /* oneDNN's bias row: unit stride */
    int64_t M = dst->shape[r - 2], N = dst->shape[r - 1], K = a->shape[r - 1];
    for (int d = 0; d < r - 2; d++) /* blas_matmul reports a mismatch; broadcast is a stride of 0 */
        if (a->shape[d] != dst->shape[d] || b->shape[d] != dst->shape[d]) return 0;
    if (a->shape[r - 2] != M || b->shape[r - 2] != K || b->shape[r - 1] != N || K == 0 || M * N * K < DNNL_MIN_MNK)
        return 0;
    pthread_once(&enabled_once, enabled_init);
    if (!enabled) return 0;
    int64_t nbatch = ff_view_numel(dst) / (M * N);
    /* the layouts first, so that a decline costs nothing */
    ff_view av = *a, bv = *b;
    void *amem = NULL, *bmem = NULL;
    int64_t ars = a->strides[r - 2], acs = a->strides[r - 1], brs = b->strides[r - 2], bcs = b->strides[r - 1];
    int pa = !plain_layout(M, K, &ars, &acs), pb = !plain_layout(K, N, &brs, &bcs);
    /* can oneDNN do this fast? asked once, for the whole M, on this thread */
    mm_mat A = {NULL, pa ? K : ars, pa ? 1 : acs}, B = {NULL, pb ? N : brs, pb ? 1 : bcs};
    /* oneDNN writes dst itself when it is row-major and not an operand's buffer (slices
     * of C written while A or B is still read) */
    int64_t drs = dst->strides[r - 2], dcs = dst->strides[r - 1];
    int direct = plain_layout(M, N, &drs, &dcs) && dcs == 1 && dst->buf != a->buf && dst->buf != b->buf;
    int64_t ldc = direct ? drs : N;
    dnnl_job j = {.ctx = c, .M = M, .N = N, .K = K, .nbatch = nbatch, .cbw = N, .A = A, .B = B, .ldc = ldc,
                  .ces = direct ? 2 : 4, .post = post,
                  .bias = bias ? (const uint16_t *)bias->buf + bias->offset : NULL};
    blas_dnnl_key key = job_key(&j, M, N);
    blas_dnnl_prim *whole = blas_dnnl_acquire(&key, pd_fast);
    int fast = whole && whole->accepted;
    blas_dnnl_release(whole); /* kept in the cache: the one slice of one thread reuses it */
    if (!fast) return 0;
    int st = -1;
    float *C = direct ? NULL : blas_scratch(c, (size_t)(nbatch * M * N) * sizeof(float));
    int64_t *offs = blas_scratch(c, (size_t)nbatch * 3 * sizeof(int64_t));
    if (!direct && !C) goto out;
    if (!offs) goto out;
    if (pa && !(amem = dense_copy(c, a, &av))) goto out;
    if (pb && !(bmem = dense_copy(c, b, &bv))) goto out;
    A.p = (const uint16_t *)av.buf + av.offset, B.p = (const uint16_t *)bv.buf + bv.offset;
    /* batch offsets in row-major order (a broadcast dim has stride 0) */
    int64_t idx[FF_MAX_DIMS] = {0}, ao = 0, bo = 0, co = 0;
    for (int64_t n = 0; n < nbatch; n++) {
        offs[3 * n] = ao, offs[3 * n + 1] = bo, offs[3 * n + 2] = direct ? co : n * M * N;
        for (int d = r - 3; d >= 0; d--) {
            int64_t sa = av.strides[d], sb = bv.strides[d], sc = dst->strides[d];
            if (++idx[d] < dst->shape[d]) {
                ao += sa, bo += sb, co += sc;
                break;
            }
            idx[d] = 0, ao -= sa * (dst->shape[d] - 1), bo -= sb * (dst->shape[d] - 1), co -= sc * (dst->shape[d] - 1);
        }
    }
    j.A.p = A.p, j.B.p = B.p, j.offs = offs;
    j.C = direct ? (char *)dst->buf + (size_t)dst->offset * 2 : (char *)C;
    atomic_init(&j.failed, 0);
    int64_t min_par = M * N * K >= (1 << 20) ? 64 : INT64_MAX;
    if (min_par != INT64_MAX && (j.cbw = column_block(c, N)) < N) {
        /* only where a block is as fast as the whole (oneDNN's pick for it is brgemm too):
         * its jit gemm on bf16 is 10-100x slower */
        blas_dnnl_key bk = job_key(&j, M, j.cbw);
        blas_dnnl_prim *bp = blas_dnnl_acquire(&bk, pd_fast);
        if (!bp || !bp->accepted) j.cbw = N;
        blas_dnnl_release(bp);
    }
    int64_t nblocks = (N + j.cbw - 1) / j.cbw, align = nblocks > 1 && M < 32 ? M : 32;
    if (nblocks > 1 && min_par != INT64_MAX) min_par = 2 * align; /* a slice: one aligned run of pairs */
    else if (min_par != INT64_MAX) min_par = 256; /* row slices only: each packs all of B, so >= 128 rows */
    blas_parallel_for(c, M * nblocks, min_par, align, dnnl_slice, &j);
    /* C unwritten, partial or computed from a subnormal read as zero: the caller
     * recomputes it (dst is no operand's buffer, so nothing it reads was overwritten) */
    st = atomic_load(&j.failed) ? 0 : 1;
    if (st == 1 && !direct) {
        ff_view cv = blas_f32_view(C, dst);
        blas_half_convert(c, dst, &cv);
    }
out:
    blas_free(c, bmem);
    blas_free(c, amem);
    blas_free(c, offs);
    blas_free(c, C);
    return st;
}
#else
int blas_half_matmul_dnnl(blas_ctx *c, const ff_view *dst, const ff_view *a, const ff_view *b, const ff_view *bias,
                          int act)
{
    (void)c, (void)dst, (void)a, (void)b, (void)bias, (void)act;
    return 0;
}
#endif
