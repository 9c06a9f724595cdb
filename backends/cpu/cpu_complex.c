/*
 * Complex numbers (C64, C128) in the reference backend, computed natively so that the
 * core's composition from real views (core/kernel_complex.c), which every other backend
 * runs, has an oracle to be checked against.
 *
 * Supported: fill (value.f as the real part, imaginary 0), copy (complex <-> complex,
 * real -> complex with imaginary 0, complex -> real keeping the real part; each part
 * converted by the real rules), where, gather (element moves), scatter_add, binary ADD
 * SUB MUL DIV EQ NE, unary NEG, reduce SUM, matmul. Arithmetic is in double complex and
 * each part rounds once at the store: (a + ib)(c + id) = (ac - bd) + i(ad + bc) with the
 * products exact in double for C64; division is the textbook formula over c^2 + d^2.
 */
#include <complex.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_impl.h"
#include "cpu_iter.h"

typedef double _Complex cplx;

/* re + i im, exact for every value (inf and NaN parts too, where re + im * I is not): a
 * complex number is laid out as an array of its two parts (C11 6.2.5). Not CMPLX, which
 * glibc defines for gcc only. */
static cplx mk(double re, double im)
{
    double p[2] = {re, im};
    cplx z;
    memcpy(&z, p, sizeof z);
    return z;
}

int cpu_complex_supported(ff_op_kind kind, int op)
{
    switch (kind) {
    case FF_KIND_FILL: case FF_KIND_WHERE: case FF_KIND_GATHER: case FF_KIND_SCATTER_ADD: case FF_KIND_MATMUL:
        return op == 0;
    case FF_KIND_BINARY:
        return op == FF_BINARY_ADD || op == FF_BINARY_SUB || op == FF_BINARY_MUL || op == FF_BINARY_DIV ||
               op == FF_BINARY_EQ || op == FF_BINARY_NE;
    case FF_KIND_UNARY: return op == FF_UNARY_NEG;
    case FF_KIND_REDUCE: return op == FF_REDUCE_SUM;
    default: return 0;
    }
}

/* The part (0 re, 1 im) of complex element i as a real element of the part dtype. */
static char *part_at(const void *buf, ff_dtype t, int64_t i, int k)
{
    size_t ps = ff_dtype_size(t) / 2;
    return (char *)buf + (size_t)i * 2 * ps + (size_t)k * ps;
}

static ff_dtype part_dtype(ff_dtype t) { return t == FF_C64 ? FF_F32 : FF_F64; }

static cplx load_c(const void *buf, ff_dtype t, int64_t i)
{
    ff_dtype pt = part_dtype(t);
    return mk(ffb_ld_f64(part_at(buf, t, i, 0), pt), ffb_ld_f64(part_at(buf, t, i, 1), pt));
}

static void store_c(void *buf, ff_dtype t, int64_t i, cplx v)
{
    ff_dtype pt = part_dtype(t);
    ffb_st_f64(part_at(buf, t, i, 0), pt, creal(v));
    ffb_st_f64(part_at(buf, t, i, 1), pt, cimag(v));
}

void cpu_complex_fill_one(void *buf, ff_dtype t, int64_t i, ff_scalar value)
{
    store_c(buf, t, i, mk(value.f, 0.0));
}

/* One element of a copy where either side is complex. */
void cpu_complex_copy_one(void *db, ff_dtype dt, int64_t di, const void *sb, ff_dtype st, int64_t si)
{
    if (ff_dtype_is_complex(dt) && ff_dtype_is_complex(st)) {
        store_c(db, dt, di, load_c(sb, st, si));
    } else if (ff_dtype_is_complex(dt)) { /* the real value by the real conversion rules, imaginary 0 */
        char *re = part_at(db, dt, di, 0);
        if (ff_dtype_is_float(st)) ffb_st_f64(re, part_dtype(dt), cpu_load_f64(sb, st, si));
        else ffb_st_i64(re, part_dtype(dt), cpu_load_i64(sb, st, si));
        ffb_st_f64(part_at(db, dt, di, 1), part_dtype(dt), 0.0);
    } else { /* the real part, converted as a real element of the part dtype would be */
        ffb_st_f64((char *)cpu_elem(db, dt, di), dt, ffb_ld_f64(part_at(sb, st, si, 0), part_dtype(st)));
    }
}

static cplx cdiv(cplx a, cplx b)
{
    double c = creal(b), d = cimag(b), den = c * c + d * d;
    return mk((creal(a) * c + cimag(a) * d) / den, (cimag(a) * c - creal(a) * d) / den);
}

ff_status cpu_complex_binary(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    ff_dtype want = ffb_binary_writes_bool(op) ? FF_BOOL : a->dtype;
    if (dst->dtype != want || b->dtype != a->dtype)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu binary: %s on %s writes %s, but dst is %s (b %s)",
                         cpu_binary_name(op), cpu_dtype_name(a->dtype), cpu_dtype_name(want),
                         cpu_dtype_name(dst->dtype), cpu_dtype_name(b->dtype));
    if (!cpu_same_shape(dst, a)) return cpu_shape_error(ctx, "binary", "dst", dst, "a", a);
    if (!cpu_same_shape(dst, b)) return cpu_shape_error(ctx, "binary", "dst", dst, "b", b);
    const ff_view *vs[] = {dst, a, b};
    cpu_iter it;
    for (cpu_iter_init(&it, dst->ndim, dst->shape, 3, vs); !it.done; cpu_iter_next(&it)) {
        for (int64_t j = 0; j < it.len; j++) {
            cplx x = load_c(a->buf, a->dtype, it.off[1] + j * it.step[1]);
            cplx y = load_c(b->buf, b->dtype, it.off[2] + j * it.step[2]);
            int64_t o = it.off[0] + j * it.step[0];
            switch (op) {
            case FF_BINARY_ADD: store_c(dst->buf, dst->dtype, o, x + y); break;
            case FF_BINARY_SUB: store_c(dst->buf, dst->dtype, o, x - y); break;
            case FF_BINARY_MUL: /* the textbook product (C's * may take Annex G's inf/NaN detour) */
                store_c(dst->buf, dst->dtype, o,
                        mk(creal(x) * creal(y) - cimag(x) * cimag(y), creal(x) * cimag(y) + cimag(x) * creal(y)));
                break;
            case FF_BINARY_DIV: store_c(dst->buf, dst->dtype, o, cdiv(x, y)); break;
            case FF_BINARY_EQ: ((uint8_t *)dst->buf)[o] = creal(x) == creal(y) && cimag(x) == cimag(y); break;
            case FF_BINARY_NE: ((uint8_t *)dst->buf)[o] = creal(x) != creal(y) || cimag(x) != cimag(y); break;
            default: return cpu_error(ctx, FF_ERR_UNSUPPORTED, "cpu binary: %s is not supported on %s",
                                      cpu_binary_name(op), cpu_dtype_name(a->dtype));
            }
        }
    }
    return FF_OK;
}

ff_status cpu_complex_neg(void *ctx, const ff_view *dst, const ff_view *src)
{
    if (dst->dtype != src->dtype)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu unary: neg on %s writes %s, but dst is %s",
                         cpu_dtype_name(src->dtype), cpu_dtype_name(src->dtype), cpu_dtype_name(dst->dtype));
    if (!cpu_same_shape(dst, src)) return cpu_shape_error(ctx, "unary", "dst", dst, "src", src);
    const ff_view *vs[] = {dst, src};
    cpu_iter it;
    for (cpu_iter_init(&it, dst->ndim, dst->shape, 2, vs); !it.done; cpu_iter_next(&it))
        for (int64_t j = 0; j < it.len; j++)
            store_c(dst->buf, dst->dtype, it.off[0] + j * it.step[0],
                    -load_c(src->buf, src->dtype, it.off[1] + j * it.step[1]));
    return FF_OK;
}

/* SUM over the masked axes, each output's terms in row-major order, in double complex. */
ff_status cpu_complex_sum(void *ctx, const ff_view *dst, const ff_view *src, uint32_t axes_mask)
{
    int64_t nout = ff_view_numel(dst);
    if (nout == 0) return FF_OK;
    cplx *acc = calloc((size_t)nout, sizeof *acc);
    if (!acc) return cpu_error(ctx, FF_ERR_OOM, "cpu reduce: out of memory for %lld accumulators", (long long)nout);
    int64_t idx[FF_MAX_DIMS] = {0}, n = ff_view_numel(src);
    for (int64_t e = 0; e < n; e++) {
        int64_t so = src->offset, ao = 0, mul = 1;
        for (int d = src->ndim - 1; d >= 0; d--) {
            so += idx[d] * src->strides[d];
            if (!((axes_mask >> d) & 1u)) ao += idx[d] * mul;
            mul *= (axes_mask >> d) & 1u ? 1 : dst->shape[d];
        }
        acc[ao] += load_c(src->buf, src->dtype, so);
        for (int d = src->ndim - 1; d >= 0 && ++idx[d] == src->shape[d]; d--) idx[d] = 0;
    }
    const ff_view *vs[] = {dst};
    cpu_iter it;
    int64_t k = 0;
    for (cpu_iter_init(&it, dst->ndim, dst->shape, 1, vs); !it.done; cpu_iter_next(&it))
        for (int64_t j = 0; j < it.len; j++) store_c(dst->buf, dst->dtype, it.off[0] + j * it.step[0], acc[k++]);
    free(acc);
    return FF_OK;
}

ff_status cpu_complex_matmul(void *ctx, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    int r = dst->ndim;
    int64_t M = dst->shape[r - 2], N = dst->shape[r - 1], K = a->shape[r - 1];
    (void)ctx;
    const ff_view *vs[] = {dst, a, b};
    cpu_iter it;
    for (cpu_iter_init(&it, r - 2, dst->shape, 3, vs); !it.done; cpu_iter_next(&it)) {
        for (int64_t bj = 0; bj < it.len; bj++) {
            int64_t dofs = it.off[0] + bj * it.step[0], ao = it.off[1] + bj * it.step[1];
            int64_t bo = it.off[2] + bj * it.step[2];
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    cplx s = 0;
                    for (int64_t k = 0; k < K; k++) {
                        cplx x = load_c(a->buf, a->dtype, ao + i * a->strides[r - 2] + k * a->strides[r - 1]);
                        cplx y = load_c(b->buf, b->dtype, bo + k * b->strides[r - 2] + j * b->strides[r - 1]);
                        s += mk(creal(x) * creal(y) - cimag(x) * cimag(y), creal(x) * cimag(y) + cimag(x) * creal(y));
                    }
                    store_c(dst->buf, dst->dtype, dofs + i * dst->strides[r - 2] + j * dst->strides[r - 1], s);
                }
        }
    }
    return FF_OK;
}

void cpu_complex_add_into(void *db, ff_dtype t, int64_t at, const void *sb, int64_t from)
{
    store_c(db, t, at, load_c(db, t, at) + load_c(sb, t, from));
}
