/*
 * Private header of the cpu_blas backend: the context, error reporting, view checks,
 * the dtype conversion rules, the strided segment walker and the thread pool API.
 *
 * Semantics are those of the reference backend (backends/cpu) and include/ff/backend_abi.h:
 *   - integer arithmetic wraps (computed through unsigned types, never signed overflow);
 *   - double -> integer: NaN -> 0, truncate toward zero, saturate to int64, then I32
 *     clamps and U8 wraps modulo 256; anything -> BOOL is (x != 0);
 *   - int64 -> narrower integer wraps; f32 results are rounded once from the exact or
 *     double-precision value, except the vectorized transcendental kernels (blas_vmath.c),
 *     which are accurate to a few ulp.
 * Fast paths exist for the common (op, dtype, layout) triples; everything else takes
 * a generic path with the same rules, so supports() can answer "yes" for every dtype
 * the reference computes on.
 *
 * The scalar rules (conversions, wrap-around, per-element formulas) are the shared ones
 * in backends/common/ff_backend_scalar.h (ffb_*), so they cannot drift from the reference.
 *
 * Depends only on include/ff/backend_abi.h (+ the header-only backends/common/),
 * libc/libm, pthreads and (matmul) CBLAS.
 */
#ifndef FF_BLAS_IMPL_H
#define FF_BLAS_IMPL_H

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "ff/backend_abi.h"
#include "ff_backend_checks.h"

/* Compile a function three times (AVX-512, AVX2+FMA, baseline x86-64) and pick one at
 * load time through an ifunc: one binary, full speed on the machine it runs on. gcc
 * only: clang 14 names the dispatcher "f.ifunc", so calls from other files to "f" stay
 * unresolved and the plugin fails to load; clang builds get the baseline code. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__) && /* ifunc resolvers run before the sanitizer runtime */ \
    !defined(FF_BLAS_NO_CLONES)
#define BLAS_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define BLAS_CLONES
#endif

/* Below this many elements an op runs on the calling thread: waking workers costs more
 * than the work (about 2-5 us per wake-up on this class of machine). */
#define BLAS_PAR_MIN 32768

typedef struct blas_pool blas_pool;
typedef struct blas_alloc_state blas_alloc_state;

typedef struct blas_ctx {
    const ff_host_api *host;
    int nthreads;            /* FF_NUM_THREADS, default: cores available */
    blas_pool *pool;         /* NULL when nthreads == 1 */
    blas_alloc_state *alloc; /* the caching allocator */
    int own_gemm;            /* f32 matmul through blas_gemm.c instead of OpenBLAS */
    int dnnl_gemm;           /* f32 matmul through oneDNN's dnnl_sgemm (blas_gemm_pick) */
    int skinny_gemm;         /* BLAS_SKINNY_*: few-row x W^T in place (FF_GEMM unset, blas_skinny_pick) */
    int wide_vectors;        /* hand kernels in 16-lane (zmm) form: AVX-512F, FF_BLAS_ISA not avx2 */
} blas_ctx;

/* Formats a message for host->set_error and returns st. NULL ctx: returns st only. */
ff_status blas_error(void *ctx, ff_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static inline const char *blas_dtype_name(ff_dtype t) { return ffb_dtype_name(t); }
static inline int blas_dtype_ok(ff_dtype t) { return ffb_dtype_ok(t); }
static inline int blas_is_float(ff_dtype t) { return ffb_is_float(t); }

/* Well-formed view of a computable dtype (FF_ERR_UNSUPPORTED for F16/BF16). */
ff_status blas_check_view(void *ctx, const char *entry, const char *what, const ff_view *v);
/* blas_check_view that also takes F16/BF16: for copy and fill, which move half values. */
ff_status blas_check_storage_view(void *ctx, const char *entry, const char *what, const ff_view *v);
int blas_same_shape(const ff_view *a, const ff_view *b);
ff_status blas_shape_error(void *ctx, const char *entry, const ff_view *a, const ff_view *b);

/* ---- conversion rules: ffb_u64_to_i64, ffb_wrap_i32, ffb_f64_to_i64/i32 and the
 * element loads/stores ffb_ld_f64, ffb_ld_i64, ffb_st_f64, ffb_st_i64 (p is the byte
 * address of the element), all from ff_backend_scalar.h. */

/* ---- strided segment walker (blas_walk.c) ------------------------------------- */
/* Up to 4 views walked together over one shape. blas_walk_init drops size-1 dims and
 * merges dims that are contiguous in every view, so a contiguous tensor becomes one
 * segment of numel elements and a row broadcast becomes rows with an inner stride of 1
 * (and 0 for the broadcast operand's outer dim). The walk hands the callback runs of
 * the innermost dim: byte pointers p[k] to the first element and element strides s[k]. */
#define BLAS_MAX_VIEWS 4
typedef void (*blas_seg_fn)(void *arg, int64_t n, char *const *p, const int64_t *s);

typedef struct blas_walk {
    int ndim, nviews;
    int64_t numel;
    int64_t shape[FF_MAX_DIMS];
    int64_t strides[BLAS_MAX_VIEWS][FF_MAX_DIMS]; /* elements */
    char *base[BLAS_MAX_VIEWS];                   /* buf + offset, in bytes */
    int64_t esize[BLAS_MAX_VIEWS];
} blas_walk;

/* Walks `shape` (rank ndim); every view must have at least ndim dims. */
void blas_walk_init(blas_walk *w, int ndim, const int64_t *shape, int nviews, const ff_view *const *views);
/* Runs fn over the row-major logical elements [begin, end). */
void blas_walk_range(const blas_walk *w, int64_t begin, int64_t end, blas_seg_fn fn, void *arg);
/* The whole walk, split across the pool when numel >= min_par. */
void blas_walk_run(blas_ctx *c, const blas_walk *w, int64_t min_par, blas_seg_fn fn, void *arg);

/* Row-major contiguous (size-1 dims may have any stride); 0-d counts. */
static inline int blas_view_contiguous(const ff_view *v)
{
    int64_t expect = 1;
    for (int d = v->ndim - 1; d >= 0; d--) {
        if (v->shape[d] != 1 && v->strides[d] != expect) return 0;
        expect *= v->shape[d];
    }
    return 1;
}

/* ---- thread pool (blas_threads.c) --------------------------------------------- */
typedef void (*blas_task_fn)(void *arg, int64_t begin, int64_t end);
blas_pool *blas_pool_create(int nthreads);
void blas_pool_destroy(blas_pool *p);
/* Runs fn over [0, n) split in chunks (multiples of `align`) across the pool's threads
 * and the caller; serial when n < min_par, when there is one thread, or when the pool is
 * busy (a nested or concurrent call). Returns after every chunk has finished. */
void blas_parallel_for(blas_ctx *c, int64_t n, int64_t min_par, int64_t align, blas_task_fn fn, void *arg);
int blas_default_threads(void);

/* ---- allocator (blas_alloc.c) --------------------------------------------------- */
blas_alloc_state *blas_alloc_create(void);
void blas_alloc_destroy(blas_alloc_state *a);
void *blas_alloc(void *ctx, size_t nbytes);
void blas_free(void *ctx, void *buf);
ff_status blas_memory_stats(void *ctx, size_t *in_use, size_t *cached, size_t *peak);
ff_status blas_empty_cache(void *ctx);
/* Scratch memory for kernels (through the cache); NULL + error on failure. */
void *blas_scratch(blas_ctx *c, size_t nbytes);

/* ---- vectorized f32 math (blas_vmath.c) ---------------------------------------- */
/* Each maps n contiguous floats; dst may equal src. */
void blas_vexp_f32(int64_t n, float *dst, const float *src);
void blas_vlog_f32(int64_t n, float *dst, const float *src);
void blas_vtanh_f32(int64_t n, float *dst, const float *src);
void blas_vsigmoid_f32(int64_t n, float *dst, const float *src);
void blas_vsilu_f32(int64_t n, float *dst, const float *src);
/* What the CPU runs, asked once (an atomic cache: any thread may ask first). */
#define BLAS_CPU_AVX2_FMA 1
#define BLAS_CPU_AVX512F 2
#define BLAS_CPU_F16C 4
#define BLAS_CPU_VNNI 8 /* AVX512_VNNI or AVX-VNNI: u8 x s8 dot products without s16 saturation */
int blas_cpu_flags(void);
/* erf and erf-GELU (blas_verf.c): erf on f32 results through glibc's vectorized double
 * erf; GELU for every dtype, and erf for results rounded to F16/BF16 after, on f32 lanes */
void blas_verf_f32(int64_t n, float *dst, const float *src);
void blas_verf_half(int64_t n, float *dst, const float *src);
void blas_vgelu_erf_f32(int64_t n, float *dst, const float *src);
/* 0 scalar, 1 avx2 + f16c, 2 avx512f: the half paths' ISA (FF_HALF_ISA caps it) */
int blas_half_isa(void);
/* dst = exp(src - shift); returns the sum of dst accumulated in double. */
double blas_vexp_shift_sum_f32(int64_t n, float *dst, const float *src, float shift);
/* Sums in double with blocked multiple accumulators + pairwise combination. */
double blas_vsum_f32(int64_t n, const float *x);
double blas_vsum_f64(int64_t n, const double *x);
/* NaN-propagating max/min of n >= 1 contiguous values. */
float blas_vmax_f32(int64_t n, const float *x);
float blas_vmin_f32(int64_t n, const float *x);

/* ---- F16/BF16 (blas_half.c, blas_half_wide.c) ------------------------------------ */
/* Every half result is the f32 entry's on the widened operands, rounded once (the core's
 * f32 detour, bit for bit). Conversions of n contiguous values, vectorized by what the
 * CPU has (FF_HALF_ISA=scalar|avx2 caps it); t is FF_F16 or FF_BF16. */
void blas_half_to_f32(ff_dtype t, int64_t n, float *d, const void *x);
void blas_f32_to_half(ff_dtype t, int64_t n, void *d, const float *x);
/* n contiguous f64 into F16/BF16 rounded once (the reference's rule), and back (exact). */
void blas_f64_to_half(ff_dtype t, int64_t n, void *d, const double *x);
void blas_half_to_f64(ff_dtype t, int64_t n, double *d, const void *x);
const char *blas_half_isa_name(void);
/* dst = src over equal shapes, one side F32 and the other F16/BF16, any strides. */
void blas_half_convert(blas_ctx *c, const ff_view *dst, const ff_view *src);
int blas_half_is_conversion(ff_dtype dt, ff_dtype st);
/* A dense row-major F32 view of like's shape over buf. */
ff_view blas_f32_view(float *buf, const ff_view *like);
/* unary/binary on half views the entries have checked */
ff_status blas_half_unary(void *ctx, ff_unary_op op, const ff_view *dst, const ff_view *src);
ff_status blas_half_binary(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a, const ff_view *b);
ff_status blas_half_reduce(void *ctx, ff_reduce_op op, const ff_view *dst, const ff_view *src, uint32_t axes_mask);
ff_status blas_half_matmul(void *ctx, const ff_view *dst, const ff_view *a, const ff_view *b);
/* blas_half_dnnl.c: bf16 matmul through oneDNN's matmul primitive when oneDNN runs it on
 * bf16 hardware (AMX, AVX512-BF16), with the linear entry's bias (dst's shape, row stride
 * 0; NULL for none) and activation (FF_LINEAR_NO_ACT for none) as post-ops: 1 done, 0
 * declined (dst untouched), -1 out of memory. */
int blas_half_matmul_dnnl(blas_ctx *c, const ff_view *dst, const ff_view *a, const ff_view *b, const ff_view *bias,
                          int act);
/* blas_half_wide.c: dst = act(a b + bias) for an F16/BF16 dst (the matmul entry's: bias
 * NULL, act FF_LINEAR_NO_ACT): oneDNN (blas_half_matmul_dnnl), else an f32 C from the
 * AVX512-BF16 kernel or the f32 gemm on widened operands, the epilogue on it, one rounding.
 * Arguments checked by the caller. */
ff_status blas_half_product(blas_ctx *c, const ff_view *dst, const ff_view *a, const ff_view *b, const ff_view *bias,
                            int act);
/* blas_linear.c: the optional linear entry, the activations it takes, and its epilogue
 * (y += bias (row stride 0; NULL for none), y = act(y), in place on an F32/F64 y) */
ff_status blas_linear(void *ctx, const ff_view *dst, const ff_view *src, int n_src, int act);
int blas_linear_supported(int act, ff_dtype dtype);
ff_status blas_linear_epilogue(void *ctx, const ff_view *y, const ff_view *bias, int act);
/* 1 if a bf16 of the rows x cols matrix (element strides rs, cs) is subnormal: the bf16
 * instructions read those as zero, so the oneDNN paths decline such operands. */
int blas_bf16_has_subnormal(const uint16_t *p, int64_t rows, int64_t cols, int64_t rs, int64_t cs);
/* blas_half_dot.c: bf16 gemm on AVX512-BF16 (FF_BF16_DOT=0 turns it off): C (M x N, dense
 * f32) = A . B, any strides; 0, -1 on OOM, 1 when an operand holds a subnormal (C is then
 * not the product: the caller takes the f32 gemm). */
int blas_bf16_dot_available(void);
int blas_bf16_dot_gemm(blas_ctx *c, int64_t M, int64_t N, int64_t K, const uint16_t *A, int64_t ars, int64_t acs,
                       const uint16_t *B, int64_t brs, int64_t bcs, float *C);

/* ---- streaming stores (blas_stream.c) ------------------------------------------- */
/* Runs of at least this many elements whose output aliases no input are written with
 * non-temporal stores (AVX-512F only); the functions return 0 when they decline. */
#define BLAS_STREAM_MIN ((int64_t)1 << 20)
int blas_stream_binary_f32(ff_binary_op op, int64_t n, float *d, const float *a, const float *b);
int blas_stream_map_f32(int64_t n, float *d, const float *x, void (*fn)(int64_t, float *, const float *));
/* nbytes from s to d with non-temporal stores, no fence (0: declined, no AVX-512F); call
 * blas_stream_fence() before the data is handed on (the fused entry's outputs). */
int blas_stream_copy(void *d, const void *s, int64_t nbytes);
void blas_stream_fence(void);

/* ---- own AVX-512 sgemm (blas_gemm.c) ------------------------------------------------ */
/* Which sgemm f32 matmul uses (FF_GEMM=dnnl|own|openblas forces one). Unforced: oneDNN
 * when cpu_blas was built with it (as fast as the best OpenBLAS kernel for this CPU,
 * whatever OPENBLAS_CORETYPE says), else the own AVX-512 kernel when the CPU has
 * AVX-512F and OpenBLAS runs a kernel without it (generic, Haswell, Zen), else OpenBLAS. */
typedef enum blas_gemm_kind { BLAS_GEMM_OPENBLAS = 0, BLAS_GEMM_OWN, BLAS_GEMM_DNNL } blas_gemm_kind;
blas_gemm_kind blas_gemm_pick(void);
const char *blas_gemm_name(blas_gemm_kind k);
/* oneDNN's row-major sgemm, single-threaded (the pool splits the work): C = op(A) op(B). */
void blas_sgemm_dnnl(int ta, int tb, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                     int64_t ldb, float *C, int64_t ldc);
/* C = alpha op(A) op(B) + beta C, row-major, single-threaded: oneDNN's sgemm when f32
 * matmul uses it, else OpenBLAS's (the attention entry's tile products). */
void blas_sgemm_ab(const blas_ctx *c, int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                   int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
/* Tells blas_vmath.c whether its 16-lane kernels may run as such (c->wide_vectors); else
 * those with a narrow form (the f32 sum) take it. */
void blas_vmath_set_wide(int wide);
/* C = A W^T for few rows (blas_gemm_skinny.c, in zmm; blas_gemm_skinny_avx2.c, in ymm): A
 * [M, K] and W [N, K] with unit stride along K (leading dimensions lda, ldw), C any strides;
 * W read in place, once, split across the pool. blas_skinny_pick: which form runs on this
 * CPU, asked once, at init (wide: c->wide_vectors, off under FF_BLAS_ISA=avx2, which so
 * asks for the ymm form). blas_skinny_ok: whether it takes this product (c->skinny_gemm, M <=
 * BLAS_SKINNY_MAX_M, acs and brs, A's column and B = W^T's row strides, 1). Returns 0, or
 * -1 on OOM. */
#define BLAS_SKINNY_MAX_M 32
enum { BLAS_SKINNY_OFF, BLAS_SKINNY_ZMM, BLAS_SKINNY_YMM };
int blas_skinny_pick(int wide);
int blas_skinny_ok(const blas_ctx *c, int64_t M, int64_t N, int64_t K, int64_t acs, int64_t brs);
int blas_sgemm_skinny(blas_ctx *c, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *W,
                      int64_t ldw, float *C, int64_t crs, int64_t ccs);
int blas_sgemm_skinny_avx2(blas_ctx *c, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *W,
                           int64_t ldw, float *C, int64_t crs, int64_t ccs);
/* The two forms' common driver: C's columns in blocks of nb, each block(...) of a form
 * with a scratch of `scratch` bytes per row of A, the blocks split across the pool once
 * there are min_blocks per thread. Returns 0, or -1 when a scratch could not be had. */
typedef struct blas_skinny_job {
    blas_ctx *ctx;
    int64_t M, N, K, lda, ldw, crs, ccs;
    const float *A, *W;
    float *C;
    int64_t nb;
    size_t scratch;
    void (*block)(int64_t M, int64_t K, const float *A, int64_t lda, const float *W, int64_t ldw, int64_t n0,
                  int64_t nv, float *C, int64_t crs, int64_t ccs, void *scratch);
    atomic_int failed;
} blas_skinny_job;
int blas_skinny_run(blas_skinny_job *j, int64_t min_blocks);
/* C (M x N, any strides) = A (M x K) . B (K x N), any strides; single-threaded.
 * Returns 0, or -1 on OOM (error set). */
int blas_sgemm_own(blas_ctx *ctx, int64_t M, int64_t N, int64_t K, const float *A, int64_t ars, int64_t acs,
                   const float *B, int64_t brs, int64_t bcs, float *C, int64_t crs, int64_t ccs);

/* ---- what the unary and binary entries run on each strided run ----------------- */
/* A plan holds the run kernel for one (op, dtype): pl->seg(pl, n, p, s) computes n
 * elements, p the byte pointers of {dst, src} (binary: {dst, a, b}) and s their strides
 * in elements. The entries walk their views with it; the fused entry (blas_fused.c) runs
 * the very same plans over contiguous tiles, which keeps it bit-identical to them. */
typedef void (*blas_map_f32_fn)(int64_t n, float *d, const float *x);
typedef void (*blas_map_f64_fn)(int64_t n, double *d, const double *x);
typedef struct blas_kern blas_kern; /* binary's typed loops (blas_binary.c) */
typedef struct blas_elem_plan {
    blas_seg_fn seg;
    int op;               /* ff_unary_op (after ffb_unary_effective) or ff_binary_op */
    ff_dtype t, dt;       /* operand and result dtypes */
    blas_map_f32_fn f32;  /* unary: the vectorized f32 map, when there is one */
    blas_map_f64_fn f64;  /* unary: the f64 loop, when there is one */
    const blas_kern *k;   /* binary: the typed loops, when there are */
} blas_elem_plan;
/* op must be supported on t (blas_unary_supported / blas_binary_supported). */
void blas_unary_plan(blas_elem_plan *pl, ff_unary_op op, ff_dtype t);
void blas_binary_plan(blas_elem_plan *pl, ff_binary_op op, ff_dtype t);

/* ---- entries, one file per family ----------------------------------------------- */
int blas_unary_supported(ff_unary_op op, ff_dtype t);
int blas_binary_supported(ff_binary_op op, ff_dtype t);

ff_status blas_fill(void *ctx, const ff_view *dst, ff_scalar value);
ff_status blas_copy(void *ctx, const ff_view *dst, const ff_view *src);
ff_status blas_where(void *ctx, const ff_view *dst, const ff_view *cond, const ff_view *a, const ff_view *b);
ff_status blas_unary(void *ctx, ff_unary_op op, const ff_view *dst, const ff_view *src);
ff_status blas_binary(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a, const ff_view *b);
ff_status blas_reduce(void *ctx, ff_reduce_op op, const ff_view *dst, const ff_view *src, uint32_t axes_mask);
ff_status blas_matmul(void *ctx, const ff_view *dst, const ff_view *a, const ff_view *b);
ff_status blas_gather(void *ctx, const ff_view *dst, const ff_view *src, const ff_view *index, int axis);
ff_status blas_scatter_add(void *ctx, const ff_view *dst, const ff_view *index, const ff_view *src, int axis);
ff_status blas_random(void *ctx, const ff_view *dst, ff_random_dist dist, uint64_t seed, uint64_t counter_base,
                      double p0, double p1);
ff_status blas_softmax(void *ctx, const ff_view *dst, const ff_view *src, int axis, int want_log);
/* conv2d entries (blas_conv.c, oneDNN); which: 0 forward, 1 backward input, 2 backward weight */
int blas_conv2d_supported(int which, ff_dtype t);
ff_status blas_conv2d(void *ctx, const ff_view *y, const ff_view *x, const ff_view *w, const ff_conv2d_params *p);
ff_status blas_conv2d_backward_input(void *ctx, const ff_view *gx, const ff_view *gy, const ff_view *w,
                                     const ff_conv2d_params *p);
ff_status blas_conv2d_backward_weight(void *ctx, const ff_view *gw, const ff_view *gy, const ff_view *x,
                                      const ff_conv2d_params *p);
ff_status blas_scan(void *ctx, int op, const ff_view *dst, const ff_view *src, int axis);
ff_status blas_argsort(void *ctx, const ff_view *dst, const ff_view *src, int axis, int descending);
ff_status blas_batch_norm(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src,
                          double eps);
ff_status blas_layer_norm(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src,
                          double eps);
ff_status blas_pool2d(void *ctx, int op, const ff_view *dst, const ff_view *src, int n_src,
                      const ff_pool2d_params *p);
ff_status blas_linalg(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src);
/* blas_fft.c: FFTW; init and shutdown count contexts so the last one frees FFTW's planner */
ff_status blas_fft(void *ctx, int op, const ff_view *dst, const ff_view *src, int axis);
void blas_fft_context_up(void);
void blas_fft_context_down(void);
/* blas_attention.c: scaled dot-product attention, flash style (F32, F64, F16, BF16) */
ff_status blas_attention(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src,
                         const ff_attention_params *p);
/* blas_qdyn.c: qmatmul's dynamic mode, x [M, K] F32 (row stride rs, column stride cs)
 * quantized by the ABI's rule. Per tensor (per_row 0) with inv = 1 / a_scale, zero and
 * qmax chosen from blas_qx_range's [lo, hi]; per row, row[m] gets a_scale[m]. Rows
 * [rb, re) go to q dense (row rb first). -1 when out of memory. */
typedef struct blas_qx {
    const float *x;
    int64_t rs, cs, K;
    int per_row;
    float inv, zero, qmax;
    float *row;
} blas_qx;
int blas_qx_range(blas_ctx *c, const blas_qx *x, int64_t M, float *lo, float *hi);
int blas_qx_rows(const blas_qx *x, int64_t rb, int64_t re, uint8_t *q);

/* blas_qmatmul.c: u8 x s8 -> s32 -> f32 through oneDNN's int8 matmul, or an exact loop */
ff_status blas_qmatmul(void *ctx, const ff_view *dst, const ff_view *src, int n_src, const ff_qmatmul_params *p);
/* blas_fused.c: fused elementwise programs, tile by tile through the plans above */
ff_status blas_fused(void *ctx, const ff_fused_program *prog);
/* OpenMP threads for the oneDNN calls made from this thread (blas_gemm.c) */
void blas_dnnl_threads(int n);
/* blas_dnnl_cache.c: drops the idle cached oneDNN matmul primitives (at shutdown) */
void blas_dnnl_cache_clear(void);

/* ---- the row form of gather / scatter_add (blas_index_rows.c) ------------------- */
/* Along axis the index is constant over the trailing dims (stride 0: index_select,
 * embedding, their backward) and both data views hold those dims as one contiguous run
 * of len elements: each index value then moves a whole row. Rows are the index's dims
 * 0..axis, row-major; view 0 is the index, 1 the walked data view (gather's dst,
 * scatter_add's src), 2 the indexed one (gather's src, scatter_add's dst), its axis
 * stride pinned to 0. */
typedef struct blas_index_rows {
    int nd;
    int64_t shape[FF_MAX_DIMS];
    int64_t st[3][FF_MAX_DIMS];
    int64_t off0[3];
    int64_t rows, len, size, step; /* size and step: the indexed view's axis */
    size_t es;
    ff_dtype it, t;
    const char *ibuf;
    char *wbuf, *tbuf;
    int stream; /* gather: rows written with non-temporal stores */
} blas_index_rows;
/* 1 (and f filled) if the checked, rank >= 1 views have the row form. */
int blas_index_rows_init(blas_index_rows *f, const ff_view *walked, const ff_view *table, const ff_view *index,
                         int axis);
/* 1 and *bad = the first index outside [0, size) in row-major order; 0 if none. */
int blas_index_rows_bad(const blas_index_rows *f, int64_t *bad);
/* The copies / adds, split across the pool; every index must have been checked. */
void blas_gather_rows(blas_ctx *c, blas_index_rows *f);
void blas_scatter_add_rows(blas_ctx *c, blas_index_rows *f);

#endif /* FF_BLAS_IMPL_H */
