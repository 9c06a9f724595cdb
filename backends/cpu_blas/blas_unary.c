/*
 * Unary elementwise ops. Supported (op, dtype) exactly as the reference: floats take
 * every op but BITWISE_NOT; I32/I64/U8 take NEG ABS SIGN SQUARE RELU FLOOR CEIL ROUND
 * ISNAN ISINF LOGICAL_NOT BITWISE_NOT; BOOL the same minus NEG (BITWISE_NOT on bool is
 * the logical not). ISNAN/ISINF/LOGICAL_NOT write BOOL.
 *
 * Fast paths: f32 exp/log/tanh/sigmoid/silu through blas_vmath.c, and the exact f32
 * ops (neg abs relu square sqrt reciprocal) as plain loops the compiler vectorizes;
 * strided runs go through a small on-stack buffer; BITWISE_NOT on i32/i64/u8 as typed
 * loops. Everything else is computed in double (or int64) per element, the reference's
 * way, so it matches it bit for bit. Every fast path keeps IEEE's sign of zero
 * (tanh(-0) = -0, relu(-0) = -0: tests/unit/test_cpu_blas_signed_zero.c).
 */
#include "blas_impl.h"

/* The supported set and the generic per-element formulas are the reference's, shared
 * through ff_backend_scalar.h (ffb_unary_supported, ffb_unary_f64, ffb_unary_i64). */
int blas_unary_supported(ff_unary_op op, ff_dtype t) { return ffb_unary_supported(op, t); }

/* ---- f32 fast kernels over contiguous runs ---------------------------------------- */
BLAS_CLONES static void neg_f32(int64_t n, float *d, const float *x) { for (int64_t i = 0; i < n; i++) d[i] = -x[i]; }
BLAS_CLONES static void abs_f32(int64_t n, float *d, const float *x) { for (int64_t i = 0; i < n; i++) d[i] = fabsf(x[i]); }
BLAS_CLONES static void square_f32(int64_t n, float *d, const float *x) { for (int64_t i = 0; i < n; i++) d[i] = x[i] * x[i]; }
BLAS_CLONES static void sqrt_f32(int64_t n, float *d, const float *x) { for (int64_t i = 0; i < n; i++) d[i] = sqrtf(x[i]); }
BLAS_CLONES static void recip_f32(int64_t n, float *d, const float *x) { for (int64_t i = 0; i < n; i++) d[i] = 1.0f / x[i]; }
/* relu keeps NaN and -0 (x < 0 ? 0 : x, PyTorch's clamp_min), like the reference */
BLAS_CLONES static void relu_f32(int64_t n, float *d, const float *x)
{
    for (int64_t i = 0; i < n; i++) d[i] = x[i] < 0.0f ? 0.0f : x[i];
}

static blas_map_f32_fn fast_f32(ff_unary_op op)
{
    switch (op) {
    case FF_UNARY_NEG: return neg_f32;
    case FF_UNARY_ABS: return abs_f32;
    case FF_UNARY_SQUARE: return square_f32;
    case FF_UNARY_SQRT: return sqrt_f32;
    case FF_UNARY_RECIPROCAL: return recip_f32;
    case FF_UNARY_RELU: return relu_f32;
    case FF_UNARY_EXP: return blas_vexp_f32;
    case FF_UNARY_LOG: return blas_vlog_f32;
    case FF_UNARY_TANH: return blas_vtanh_f32;
    case FF_UNARY_SIGMOID: return blas_vsigmoid_f32;
    case FF_UNARY_SILU: return blas_vsilu_f32;
    case FF_UNARY_ERF: return blas_verf_f32;
    case FF_UNARY_GELU_ERF: return blas_vgelu_erf_f32;
    default: return NULL;
    }
}

/* f64: the exact ops (the reference computes them in double too, so the bits agree);
 * the generic path's per-element dtype switches made square 9x a multiply. */
#define MAP_F64(name, expr) \
    BLAS_CLONES static void name##_f64(int64_t n, double *d, const double *x) { for (int64_t i = 0; i < n; i++) d[i] = (expr); }
MAP_F64(neg, -x[i])
MAP_F64(abs, fabs(x[i]))
MAP_F64(square, x[i] * x[i])
MAP_F64(sqrt, sqrt(x[i]))
MAP_F64(recip, 1.0 / x[i])
MAP_F64(rsqrt, 1.0 / sqrt(x[i]))
MAP_F64(relu, x[i] < 0.0 ? 0.0 : x[i])

static blas_map_f64_fn fast_f64(ff_unary_op op)
{
    switch (op) {
    case FF_UNARY_NEG: return neg_f64;
    case FF_UNARY_ABS: return abs_f64;
    case FF_UNARY_SQUARE: return square_f64;
    case FF_UNARY_SQRT: return sqrt_f64;
    case FF_UNARY_RECIPROCAL: return recip_f64;
    case FF_UNARY_RSQRT: return rsqrt_f64;
    case FF_UNARY_RELU: return relu_f64;
    default: return NULL;
    }
}

static void seg_f64(void *varg, int64_t n, char *const *p, const int64_t *s)
{
    const blas_elem_plan *a = varg;
    double *d = (double *)p[0];
    const double *x = (const double *)p[1];
    if (s[0] == 1 && s[1] == 1) {
        a->f64(n, d, x);
        return;
    }
    for (int64_t i = 0; i < n; i++) a->f64(1, d + i * s[0], x + i * s[1]);
}

static void seg_f32(void *varg, int64_t n, char *const *p, const int64_t *s)
{
    const blas_elem_plan *a = varg;
    float *d = (float *)p[0];
    const float *x = (const float *)p[1];
    if (s[0] == 1 && s[1] == 1) {
        if (!blas_stream_map_f32(n, d, x, a->f32)) a->f32(n, d, x);
        return;
    }
    float buf[512];
    for (int64_t i = 0; i < n; i += 512) {
        int64_t m = n - i < 512 ? n - i : 512;
        for (int64_t j = 0; j < m; j++) buf[j] = x[(i + j) * s[1]];
        a->f32(m, buf, buf);
        for (int64_t j = 0; j < m; j++) d[(i + j) * s[0]] = buf[j];
    }
}

/* ~x on integers, in the dtype (u8: 255 - x), any strides. */
#define NOT_LOOP(T)                                                                                   \
    do {                                                                                              \
        T *d_ = (T *)p[0];                                                                            \
        const T *x_ = (const T *)p[1];                                                                \
        if (s[0] == 1 && s[1] == 1)                                                                   \
            for (int64_t i = 0; i < n; i++) d_[i] = (T)~x_[i];                                        \
        else                                                                                          \
            for (int64_t i = 0; i < n; i++) d_[i * s[0]] = (T)~x_[i * s[1]];                          \
    } while (0)

static void seg_int_not(void *varg, int64_t n, char *const *p, const int64_t *s)
{
    const blas_elem_plan *a = varg;
    switch (a->t) {
    case FF_I32: NOT_LOOP(uint32_t); break; /* the bits of two's complement int32 */
    case FF_I64: NOT_LOOP(uint64_t); break;
    default: NOT_LOOP(uint8_t); break;
    }
}

static void seg_generic(void *varg, int64_t n, char *const *p, const int64_t *s)
{
    const blas_elem_plan *a = varg;
    int64_t ds = s[0] * (int64_t)ff_dtype_size(a->dt), ss = s[1] * (int64_t)ff_dtype_size(a->t);
    ff_unary_op op = (ff_unary_op)a->op;
    char *d = p[0];
    const char *x = p[1];
    if (blas_is_float(a->t)) {
        for (int64_t i = 0; i < n; i++) ffb_st_f64(d + i * ds, a->dt, ffb_unary_f64(op, ffb_ld_f64(x + i * ss, a->t)));
    } else {
        for (int64_t i = 0; i < n; i++) ffb_st_i64(d + i * ds, a->dt, ffb_unary_i64(op, ffb_ld_i64(x + i * ss, a->t)));
    }
}

void blas_unary_plan(blas_elem_plan *pl, ff_unary_op op, ff_dtype t)
{
    op = ffb_unary_effective(op, t); /* ~bool is the logical not */
    memset(pl, 0, sizeof *pl);
    pl->op = op;
    pl->t = t;
    pl->dt = ffb_unary_writes_bool(op) ? FF_BOOL : t;
    pl->f32 = t == FF_F32 ? fast_f32(op) : NULL;
    pl->f64 = t == FF_F64 ? fast_f64(op) : NULL;
    pl->seg = pl->f32 ? seg_f32 : pl->f64 ? seg_f64 : seg_generic;
    if (op == FF_UNARY_BITWISE_NOT && (t == FF_I32 || t == FF_I64 || t == FF_U8)) pl->seg = seg_int_not;
}

ff_status blas_unary(void *ctx, ff_unary_op op, const ff_view *dst, const ff_view *src)
{
    ff_status st;
    /* F16/BF16: the ops f32 takes, computed by blas_half.c after the same checks */
    int half = src && ffb_is_half(src->dtype);
    ff_status (*check)(void *, const char *, const char *, const ff_view *) = half ? blas_check_storage_view : blas_check_view;
    if ((st = check(ctx, "unary", "dst", dst)) || (st = check(ctx, "unary", "src", src))) return st;
    if ((unsigned)op >= FF_UNARY_COUNT) return blas_error(ctx, FF_ERR_INVALID, "cpu_blas unary: invalid op %d", (int)op);
    if (!blas_unary_supported(op, half ? FF_F32 : src->dtype))
        return blas_error(ctx, FF_ERR_UNSUPPORTED, "cpu_blas unary: op %d is not supported on %s", (int)op,
                          blas_dtype_name(src->dtype));
    ff_dtype want = ffb_unary_writes_bool(op) ? FF_BOOL : src->dtype;
    if (dst->dtype != want)
        return blas_error(ctx, FF_ERR_INVALID, "cpu_blas unary: op %d on %s writes %s, but dst is %s", (int)op,
                          blas_dtype_name(src->dtype), blas_dtype_name(want), blas_dtype_name(dst->dtype));
    if (!blas_same_shape(dst, src)) return blas_shape_error(ctx, "unary", dst, src);
    if (half) return blas_half_unary(ctx, op, dst, src);

    blas_elem_plan pl;
    blas_unary_plan(&pl, op, src->dtype);
    const ff_view *vs[] = {dst, src};
    blas_walk w;
    blas_walk_init(&w, dst->ndim, dst->shape, 2, vs);
    /* transcendental ops are compute bound: worth threads at a smaller size */
    blas_walk_run(ctx, &w, BLAS_PAR_MIN / 2, pl.seg, &pl);
    return FF_OK;
}
