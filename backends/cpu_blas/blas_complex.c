/*
 * Complex numbers (C64, C128) on cpu_blas: the binary ADD SUB MUL DIV kernels here, over
 * the (re, im) pairs in place, vectorised; matmul through OpenBLAS's cgemm / zgemm
 * (blas_matmul.c). Every other complex entry is declined, and the core composes it from
 * real views of the same storage (core/kernel_complex.c).
 *
 * The products follow the reference (backends/cpu/cpu_complex.c) where it is exact: a C64
 * part is (ac - bd) of f32 values computed in double and rounded once, so the MUL kernel
 * gives the reference's bits; C128 computes in double, as the reference's double complex.
 * DIV is (a conj(b)) / |b|^2 in double, each part rounded once, as the reference.
 */
#include "blas_complex.h"

int blas_complex_supported(ff_op_kind kind, int op)
{
    switch (kind) {
    case FF_KIND_MATMUL: return op == 0;
    case FF_KIND_BINARY:
        return op == FF_BINARY_ADD || op == FF_BINARY_SUB || op == FF_BINARY_MUL || op == FF_BINARY_DIV;
    default: return 0;
    }
}

typedef struct cplx_arg {
    ff_binary_op op;
    ff_dtype t;
} cplx_arg;

/* One run of n pairs: d, a, b are pair pointers, s their element (pair) strides. */
#define CPLX_SEG(NAME, T)                                                                                        \
    BLAS_CLONES static void NAME(ff_binary_op op, int64_t n, T *d, const T *a, const T *b, int64_t sd, int64_t sa, \
                                 int64_t sb)                                                                     \
    {                                                                                                            \
        for (int64_t i = 0; i < n; i++) {                                                                        \
            double ar = a[2 * i * sa], ai = a[2 * i * sa + 1], br = b[2 * i * sb], bi = b[2 * i * sb + 1];         \
            double re, im;                                                                                       \
            switch (op) {                                                                                        \
            case FF_BINARY_ADD: re = ar + br, im = ai + bi; break;                                               \
            case FF_BINARY_SUB: re = ar - br, im = ai - bi; break;                                               \
            case FF_BINARY_MUL: re = ar * br - ai * bi, im = ar * bi + ai * br; break;                           \
            default: {                                                                                           \
                double den = br * br + bi * bi;                                                                  \
                re = (ar * br + ai * bi) / den, im = (ai * br - ar * bi) / den;                                  \
            }                                                                                                    \
            }                                                                                                    \
            d[2 * i * sd] = (T)re, d[2 * i * sd + 1] = (T)im;                                                    \
        }                                                                                                        \
    }
CPLX_SEG(seg_c64, float)
CPLX_SEG(seg_c128, double)

/* The contiguous MUL of C64, the hot case (spectral products): one op per loop, so the
 * compiler keeps it in vector registers. */
BLAS_CLONES static void mul_c64_dense(int64_t n, float *d, const float *a, const float *b)
{
    for (int64_t i = 0; i < n; i++) {
        double ar = a[2 * i], ai = a[2 * i + 1], br = b[2 * i], bi = b[2 * i + 1];
        d[2 * i] = (float)(ar * br - ai * bi);
        d[2 * i + 1] = (float)(ar * bi + ai * br);
    }
}

static void seg(void *varg, int64_t n, char *const *p, const int64_t *s)
{
    const cplx_arg *a = varg;
    if (a->t == FF_C64) {
        if (a->op == FF_BINARY_MUL && s[0] == 1 && s[1] == 1 && s[2] == 1 && p[0] != p[1] && p[0] != p[2])
            mul_c64_dense(n, (float *)p[0], (const float *)p[1], (const float *)p[2]);
        else
            seg_c64(a->op, n, (float *)p[0], (const float *)p[1], (const float *)p[2], s[0], s[1], s[2]);
    } else {
        seg_c128(a->op, n, (double *)p[0], (const double *)p[1], (const double *)p[2], s[0], s[1], s[2]);
    }
}

ff_status blas_complex_binary(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    if (!blas_complex_supported(FF_KIND_BINARY, (int)op))
        return blas_error(ctx, FF_ERR_UNSUPPORTED, "cpu_blas binary: op %d is not supported on %s", (int)op,
                          blas_dtype_name(a->dtype));
    if (dst->dtype != a->dtype || b->dtype != a->dtype)
        return blas_error(ctx, FF_ERR_INVALID, "cpu_blas binary: op %d on %s writes %s, but dst is %s (b %s)", (int)op,
                          blas_dtype_name(a->dtype), blas_dtype_name(a->dtype), blas_dtype_name(dst->dtype),
                          blas_dtype_name(b->dtype));
    if (!blas_same_shape(dst, a)) return blas_shape_error(ctx, "binary", dst, a);
    if (!blas_same_shape(dst, b)) return blas_shape_error(ctx, "binary", dst, b);
    cplx_arg arg = {op, a->dtype};
    const ff_view *vs[] = {dst, a, b};
    blas_walk w;
    blas_walk_init(&w, dst->ndim, dst->shape, 3, vs);
    blas_walk_run(ctx, &w, BLAS_PAR_MIN, seg, &arg);
    return FF_OK;
}
