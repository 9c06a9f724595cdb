/*
 * The row form of gather and scatter_add (blas_index.c sends it here): along axis the
 * index is constant over the trailing dims (stride 0 there, as the core hands
 * index_select, embedding and their backward), and both data views hold those trailing
 * dims as one contiguous run of len elements. Then each index value moves a whole row:
 *   gather:      dst[o, j, :] = src[o, index[o, j], :]       (a row copy)
 *   scatter_add: dst[o, index[o, j], :] += src[o, j, :]      (a row add, in dst's dtype)
 * with one bounds check per row instead of one per element.
 *
 * Invariants kept from the element path: every index is checked before anything is
 * written (gather too, so a bad index leaves dst as it was), and the first bad one in
 * row-major order is the one reported; scatter_add adds into each destination element in
 * index row-major order, so duplicates accumulate exactly as the reference's loop does
 * (an f32 add rounded once is the reference's double add rounded to f32, bit for bit).
 *
 * Threads: gather splits the rows. scatter_add splits the destination slots along axis
 * (no atomics, no per-thread copies): each thread scans the whole index and adds only
 * the rows whose slot it owns, in index order. Index reads are 8 bytes per row against a
 * row of len elements, so the repeated scan is cheap for the rows this form serves; one
 * slot hit by every index runs on one thread.
 */
#include "blas_impl.h"

int blas_index_rows_init(blas_index_rows *f, const ff_view *walked, const ff_view *table, const ff_view *index,
                         int axis)
{
    int64_t expect = 1;
    for (int d = index->ndim - 1; d > axis; d--) {
        if (index->shape[d] == 1) continue;
        if (index->strides[d] != 0 || walked->strides[d] != expect || table->strides[d] != expect) return 0;
        expect *= index->shape[d];
    }
    f->nd = axis + 1, f->len = expect, f->rows = 1;
    const ff_view *v[3] = {index, walked, table};
    for (int d = 0; d <= axis; d++) {
        f->shape[d] = index->shape[d], f->rows *= index->shape[d];
        for (int k = 0; k < 3; k++) f->st[k][d] = v[k]->strides[d];
    }
    f->st[2][axis] = 0;
    for (int k = 0; k < 3; k++) f->off0[k] = v[k]->offset;
    f->size = table->shape[axis], f->step = table->strides[axis];
    f->es = ff_dtype_size(walked->dtype), f->t = walked->dtype, f->it = index->dtype;
    f->ibuf = index->buf, f->wbuf = walked->buf, f->tbuf = table->buf;
    f->stream = 0;
    return 1;
}

/* The odometer at row r: its dim indices and the three views' offsets; next() steps it. */
static void seek(const blas_index_rows *f, int64_t r, int64_t *idx, int64_t *off)
{
    for (int k = 0; k < 3; k++) off[k] = f->off0[k];
    for (int d = f->nd - 1; d >= 0; d--) {
        idx[d] = r % f->shape[d], r /= f->shape[d];
        for (int k = 0; k < 3; k++) off[k] += idx[d] * f->st[k][d];
    }
}

static inline void next(const blas_index_rows *f, int64_t *idx, int64_t *off)
{
    for (int d = f->nd - 1; d >= 0; d--) {
        if (++idx[d] < f->shape[d]) {
            for (int k = 0; k < 3; k++) off[k] += f->st[k][d];
            return;
        }
        idx[d] = 0;
        for (int k = 0; k < 3; k++) off[k] -= f->st[k][d] * (f->shape[d] - 1);
    }
}

static inline int64_t value(const blas_index_rows *f, int64_t off)
{
    return f->it == FF_I64 ? ((const int64_t *)f->ibuf)[off] : ((const int32_t *)f->ibuf)[off];
}

int blas_index_rows_bad(const blas_index_rows *f, int64_t *bad)
{
    int64_t size = f->size;
    if (f->nd == 1 && f->it == FF_I64) { /* embedding, index_select along axis 0: one strided run */
        const int64_t *x = (const int64_t *)f->ibuf + f->off0[0];
        int64_t s = f->st[0][0], any = 0;
        for (int64_t r = 0; r < f->rows; r++) any |= (uint64_t)x[r * s] >= (uint64_t)size; /* negative: huge */
        if (!any) return 0;
    }
    int64_t idx[FF_MAX_DIMS], off[3];
    seek(f, 0, idx, off);
    for (int64_t r = 0; r < f->rows; r++, next(f, idx, off)) {
        int64_t v = value(f, off[0]);
        if (v < 0 || v >= size) return *bad = v, 1;
    }
    return 0;
}

/* Rows this many bytes ahead are prefetched: random rows of a table beyond the caches
 * are latency-bound otherwise (one row's lines in flight at a time). */
#define PREFETCH_BYTES 8192

/* Rows ahead to prefetch, for views that span beyond L2 (1 MiB here): below it the
 * prefetches only cost issue slots (embedding [1000, 64] ran 2x slower with them). */
static int64_t prefetch_rows(const blas_index_rows *f)
{
    int64_t nb = f->len * (int64_t)f->es, n = PREFETCH_BYTES / (nb > 0 ? nb : 1);
    return n < 2 ? 2 : n > 64 ? 64 : n;
}

static int spans_l2(double bytes) { return bytes >= (double)(1 << 20); }

/* the indexed view (gather's source rows, scatter_add's destination rows) */
static int prefetch_table(const blas_index_rows *f)
{
    return spans_l2((double)f->size * (double)f->step * (double)f->es);
}

/* the walked rows (scatter_add's source) */
static int prefetch_walked(const blas_index_rows *f)
{
    return spans_l2((double)f->rows * (double)f->len * (double)f->es);
}

static inline void prefetch_row(const char *p, size_t nb, int write)
{
    for (size_t k = 0; k < nb; k += 64) {
        if (write) __builtin_prefetch(p + k, 1);
        else __builtin_prefetch(p + k, 0);
    }
}

static void gather_task(void *arg, int64_t begin, int64_t end)
{
    const blas_index_rows *f = arg;
    int64_t idx[FF_MAX_DIMS], off[3], pidx[FF_MAX_DIMS], poff[3], ahead = prefetch_rows(f);
    size_t es = f->es, nb = (size_t)f->len * es;
    seek(f, begin, idx, off);
    int64_t p = prefetch_table(f) && begin + ahead < end ? begin + ahead : end;
    seek(f, p, pidx, poff);
    for (int64_t r = begin; r < end; r++, next(f, idx, off)) {
        if (p < end) {
            prefetch_row(f->tbuf + (size_t)(poff[2] + value(f, poff[0]) * f->step) * es, nb, 0);
            p++, next(f, pidx, poff);
        }
        char *d = f->wbuf + (size_t)off[1] * es;
        const char *s = f->tbuf + (size_t)(off[2] + value(f, off[0]) * f->step) * es;
        if (nb == 4) memcpy(d, s, 4);
        else if (nb == 8) memcpy(d, s, 8);
        else if (!f->stream || !blas_stream_copy(d, s, (int64_t)nb)) memcpy(d, s, nb);
    }
    if (f->stream) blas_stream_fence();
}

void blas_gather_rows(blas_ctx *c, blas_index_rows *f)
{
    /* Outputs of at least BLAS_STREAM_MIN elements (far beyond L2) in rows of >= 256 bytes
     * are streamed: no read-for-ownership of dst's lines (42 against 16-24 GB/s on
     * embedding [50000, 256] x 65536, one thread). */
    f->stream = f->rows * f->len >= BLAS_STREAM_MIN && f->len * (int64_t)f->es >= 256;
    int64_t min_rows = (BLAS_PAR_MIN + f->len - 1) / f->len;
    blas_parallel_for(c, f->rows, min_rows < 2 ? 2 : min_rows, 1, gather_task, f);
}

/* ---- scatter_add ------------------------------------------------------------------ */
/* d[i] += s[i] over n elements of dst's dtype: float rounded once per add (the
 * reference's double add rounded to f32 is the f32 add), integers wrapping. */
BLAS_CLONES static void add_f32(int64_t n, float *d, const float *s)
{
    for (int64_t i = 0; i < n; i++) d[i] += s[i];
}
BLAS_CLONES static void add_f64(int64_t n, double *d, const double *s)
{
    for (int64_t i = 0; i < n; i++) d[i] += s[i];
}
BLAS_CLONES static void add_u32(int64_t n, uint32_t *d, const uint32_t *s)
{
    for (int64_t i = 0; i < n; i++) d[i] += s[i];
}
BLAS_CLONES static void add_u64(int64_t n, uint64_t *d, const uint64_t *s)
{
    for (int64_t i = 0; i < n; i++) d[i] += s[i];
}
BLAS_CLONES static void add_u8(int64_t n, uint8_t *d, const uint8_t *s)
{
    for (int64_t i = 0; i < n; i++) d[i] = (uint8_t)(d[i] + s[i]);
}

/* Any other dtype (BOOL): the reference's per-element rule. */
static void add_scalar(ff_dtype t, int64_t n, size_t es, char *d, const char *s)
{
    for (int64_t i = 0; i < n; i++, d += es, s += es)
        ffb_st_i64(d, t, ffb_u64_to_i64((uint64_t)ffb_ld_i64(d, t) + (uint64_t)ffb_ld_i64(s, t)));
}

static void add_row(ff_dtype t, int64_t n, size_t es, char *d, const char *s)
{
    switch (t) {
    case FF_F32: add_f32(n, (float *)d, (const float *)s); break;
    case FF_F64: add_f64(n, (double *)d, (const double *)s); break;
    case FF_I32: add_u32(n, (uint32_t *)d, (const uint32_t *)s); break;
    case FF_I64: add_u64(n, (uint64_t *)d, (const uint64_t *)s); break;
    case FF_U8: add_u8(n, (uint8_t *)d, (const uint8_t *)s); break;
    default: add_scalar(t, n, es, d, s); break;
    }
}

/* Destination slots [lo, hi) along axis: every row aimed at one, in index order. */
static void scatter_task(void *arg, int64_t lo, int64_t hi)
{
    const blas_index_rows *f = arg;
    int64_t idx[FF_MAX_DIMS], off[3], pidx[FF_MAX_DIMS], poff[3], ahead = prefetch_rows(f);
    size_t es = f->es, nb = (size_t)f->len * es;
    seek(f, 0, idx, off);
    int pt = prefetch_table(f), pw = prefetch_walked(f);
    int64_t p = (pt || pw) && ahead < f->rows ? ahead : f->rows;
    seek(f, p, pidx, poff);
    for (int64_t r = 0; r < f->rows; r++, next(f, idx, off)) {
        if (p < f->rows) { /* the rows `ahead` rows on, if this thread owns their slot */
            int64_t pv = value(f, poff[0]);
            if (pv >= lo && pv < hi) {
                if (pt) prefetch_row(f->tbuf + (size_t)(poff[2] + pv * f->step) * es, nb, 1);
                if (pw) prefetch_row(f->wbuf + (size_t)poff[1] * es, nb, 0);
            }
            p++, next(f, pidx, poff);
        }
        int64_t v = value(f, off[0]);
        if (v < lo || v >= hi) continue;
        add_row(f->t, f->len, es, f->tbuf + (size_t)(off[2] + v * f->step) * es, f->wbuf + (size_t)off[1] * es);
    }
}

void blas_scatter_add_rows(blas_ctx *c, blas_index_rows *f)
{
    if (f->rows * f->len < BLAS_PAR_MIN) scatter_task(f, 0, f->size);
    else blas_parallel_for(c, f->size, 2, 1, scatter_task, f);
}
