/*
 * qmatmul's dynamic mode (backend_abi.h, FF_QMATMUL_DYNAMIC): the float activation
 * quantized to u8 here, by the ABI's one rule (ff_qmatmul_round, ff_qmatmul_ford,
 * ff_qmatmul_choose, ff_qmatmul_row_scale), in loops cloned per ISA so they vectorize.
 * blas_qmatmul.c calls blas_qx_rows inside each row slice, right before the oneDNN call
 * on that slice, so the u8 rows are still in the thread's cache when oneDNN reads them;
 * per-tensor mode needs the whole x's range first (blas_qx_range, a parallel reduction).
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "blas_impl.h"

/* The range over n contiguous floats, folded into *lo / *hi, as ordered ints. */
BLAS_CLONES static void span_range(const float *restrict x, int64_t n, int32_t *lo, int32_t *hi)
{
    int32_t a = *lo, b = *hi;
    for (int64_t i = 0; i < n; i++) {
        int32_t v = ff_qmatmul_ford(x[i]);
        a = v < a ? v : a, b = v > b ? v : b;
    }
    *lo = a, *hi = b;
}

/* max |x| over n contiguous floats, on the bits (a NaN beats +inf). */
BLAS_CLONES static float span_amax(const float *restrict x, int64_t n)
{
    int32_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        int32_t v = ff_qmatmul_ford(fabsf(x[i]));
        m = v > m ? v : m;
    }
    return ff_qmatmul_funord(m);
}

BLAS_CLONES static void span_quantize(const float *restrict x, int64_t n, float inv, float zero, float lo, float hi,
                                      uint8_t *restrict q)
{
    for (int64_t i = 0; i < n; i++) q[i] = ff_qmatmul_round(x[i] * inv, zero, lo, hi);
}

/* Row m of x, dense: x's own memory when its columns are contiguous, else gathered into
 * tmp (K floats). */
static const float *row_of(const blas_qx *x, int64_t m, float *tmp)
{
    const float *r = x->x + m * x->rs;
    if (x->cs == 1 || x->K <= 1) return r;
    for (int64_t k = 0; k < x->K; k++) tmp[k] = r[k * x->cs];
    return tmp;
}

typedef struct range_job {
    const blas_qx *x;
    float *tmp; /* K floats per thread slot, or NULL when rows are dense */
    atomic_int lo, hi;
    atomic_int failed;
} range_job;

static void fold_min(atomic_int *a, int32_t v)
{
    int cur = atomic_load(a);
    while (v < cur && !atomic_compare_exchange_weak(a, &cur, v)) {}
}

static void fold_max(atomic_int *a, int32_t v)
{
    int cur = atomic_load(a);
    while (v > cur && !atomic_compare_exchange_weak(a, &cur, v)) {}
}

static void range_rows(void *arg, int64_t rb, int64_t re)
{
    range_job *j = arg;
    const blas_qx *x = j->x;
    int32_t lo = ff_qmatmul_ford(0.0f), hi = lo;
    float *tmp = NULL;
    if (x->cs != 1 && x->K > 1 && !(tmp = malloc((size_t)x->K * sizeof(float)))) {
        atomic_store(&j->failed, 1);
        return;
    }
    for (int64_t m = rb; m < re; m++) span_range(row_of(x, m, tmp), x->K, &lo, &hi);
    free(tmp);
    fold_min(&j->lo, lo), fold_max(&j->hi, hi);
}

int blas_qx_range(blas_ctx *c, const blas_qx *x, int64_t M, float *lo, float *hi)
{
    range_job j = {.x = x};
    atomic_init(&j.lo, ff_qmatmul_ford(0.0f)), atomic_init(&j.hi, ff_qmatmul_ford(0.0f)), atomic_init(&j.failed, 0);
    blas_parallel_for(c, M, x->K > 0 ? (BLAS_PAR_MIN + x->K - 1) / x->K : M + 1, 1, range_rows, &j);
    *lo = ff_qmatmul_funord(atomic_load(&j.lo)), *hi = ff_qmatmul_funord(atomic_load(&j.hi));
    return atomic_load(&j.failed) ? -1 : 0;
}

int blas_qx_rows(const blas_qx *x, int64_t rb, int64_t re, uint8_t *q)
{
    float *tmp = NULL;
    if (x->cs != 1 && x->K > 1 && !(tmp = malloc((size_t)x->K * sizeof(float)))) return -1;
    for (int64_t m = rb; m < re; m++) {
        const float *r = row_of(x, m, tmp);
        uint8_t *qr = q + (m - rb) * x->K;
        if (x->per_row) {
            x->row[m] = ff_qmatmul_row_scale(span_amax(r, x->K));
            span_quantize(r, x->K, 1.0f / x->row[m], 128.0f, 1.0f, 255.0f, qr);
        } else
            span_quantize(r, x->K, x->inv, x->zero, 0.0f, x->qmax, qr);
    }
    free(tmp);
    return 0;
}
