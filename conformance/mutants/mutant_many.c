/* Mutant family: one plugin, the fault chosen by FF_MUTANT=<name> at load. Each fault
 * is a realistic bug of a hand-written backend (wrong rounding rule, lost sign of zero,
 * an accumulator too narrow, a wrapped index, a stride ignored, a leak ...). The cpu
 * backend computes; the wrapper then breaks one thing, only where the fault would show.
 * conformance/mutants/run_all.sh runs the suite once per fault and reports which the suite
 * catches (`make mutants`); the ctest mutants cover a few of them on every test run. */
#include "mutant.h" /* first: it defines _GNU_SOURCE */

#include <math.h>
#include <stdbool.h>
#include <xmmintrin.h>

static const char *fault = "";
static bool is(const char *name) { return !strcmp(fault, name); }

/* ---- element access (host memory: the cpu backend's buffers) --------------------------- */
static double ld(const ff_view *v, int64_t off)
{
    const char *p = v->buf;
    switch (v->dtype) {
    case FF_F32: return ((const float *)p)[off];
    case FF_F64: return ((const double *)p)[off];
    case FF_I32: return ((const int32_t *)p)[off];
    case FF_I64: return (double)((const int64_t *)p)[off];
    default: return ((const uint8_t *)p)[off];
    }
}
static int64_t ldi(const ff_view *v, int64_t off)
{
    const char *p = v->buf;
    switch (v->dtype) {
    case FF_I32: return ((const int32_t *)p)[off];
    case FF_I64: return ((const int64_t *)p)[off];
    case FF_F32: return (int64_t)((const float *)p)[off];
    case FF_F64: return (int64_t)((const double *)p)[off];
    default: return ((const uint8_t *)p)[off];
    }
}
static void st(const ff_view *v, int64_t off, double x)
{
    char *p = v->buf;
    switch (v->dtype) {
    case FF_F32: ((float *)p)[off] = (float)x; break;
    case FF_F64: ((double *)p)[off] = x; break;
    case FF_I32: ((int32_t *)p)[off] = (int32_t)(int64_t)x; break;
    case FF_I64: ((int64_t *)p)[off] = (int64_t)x; break;
    default: ((uint8_t *)p)[off] = (uint8_t)(int64_t)x; break;
    }
}
static void sti(const ff_view *v, int64_t off, int64_t x)
{
    char *p = v->buf;
    if (v->dtype == FF_I32) ((int32_t *)p)[off] = (int32_t)x;
    else if (v->dtype == FF_I64) ((int64_t *)p)[off] = x;
    else ((uint8_t *)p)[off] = (uint8_t)x;
}

/* Calls fn(offsets) for every element of up to three views of one shape, row-major. */
typedef void (*elem_fn)(const ff_view *const *v, const int64_t *off);
static void for_each(int n, const ff_view *const *v, elem_fn fn)
{
    const ff_view *d = v[0];
    int64_t idx[FF_MAX_DIMS] = {0}, total = ff_view_numel(d), off[3];
    for (int64_t k = 0; k < total; k++) {
        for (int j = 0; j < n; j++) {
            off[j] = v[j]->offset;
            for (int a = 0; a < d->ndim; a++) off[j] += idx[a] * v[j]->strides[a];
        }
        fn(v, off);
        for (int a = d->ndim - 1; a >= 0; a--) {
            if (++idx[a] < d->shape[a]) break;
            idx[a] = 0;
        }
    }
}

static bool is_float(ff_dtype t) { return t == FF_F32 || t == FF_F64; }

/* ---- unary ---------------------------------------------------------------------------- */
static ff_unary_op uop;
static void unary_float_fix(const ff_view *const *v, const int64_t *o)
{
    double x = ld(v[1], o[1]), y = ld(v[0], o[0]);
    if (is("tanh_loses_neg_zero") && uop == FF_UNARY_TANH && y == 0) st(v[0], o[0], 0.0);
    if (is("relu_plus_zero") && uop == FF_UNARY_RELU && y == 0) st(v[0], o[0], 0.0);
    if (is("round_half_away") && uop == FF_UNARY_ROUND && fabs(x - trunc(x)) == 0.5) st(v[0], o[0], round(x));
    if (is("expm1_naive") && uop == FF_UNARY_EXPM1) st(v[0], o[0], v[0]->dtype == FF_F32 ? expf((float)x) - 1.0f : exp(x) - 1.0);
    if (is("log1p_naive") && uop == FF_UNARY_LOG1P) st(v[0], o[0], v[0]->dtype == FF_F32 ? logf(1.0f + (float)x) : log(1.0 + x));
    if (is("softplus_threshold_5") && uop == FF_UNARY_SOFTPLUS && x > 5) st(v[0], o[0], x);
    if (is("sign_nan_zero") && uop == FF_UNARY_SIGN && x != x) st(v[0], o[0], 0.0);
    if (is("exp_rel_1e-5_f64") && uop == FF_UNARY_EXP && v[0]->dtype == FF_F64) st(v[0], o[0], y * (1 + 3e-11));
    if (is("sigmoid_f32_via_tanh_approx") && uop == FF_UNARY_SIGMOID && v[0]->dtype == FF_F32 && fabs(x) > 9)
        st(v[0], o[0], x > 0 ? 1.0 : 0.0);
}
static void unary_int_fix(const ff_view *const *v, const int64_t *o)
{
    int64_t x = ldi(v[1], o[1]);
    if (is("abs_int_min_saturates") && uop == FF_UNARY_ABS && v[0]->dtype == FF_I64 && x == INT64_MIN)
        sti(v[0], o[0], INT64_MAX);
    if (is("neg_u8_saturates") && uop == FF_UNARY_NEG && v[0]->dtype == FF_U8 && x > 0) sti(v[0], o[0], 0);
}
static ff_status m_unary(void *ctx, ff_unary_op op, const ff_view *dst, const ff_view *src)
{
    if (is("unary_ignores_dst_strides") && op == FF_UNARY_NEG) {
        ff_view d = *dst;
        int64_t want = 1;
        for (int a = d.ndim - 1; a >= 0; a--) {
            if (d.strides[a] == 0) return mutant_base->unary(ctx, op, dst, src);
            d.strides[a] = want, want *= d.shape[a];
        }
        return mutant_base->unary(ctx, op, &d, src);
    }
    ff_status s = mutant_base->unary(ctx, op, dst, src);
    if (s || src->buf == dst->buf) return s; /* in place: the source is gone */
    uop = op;
    const ff_view *v[2] = {dst, src};
    if (is_float(src->dtype)) for_each(2, v, unary_float_fix);
    else if (src->dtype != FF_BOOL) for_each(2, v, unary_int_fix);
    return s;
}

/* ---- binary --------------------------------------------------------------------------- */
static ff_binary_op bop;
static void b_fix(const ff_view *const *v, const int64_t *o)
{
    const ff_view *d = v[0], *a = v[1], *b = v[2];
    if (is_float(a->dtype)) {
        double x = ld(a, o[1]), y = ld(b, o[2]);
        if (is("maximum_ignores_nan") && bop == FF_BINARY_MAXIMUM && (x != x || y != y)) st(d, o[0], x != x ? y : x);
        if (is("fmod_divisor_sign") && bop == FF_BINARY_FMOD && y != 0) st(d, o[0], x - floor(x / y) * y);
        if (is("eq_nan_equal") && bop == FF_BINARY_EQ && x != x && y != y) sti(d, o[0], 1);
        if (is("logical_nan_false") && bop == FF_BINARY_LOGICAL_AND && (x != x || y != y)) sti(d, o[0], 0);
        if (is("maximum_signed_zero") && bop == FF_BINARY_MAXIMUM && x == 0 && y == 0) st(d, o[0], x);
        return;
    }
    int64_t x = ldi(a, o[1]), y = ldi(b, o[2]);
    if (is("div_int_by_zero_keeps_x") && bop == FF_BINARY_DIV && y == 0) sti(d, o[0], x);
    if (is("mul_i64_via_double") && bop == FF_BINARY_MUL && d->dtype == FF_I64)
        sti(d, o[0], (int64_t)fmin(fmax((double)x * (double)y, -9.2e18), 9.2e18));
    if (is("add_i32_saturates") && bop == FF_BINARY_ADD && d->dtype == FF_I32)
        sti(d, o[0], x + y > INT32_MAX ? INT32_MAX : x + y < INT32_MIN ? INT32_MIN : x + y);
    if (is("bool_add_as_int") && bop == FF_BINARY_ADD && d->dtype == FF_BOOL) sti(d, o[0], x + y);
    if (is("pow_int_neg_exp_zero") && bop == FF_BINARY_POW && y < 0 && x == -1) sti(d, o[0], 0);
    if (is("bitwise_and_as_logical") && bop == FF_BINARY_BITWISE_AND && d->dtype != FF_BOOL) sti(d, o[0], x && y);
}
static ff_status m_binary(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    if (is("inplace_into_b_reads_dst") && dst->buf == b->buf && dst->offset == b->offset && dst->buf != a->buf)
        return mutant_base->binary(ctx, op, dst, a, a); /* "b" read after dst was written: a op a */
    ff_status s = mutant_base->binary(ctx, op, dst, a, b);
    if (s || dst->buf == a->buf || dst->buf == b->buf) return s;
    bop = op;
    const ff_view *v[3] = {dst, a, b};
    for_each(3, v, b_fix);
    return s;
}

/* ---- reduce: rows of a contiguous source over its trailing axes -------------------------- */
static ff_status m_reduce(void *ctx, ff_reduce_op op, const ff_view *dst, const ff_view *src, uint32_t mask)
{
    ff_status s = mutant_base->reduce(ctx, op, dst, src, mask);
    if (s) return s;
    int nd = src->ndim, first = nd; /* mask must be the trailing axes, src contiguous, dst contiguous */
    while (first > 0 && (mask >> (first - 1)) & 1u) first--;
    if (mask != (uint32_t)(((1u << nd) - 1) & ~((1u << first) - 1)) || nd == 0) return s;
    int64_t want = 1, len = 1, rows = 1;
    for (int a = nd - 1; a >= 0; a--) {
        if (src->strides[a] != want && src->shape[a] > 1) return s;
        want *= src->shape[a];
        if (a >= first) len *= src->shape[a];
        else rows *= src->shape[a];
    }
    for (int64_t r = 0; r < rows && len > 0; r++) {
        int64_t base = src->offset + r * len, out = dst->offset;
        for (int64_t a = first - 1, rem = r; a >= 0; a--) { /* dst's element r, row-major over the kept axes */
            out += (rem % dst->shape[a]) * dst->strides[a];
            rem /= dst->shape[a];
        }
        if (is("sum_f32_running") && op == FF_REDUCE_SUM && src->dtype == FF_F32) {
            float acc = 0;
            for (int64_t i = 0; i < len; i++) acc += (float)ld(src, base + i);
            st(dst, out, acc);
        }
        if (is("sum_drops_last_element_past_4096") && op == FF_REDUCE_SUM && is_float(src->dtype) && len > 4096)
            st(dst, out, ld(dst, out) - ld(src, base + len - 1));
        if (is("sum_int_via_double") && op == FF_REDUCE_SUM && !is_float(src->dtype) && dst->dtype == FF_I64) {
            double acc = 0;
            for (int64_t i = 0; i < len; i++) acc += (double)ldi(src, base + i);
            sti(dst, out, (int64_t)acc);
        }
        if (is("prod_int_via_double") && op == FF_REDUCE_PROD && !is_float(src->dtype) && dst->dtype == FF_I64) {
            double acc = 1;
            for (int64_t i = 0; i < len; i++) acc *= (double)ldi(src, base + i);
            if (fabs(acc) < 9e18) sti(dst, out, (int64_t)acc);
        }
        if (is("max_ignores_nan") && op == FF_REDUCE_MAX && is_float(src->dtype)) {
            double m = -INFINITY;
            for (int64_t i = 0; i < len; i++) m = fmax(m, ld(src, base + i));
            st(dst, out, m);
        }
        if (is("argmax_last_of_ties") && op == FF_REDUCE_ARGMAX && len > 0) {
            double m = ld(src, base);
            int64_t at = 0;
            for (int64_t i = 1; i < len; i++)
                if (ld(src, base + i) >= m) m = ld(src, base + i), at = i;
            if (m == m) sti(dst, out, at);
        }
    }
    return s;
}

/* ---- copy ----------------------------------------------------------------------------- */
static void c_fix(const ff_view *const *v, const int64_t *o)
{
    const ff_view *d = v[0], *s = v[1];
    double x = ld(s, o[1]);
    if (is("f2i_wraps") && is_float(s->dtype) && d->dtype == FF_I32 && x == x && fabs(x) < 9e18)
        sti(d, o[0], (int64_t)(int32_t)(uint32_t)(uint64_t)(int64_t)x);
    if (is("nan_to_bool_false") && is_float(s->dtype) && d->dtype == FF_BOOL && x != x) sti(d, o[0], 0);
    if (is("i64_to_f32_twice_rounded") && s->dtype == FF_I64 && d->dtype == FF_F32)
        st(d, o[0], (float)(double)ldi(s, o[1]));
    if (is("f2u8_saturates") && is_float(s->dtype) && d->dtype == FF_U8 && x == x)
        sti(d, o[0], x < 0 ? 0 : x > 255 ? 255 : (int64_t)x);
}
static ff_status m_copy(void *ctx, const ff_view *dst, const ff_view *src)
{
    ff_status s = mutant_base->copy(ctx, dst, src);
    if (s || dst->buf == src->buf) return s;
    const ff_view *v[2] = {dst, src};
    for_each(2, v, c_fix);
    return s;
}

/* ---- fill, matmul, gather, scatter_add, random, softmax --------------------------------- */
static ff_status m_fill(void *ctx, const ff_view *dst, ff_scalar value)
{
    if (is("fill_i64_via_double") && dst->dtype == FF_I64) value.i = (int64_t)fmin(fmax(value.f, -9.2e18), 9.2e18);
    if (is("fill_ignores_offset")) {
        ff_view d = *dst;
        d.offset = 0;
        return mutant_base->fill(ctx, &d, value);
    }
    return mutant_base->fill(ctx, dst, value);
}

static ff_status m_matmul(void *ctx, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    int r = a->ndim;
    if (is("matmul_assumes_dense_rows") && a->strides[r - 1] == 1) {
        ff_view aa = *a;
        aa.strides[r - 2] = a->shape[r - 1]; /* lda = K, whatever the view says */
        return mutant_base->matmul(ctx, dst, &aa, b);
    }
    if (is("matmul_k0_leaves_dst") && a->shape[r - 1] == 0) return FF_OK;
    return mutant_base->matmul(ctx, dst, a, b);
}

static ff_status m_gather(void *ctx, const ff_view *dst, const ff_view *src, const ff_view *index, int axis)
{
    if (is("gather_wraps_negative")) { /* wraps -1 to size - 1 in place, as a lenient backend might */
        int64_t n = ff_view_numel(index), idx[FF_MAX_DIMS] = {0};
        for (int64_t k = 0; k < n; k++) {
            int64_t off = index->offset;
            for (int a = 0; a < index->ndim; a++) off += idx[a] * index->strides[a];
            int64_t x = ldi(index, off);
            if (x < 0) sti(index, off, x + src->shape[axis]);
            for (int a = index->ndim - 1; a >= 0; a--) {
                if (++idx[a] < index->shape[a]) break;
                idx[a] = 0;
            }
        }
    }
    return mutant_base->gather(ctx, dst, src, index, axis);
}

static ff_status m_random(void *ctx, const ff_view *dst, ff_random_dist dist, uint64_t seed, uint64_t counter_base,
                          double p0, double p1)
{
    if (is("random_ignores_counter_base")) counter_base = 0;
    return mutant_base->random(ctx, dst, dist, seed, counter_base, p0, p1);
}

static ff_status m_softmax(void *ctx, const ff_view *dst, const ff_view *src, int axis, int log_)
{
    ff_status (*base)(void *, const ff_view *, const ff_view *, int, int) = mutant_base->softmax;
    ff_status s = base(ctx, dst, src, axis, log_);
    if (s || !is("softmax_no_max_shift") || src->ndim == 0 || dst->buf == src->buf) return s;
    /* recompute rows without subtracting the maximum: exp overflows for large logits */
    int64_t len = src->shape[axis], n = ff_view_numel(src);
    if (!len) return s;
    for (int64_t r = 0; r < n / len; r++) {
        int64_t so = src->offset, dof = dst->offset, rem = r;
        for (int a = src->ndim - 1; a >= 0; a--) {
            if (a == axis) continue;
            so += (rem % src->shape[a]) * src->strides[a];
            dof += (rem % src->shape[a]) * dst->strides[a];
            rem /= src->shape[a];
        }
        double sum = 0;
        for (int64_t i = 0; i < len; i++) sum += (src->dtype == FF_F32 ? expf((float)ld(src, so + i * src->strides[axis]))
                                                                       : exp(ld(src, so + i * src->strides[axis])));
        for (int64_t i = 0; i < len; i++) {
            double x = ld(src, so + i * src->strides[axis]);
            double e = src->dtype == FF_F32 ? expf((float)x) : exp(x);
            st(dst, dof + i * dst->strides[axis], log_ ? log(e / sum) : e / sum);
        }
    }
    return s;
}

/* ---- the contract around the values ------------------------------------------------------ */
static ff_status m_init(const ff_host_api *host, void **ctx)
{
    if (is("ftz_at_init")) _mm_setcsr(_mm_getcsr() | 0x8040u);
    return mutant_base->init(host, ctx);
}
static void m_free(void *ctx, void *buf)
{
    if (!is("free_keeps_buffer")) mutant_base->free(ctx, buf);
}

FF_PLUGIN_EXPORT const ff_backend_vtable *ff_backend_entry(void);
FF_PLUGIN_EXPORT const ff_backend_vtable *ff_backend_entry(void)
{
    const char *env = getenv("FF_MUTANT");
    fault = env ? env : "";
    const ff_backend_vtable *vt = mutant_setup("mutant_many", "mutant: the fault named by FF_MUTANT");
    if (!vt) return NULL;
    mutant_vt.unary = m_unary;
    mutant_vt.binary = m_binary;
    mutant_vt.reduce = m_reduce;
    mutant_vt.copy = m_copy;
    mutant_vt.fill = m_fill;
    mutant_vt.matmul = m_matmul;
    mutant_vt.gather = m_gather;
    mutant_vt.random = m_random;
    if (mutant_base->softmax) mutant_vt.softmax = m_softmax;
    mutant_vt.init = m_init;
    mutant_vt.free = m_free;
    return vt;
}
