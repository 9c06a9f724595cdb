/*
 * Binary elementwise ops. Supported (op, dtype) exactly as the reference: ADD..LOGICAL_XOR
 * on F32/F64/I32/I64/U8 and on BOOL but SUB, DIV, POW, FMOD; BITWISE_AND/OR/XOR on
 * I32/I64/U8/BOOL (bits of the two's complement value; on bool the logical and/or/xor).
 * Comparisons and logical ops write BOOL (ff_binary_op_writes_bool).
 *
 * Fast paths, per run of the coalesced innermost dim, in three shapes: all contiguous,
 * "contiguous op scalar" (b's stride 0: a broadcast scalar or a column broadcast) and
 * "scalar op contiguous"; a row broadcast arrives as contiguous runs. Typed loops:
 * f32/f64 add sub mul div maximum minimum pow and comparisons, i32/i64 add sub mul
 * (wrapping through unsigned arithmetic), bitwise and/or/xor on i32/i64/u8/bool. f32 + - * / in float equal the reference's
 * double-then-round results exactly (double rounding is innocuous for these).
 * Everything else goes through the reference's per-element double/int64 rules.
 */
#include "blas_complex.h"

int blas_binary_supported(ff_binary_op op, ff_dtype t) { return ffb_binary_supported(op, t); }

/* ---- typed kernels ------------------------------------------------------------------- */
typedef void (*vv_fn)(int64_t n, void *d, const void *a, const void *b);
typedef void (*vs_fn)(int64_t n, void *d, const void *a, const void *b); /* b is one element */
typedef void (*sv_fn)(int64_t n, void *d, const void *a, const void *b); /* a is one element */
typedef void (*gg_fn)(int64_t n, void *d, int64_t ds, const void *a, int64_t as, const void *b, int64_t bs);
typedef struct blas_kern {
    vv_fn vv;
    vs_fn vs;
    sv_fn sv;
    gg_fn gg;
} kern;

#define KERNEL(NAME, T, TD, EXPR)                                                                 \
    BLAS_CLONES static void NAME##_vv(int64_t n, void *vd, const void *va, const void *vb)         \
    {                                                                                             \
        TD *d = vd;                                                                               \
        const T *pa = va, *pb = vb;                                                               \
        for (int64_t i = 0; i < n; i++) {                                                         \
            T x = pa[i], y = pb[i];                                                               \
            d[i] = (TD)(EXPR);                                                                    \
        }                                                                                         \
    }                                                                                             \
    BLAS_CLONES static void NAME##_vs(int64_t n, void *vd, const void *va, const void *vb)         \
    {                                                                                             \
        TD *d = vd;                                                                               \
        const T *pa = va;                                                                         \
        const T y = *(const T *)vb;                                                               \
        for (int64_t i = 0; i < n; i++) {                                                         \
            T x = pa[i];                                                                          \
            d[i] = (TD)(EXPR);                                                                    \
        }                                                                                         \
    }                                                                                             \
    BLAS_CLONES static void NAME##_sv(int64_t n, void *vd, const void *va, const void *vb)         \
    {                                                                                             \
        TD *d = vd;                                                                               \
        const T *pb = vb;                                                                         \
        const T x = *(const T *)va;                                                               \
        for (int64_t i = 0; i < n; i++) {                                                         \
            T y = pb[i];                                                                          \
            d[i] = (TD)(EXPR);                                                                    \
        }                                                                                         \
    }                                                                                             \
    static void NAME##_gg(int64_t n, void *vd, int64_t ds, const void *va, int64_t as, const void *vb, \
                          int64_t bs)                                                             \
    {                                                                                             \
        TD *d = vd;                                                                               \
        const T *pa = va, *pb = vb;                                                               \
        for (int64_t i = 0; i < n; i++) {                                                         \
            T x = pa[i * as], y = pb[i * bs];                                                     \
            d[i * ds] = (TD)(EXPR);                                                               \
        }                                                                                         \
    }                                                                                             \
    static const kern NAME = {NAME##_vv, NAME##_vs, NAME##_sv, NAME##_gg};

/* NaN-propagating maximum/minimum with maximum(-0, +0) = +0, minimum(-0, +0) = -0 */
#define FMAX(x, y) ((x) != (x) ? (x) : (y) != (y) ? (y) : (x) == (y) ? (signbit(x) ? (y) : (x)) : ((x) > (y) ? (x) : (y)))
#define FMIN(x, y) ((x) != (x) ? (x) : (y) != (y) ? (y) : (x) == (y) ? (signbit(x) ? (x) : (y)) : ((x) < (y) ? (x) : (y)))

#define FLOAT_KERNELS(S, T)                                    \
    KERNEL(add_##S, T, T, x + y)                               \
    KERNEL(sub_##S, T, T, x - y)                               \
    KERNEL(mul_##S, T, T, x * y)                               \
    KERNEL(div_##S, T, T, x / y)                               \
    KERNEL(max_##S, T, T, FMAX(x, y))                          \
    KERNEL(min_##S, T, T, FMIN(x, y))                          \
    KERNEL(eq_##S, T, uint8_t, x == y)                         \
    KERNEL(ne_##S, T, uint8_t, x != y)                         \
    KERNEL(lt_##S, T, uint8_t, x < y)                          \
    KERNEL(le_##S, T, uint8_t, x <= y)                         \
    KERNEL(gt_##S, T, uint8_t, x > y)                          \
    KERNEL(ge_##S, T, uint8_t, x >= y)

FLOAT_KERNELS(f32, float)
FLOAT_KERNELS(f64, double)
/* pow: the reference's pow in double, rounded once. Its commonest call by far is a broadcast
 * exponent of 2 (x.pow(2), x ** 2), and in f32 0.5 (x ** 0.5): x * x and sqrt there, vectorised,
 * equal to the reference exactly (a product of two floats is exact in double, pow(x, 2) is
 * x * x in glibc's double; sqrtf equals (float)pow((double)x, 0.5) on every float, checked
 * exhaustively). pow(-0, 0.5) = +0 and pow(-inf, 0.5) = +inf where sqrt gives -0 and NaN.
 * f32 x ** 3 (GPT-2's tanh GELU) is x * x * x in double, one rounding of an exact square's
 * product, then rounded to float: (float)pow((double)x, 3) on every float, checked exhaustively. */
KERNEL(pow_f32, float, float, (float)pow((double)x, (double)y))
KERNEL(pow_f64, double, double, pow(x, y))
#define POW_VS(S, T, F32)                                                                         \
    BLAS_CLONES static void pow_##S##_vs_fast(int64_t n, void *vd, const void *va, const void *vb) \
    {                                                                                             \
        T *d = vd;                                                                                \
        const T *pa = va;                                                                         \
        const T y = *(const T *)vb;                                                               \
        if (y == 2) {                                                                             \
            for (int64_t i = 0; i < n; i++) d[i] = pa[i] * pa[i];                                 \
        } else if (F32 && y == 3) {                                                              \
            for (int64_t i = 0; i < n; i++) d[i] = (T)((double)pa[i] * pa[i] * pa[i]);            \
        } else if (F32 && y == (T)0.5) {                                                         \
            for (int64_t i = 0; i < n; i++) {                                                     \
                T x = pa[i];                                                                      \
                d[i] = x == -(T)INFINITY ? (T)INFINITY : (T)sqrt(x) + (T)0;                       \
            }                                                                                     \
        } else {                                                                                  \
            pow_##S.vs(n, vd, va, vb);                                                            \
        }                                                                                         \
    }                                                                                             \
    static const kern pow_##S##_fast = {pow_##S##_vv, pow_##S##_vs_fast, pow_##S##_sv, pow_##S##_gg};
POW_VS(f32, float, 1)
POW_VS(f64, double, 0)
/* wrap-around through the unsigned type; converting back is modulo 2^N in GCC/Clang */
KERNEL(add_i32, int32_t, int32_t, (uint32_t)x + (uint32_t)y)
KERNEL(sub_i32, int32_t, int32_t, (uint32_t)x - (uint32_t)y)
KERNEL(mul_i32, int32_t, int32_t, (uint32_t)x * (uint32_t)y)
KERNEL(add_i64, int64_t, int64_t, (uint64_t)x + (uint64_t)y)
KERNEL(sub_i64, int64_t, int64_t, (uint64_t)x - (uint64_t)y)
KERNEL(mul_i64, int64_t, int64_t, (uint64_t)x * (uint64_t)y)
/* bitwise ops on the bits (unsigned types: the same bits as two's complement); bool
 * reads any non-zero byte as true, like the reference, and writes 0/1 */
#define BITWISE_KERNELS(S, T)                   \
    KERNEL(band_##S, T, T, x & y)               \
    KERNEL(bor_##S, T, T, x | y)                \
    KERNEL(bxor_##S, T, T, x ^ y)
BITWISE_KERNELS(i32, uint32_t)
BITWISE_KERNELS(i64, uint64_t)
BITWISE_KERNELS(u8, uint8_t)
KERNEL(band_b, uint8_t, uint8_t, (x != 0) & (y != 0))
KERNEL(bor_b, uint8_t, uint8_t, (x != 0) | (y != 0))
KERNEL(bxor_b, uint8_t, uint8_t, (x != 0) ^ (y != 0))

static const kern *fast_kernel(ff_binary_op op, ff_dtype t)
{
#define FLOAT_CASES(S)                                                              \
    switch (op) {                                                                   \
    case FF_BINARY_ADD: return &add_##S;                                            \
    case FF_BINARY_SUB: return &sub_##S;                                            \
    case FF_BINARY_MUL: return &mul_##S;                                            \
    case FF_BINARY_DIV: return &div_##S;                                            \
    case FF_BINARY_MAXIMUM: return &max_##S;                                        \
    case FF_BINARY_MINIMUM: return &min_##S;                                        \
    case FF_BINARY_EQ: return &eq_##S;                                              \
    case FF_BINARY_NE: return &ne_##S;                                              \
    case FF_BINARY_LT: return &lt_##S;                                              \
    case FF_BINARY_LE: return &le_##S;                                              \
    case FF_BINARY_GT: return &gt_##S;                                              \
    case FF_BINARY_GE: return &ge_##S;                                              \
    case FF_BINARY_POW: return &pow_##S##_fast;                                     \
    default: return NULL;                                                           \
    }
    if (t == FF_F32) FLOAT_CASES(f32)
    if (t == FF_F64) FLOAT_CASES(f64)
#undef FLOAT_CASES
#define BITWISE_CASES(S)                                                            \
    switch (op) {                                                                   \
    case FF_BINARY_BITWISE_AND: return &band_##S;                                   \
    case FF_BINARY_BITWISE_OR: return &bor_##S;                                     \
    case FF_BINARY_BITWISE_XOR: return &bxor_##S;                                   \
    default: break;                                                                 \
    }
    if (t == FF_I32) {
        BITWISE_CASES(i32)
        return op == FF_BINARY_ADD ? &add_i32 : op == FF_BINARY_SUB ? &sub_i32 : op == FF_BINARY_MUL ? &mul_i32 : NULL;
    }
    if (t == FF_I64) {
        BITWISE_CASES(i64)
        return op == FF_BINARY_ADD ? &add_i64 : op == FF_BINARY_SUB ? &sub_i64 : op == FF_BINARY_MUL ? &mul_i64 : NULL;
    }
    if (t == FF_U8) BITWISE_CASES(u8)
    if (t == FF_BOOL) BITWISE_CASES(b)
#undef BITWISE_CASES
    return NULL;
}

/* ---- the reference rules, per element: ffb_binary_f64 / ffb_binary_i64 (ff_backend_scalar.h) ---- */

static void seg_fast(void *varg, int64_t n, char *const *p, const int64_t *s)
{
    const blas_elem_plan *arg = varg;
    const kern *k = arg->k;
    int streamed = 0;
    if (s[0] == 1 && s[1] == 1 && s[2] == 1) {
        if (arg->t == FF_F32)
            streamed = blas_stream_binary_f32((ff_binary_op)arg->op, n, (float *)p[0], (const float *)p[1], (const float *)p[2]);
        if (!streamed) k->vv(n, p[0], p[1], p[2]);
    } else if (s[0] == 1 && s[1] == 1 && s[2] == 0) k->vs(n, p[0], p[1], p[2]);
    else if (s[0] == 1 && s[1] == 0 && s[2] == 1) k->sv(n, p[0], p[1], p[2]);
    else k->gg(n, p[0], s[0], p[1], s[1], p[2], s[2]);
}

static void seg_generic(void *varg, int64_t n, char *const *p, const int64_t *s)
{
    const blas_elem_plan *a = varg;
    int64_t es = (int64_t)ff_dtype_size(a->t);
    int64_t ds = s[0] * (int64_t)ff_dtype_size(a->dt), as = s[1] * es, bs = s[2] * es;
    ff_binary_op op = (ff_binary_op)a->op;
    if (blas_is_float(a->t)) {
        for (int64_t i = 0; i < n; i++)
            ffb_st_f64(p[0] + i * ds, a->dt, ffb_binary_f64(op, ffb_ld_f64(p[1] + i * as, a->t), ffb_ld_f64(p[2] + i * bs, a->t)));
    } else {
        for (int64_t i = 0; i < n; i++)
            ffb_st_i64(p[0] + i * ds, a->dt, ffb_binary_i64(op, ffb_ld_i64(p[1] + i * as, a->t), ffb_ld_i64(p[2] + i * bs, a->t)));
    }
}

void blas_binary_plan(blas_elem_plan *pl, ff_binary_op op, ff_dtype t)
{
    memset(pl, 0, sizeof *pl);
    pl->op = op;
    pl->t = t;
    pl->dt = ffb_binary_writes_bool(op) ? FF_BOOL : t;
    pl->k = fast_kernel(op, t);
    pl->seg = pl->k ? seg_fast : seg_generic;
}

static char *first_element(const ff_view *v)
{
    return (char *)v->buf + v->offset * (int64_t)ff_dtype_size(v->dtype);
}

/* Short rows, walked as segments, cost a walk step and seg_fast's dispatch each: [6000, 16]
 * * [6000, 1] took 49 us against 14 for PyTorch. Two dims left after coalescing, dst dense,
 * rows of fewer than ROWS_MAX elements in which a and b step by 1 or 0 (a row or column
 * broadcast): the row's kernel chosen once and called row after row. */
#define ROWS_MAX 256
typedef struct rows_arg {
    const kern *k;
    const blas_walk *w;
    int kind;
} rows_arg;

static void rows_task(void *varg, int64_t begin, int64_t end)
{
    const rows_arg *t = varg;
    const blas_walk *w = t->w;
    int64_t cols = w->shape[1], ds = cols * w->esize[0];
    int64_t as = w->strides[1][0] * w->esize[1], bs = w->strides[2][0] * w->esize[2];
    char *d = w->base[0] + begin * ds;
    const char *a = w->base[1] + begin * as, *b = w->base[2] + begin * bs;
    vv_fn f = t->kind == 0 ? t->k->vv : t->kind == 1 ? t->k->vs : t->k->sv; /* the run's shape, once */
    for (int64_t r = begin; r < end; r++, d += ds, a += as, b += bs) f(cols, d, a, b);
}

static int rows_form(blas_ctx *c, const blas_walk *w, const kern *k)
{
    if (w->ndim != 2 || w->numel == 0 || w->shape[1] >= ROWS_MAX || w->strides[0][1] != 1 ||
        w->strides[0][0] != w->shape[1])
        return 0;
    int64_t as = w->strides[1][1], bs = w->strides[2][1];
    int kind = as == 1 && bs == 1 ? 0 : as == 1 && bs == 0 ? 1 : as == 0 && bs == 1 ? 2 : -1;
    if (kind < 0) return 0;
    rows_arg t = {k, w, kind};
    blas_parallel_for(c, w->shape[0], BLAS_PAR_MIN / w->shape[1] + 1, 1, rows_task, &t);
    return 1;
}

ff_status blas_binary(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    ff_status st;
    /* F16/BF16: the ops f32 takes, computed by blas_half.c after the same checks */
    int half = a && ffb_is_half(a->dtype);
    ff_status (*check)(void *, const char *, const char *, const ff_view *) = half ? blas_check_storage_view : blas_check_view;
    if ((st = check(ctx, "binary", "dst", dst)) || (st = check(ctx, "binary", "a", a)) || (st = check(ctx, "binary", "b", b)))
        return st;
    if ((unsigned)op >= FF_BINARY_COUNT) return blas_error(ctx, FF_ERR_INVALID, "cpu_blas binary: invalid op %d", (int)op);
    if (ff_dtype_is_complex(a->dtype)) return blas_complex_binary(ctx, op, dst, a, b);
    if (a->dtype != b->dtype)
        return blas_error(ctx, FF_ERR_INVALID, "cpu_blas binary: operands differ in dtype (%s and %s)",
                          blas_dtype_name(a->dtype), blas_dtype_name(b->dtype));
    if (!blas_binary_supported(op, half ? FF_F32 : a->dtype))
        return blas_error(ctx, FF_ERR_UNSUPPORTED, "cpu_blas binary: op %d is not supported on %s", (int)op,
                          blas_dtype_name(a->dtype));
    ff_dtype want = ffb_binary_writes_bool(op) ? FF_BOOL : a->dtype;
    if (dst->dtype != want)
        return blas_error(ctx, FF_ERR_INVALID, "cpu_blas binary: op %d on %s writes %s, but dst is %s", (int)op,
                          blas_dtype_name(a->dtype), blas_dtype_name(want), blas_dtype_name(dst->dtype));
    if (!blas_same_shape(dst, a)) return blas_shape_error(ctx, "binary", dst, a);
    if (!blas_same_shape(dst, b)) return blas_shape_error(ctx, "binary", dst, b);
    if (half) return blas_half_binary(ctx, op, dst, a, b);

    blas_elem_plan arg;
    blas_binary_plan(&arg, op, a->dtype);
    int64_t n = ff_view_numel(dst);
    if (arg.k && n <= BLAS_PAR_MIN && blas_view_contiguous(dst) && blas_view_contiguous(a) && blas_view_contiguous(b)) {
        /* small and dense, the per-op overhead case: one call, no walk, no pool */
        char *p[3] = {first_element(dst), first_element(a), first_element(b)};
        const int64_t s1[3] = {1, 1, 1};
        seg_fast(&arg, n, p, s1);
        return FF_OK;
    }
    const ff_view *vs[] = {dst, a, b};
    blas_walk w;
    blas_walk_init(&w, dst->ndim, dst->shape, 3, vs);
    if (arg.k && rows_form(ctx, &w, arg.k)) return FF_OK;
    blas_walk_run(ctx, &w, BLAS_PAR_MIN, arg.seg, &arg);
    return FF_OK;
}
