/*
 * The optional attention entry (backend_abi.h, "Scaled dot-product attention"), flash
 * style: tiles of k and v stream through an online softmax, so the T x T scores never
 * exist; per worker only a few tiles of scratch (and, backward, gq of one head: O(T)).
 * The tile products run on the backend's sgemm (oneDNN, else OpenBLAS) or dgemm,
 * single-threaded inside tasks that the pool's threads take from a shared counter
 * (forward: (b, h, q tile), backward: (b, h)). F16/BF16 are widened tile by tile into
 * f32, accumulate in f32 and round each output once; F32 and F64 are native. Any
 * strides: a tile that is already a row-major matrix of the tile type is read in place,
 * any other (steps, stride-0 broadcast, halves) is copied into scratch first.
 * The loops themselves are in blas_attention_tiles.h.
 */
#include "blas_attention.h"
#include "ff_backend_attention.h"

/* Tile rows of q and of k/v: a 64 x 128 f32 score tile (32 KiB) and the tiles beside it
 * stay in L1/L2. Measured (CPU time, one thread, B 4, H 8, D 64, causal, T 512 and 2048):
 * 64 x 128 beat 64 x 64, 128 x 128, 32 x 128 and 256 x 256 by 2-35% forward and backward;
 * 64 x 256 was 10% faster forward at T 2048 but 15% slower backward at T 512. */
#define AT_TILE_Q 64
#define AT_TILE_K 128

/* Below this many multiply-adds, one thread (waking the pool costs more). */
#define AT_PAR_MIN ((int64_t)1 << 20)

at_mat at_slice(const ff_view *v, int64_t b, int64_t h)
{
    int64_t es = (int64_t)ff_dtype_size(v->dtype);
    return (at_mat){(char *)v->buf + (v->offset + b * v->strides[0] + h * v->strides[1]) * es, v->strides[2],
                    v->strides[3]};
}

const float *at_rows_f32(const at_mat *m, ff_dtype t, int64_t r0, int64_t n, int64_t w, float *buf, int64_t *ld)
{
    int64_t es = (int64_t)ff_dtype_size(t);
    const char *p = m->p + r0 * m->rs * es;
    if (t == FF_F32 && (m->cs == 1 || w == 1) && (m->rs >= w || n == 1)) {
        *ld = n == 1 ? w : m->rs;
        return (const float *)p;
    }
    for (int64_t r = 0; r < n; r++) {
        const char *row = p + r * m->rs * es;
        float *d = buf + r * w;
        if (m->cs == 1 && t == FF_F32) memcpy(d, row, sizeof(float) * (size_t)w);
        else if (m->cs == 1 && ffb_is_half(t)) blas_half_to_f32(t, w, d, row);
        else for (int64_t c = 0; c < w; c++) d[c] = (float)ffb_ld_f64(row + c * m->cs * es, t);
    }
    *ld = w;
    return buf;
}

const double *at_rows_f64(const at_mat *m, ff_dtype t, int64_t r0, int64_t n, int64_t w, double *buf, int64_t *ld)
{
    const char *p = m->p + r0 * m->rs * 8;
    if ((m->cs == 1 || w == 1) && (m->rs >= w || n == 1)) {
        *ld = n == 1 ? w : m->rs;
        return (const double *)p;
    }
    for (int64_t r = 0; r < n; r++)
        for (int64_t c = 0; c < w; c++) buf[r * w + c] = ffb_ld_f64(p + (r * m->rs + c * m->cs) * 8, t);
    *ld = w;
    return buf;
}

void at_store_f32(const at_mat *m, ff_dtype t, int64_t r0, int64_t n, int64_t w, const float *src, int64_t ld)
{
    int64_t es = (int64_t)ff_dtype_size(t);
    for (int64_t r = 0; r < n; r++) {
        char *row = m->p + (r0 + r) * m->rs * es;
        const float *s = src + r * ld;
        if (m->cs == 1 && t == FF_F32) memcpy(row, s, sizeof(float) * (size_t)w);
        else if (m->cs == 1 && ffb_is_half(t)) blas_f32_to_half(t, w, row, s);
        else for (int64_t c = 0; c < w; c++) ffb_st_f64(row + c * m->cs * es, t, s[c]);
    }
}

void at_store_f64(const at_mat *m, ff_dtype t, int64_t r0, int64_t n, int64_t w, const double *src, int64_t ld)
{
    for (int64_t r = 0; r < n; r++)
        for (int64_t c = 0; c < w; c++) ffb_st_f64(m->p + ((r0 + r) * m->rs + c * m->cs) * 8, t, src[r * ld + c]);
}

/* The mask's and the causal triangle's -inf (and the additive mask's values), written
 * once for both tile types. */
#define AT_MASK_BODY(AT)                                                                                            \
    if (j->m) {                                                                                                     \
        at_mat mm = at_slice(j->m, b, h);                                                                           \
        ff_dtype mt = j->m->dtype;                                                                                  \
        int64_t es = (int64_t)ff_dtype_size(mt);                                                                    \
        for (int64_t r = 0; r < n; r++) {                                                                           \
            const char *row = mm.p + ((i0 + r) * mm.rs + j0 * mm.cs) * es;                                          \
            AT *sr = s + r * lds;                                                                                   \
            if (mt == FF_BOOL && mm.cs == 1) { /* a select, which vectorizes (bools are 0 or 1) */                 \
                for (int64_t c = 0; c < nk; c++) sr[c] = row[c] ? sr[c] : (AT)-INFINITY;                           \
            } else if (mt == FF_BOOL) {                                                                             \
                for (int64_t c = 0; c < nk; c++)                                                                    \
                    if (!row[c * mm.cs]) sr[c] = -INFINITY;                                                         \
            } else if (mt == FF_F32) {                                                                              \
                const float *mr = (const float *)row;                                                               \
                for (int64_t c = 0; c < nk; c++) sr[c] += mr[c * mm.cs];                                            \
            } else {                                                                                                \
                for (int64_t c = 0; c < nk; c++) sr[c] += (AT)ffb_ld_f64(row + c * mm.cs * es, mt);                \
            }                                                                                                       \
        }                                                                                                           \
    }                                                                                                               \
    if (j->causal)                                                                                                  \
        for (int64_t r = 0; r < n; r++) {                                                                           \
            AT *sr = s + r * lds;                                                                                   \
            for (int64_t c = i0 + r + 1 - j0 > 0 ? i0 + r + 1 - j0 : 0; c < nk; c++) sr[c] = -INFINITY;            \
        }

void at_mask_f32(const at_job *j, int64_t b, int64_t h, int64_t i0, int64_t n, int64_t j0, int64_t nk, float *s,
                 int64_t lds)
{
    AT_MASK_BODY(float)
}

void at_mask_f64(const at_job *j, int64_t b, int64_t h, int64_t i0, int64_t n, int64_t j0, int64_t nk, double *s,
                 int64_t lds)
{
    AT_MASK_BODY(double)
}

/* The factors come from the counter of each element's [B, H, Tq, Tk] index, so a tile
 * draws the same mask whatever the tiling and the thread that runs it. */
#define AT_DROPOUT_BODY(AT)                                                                                         \
    if (j->dropout_p <= 0) return;                                                                                  \
    ff_attention_params p = {.dropout_p = j->dropout_p, .seed = j->seed};                                           \
    for (int64_t r = 0; r < n; r++) {                                                                               \
        uint64_t base = (uint64_t)(((b * j->H + h) * j->Tq + i0 + r) * j->Tk + j0);                                 \
        for (int64_t c = 0; c < nk; c++) x[r * ld + c] *= (AT)ffb_attention_dropout_factor(&p, j->t, base + c);     \
    }

void at_dropout_f32(const at_job *j, int64_t b, int64_t h, int64_t i0, int64_t n, int64_t j0, int64_t nk, float *x,
                    int64_t ld)
{
    AT_DROPOUT_BODY(float)
}

void at_dropout_f64(const at_job *j, int64_t b, int64_t h, int64_t i0, int64_t n, int64_t j0, int64_t nk, double *x,
                    int64_t ld)
{
    AT_DROPOUT_BODY(double)
}

#define AT_DROPOUT_DS_BODY(AT)                                                                                      \
    ff_attention_params p = {.dropout_p = j->dropout_p, .seed = j->seed};                                          \
    for (int64_t r = 0; r < n; r++) {                                                                               \
        uint64_t base = (uint64_t)(((b * j->H + h) * j->Tq + i0 + r) * j->Tk + j0);                                 \
        AT *pr = pt + r * ld, *dr = dp + r * ld, dd = di[r];                                                        \
        for (int64_t c = 0; c < nk; c++) {                                                                          \
            AT f = (AT)ffb_attention_dropout_factor(&p, j->t, base + c);                                            \
            dr[c] = pr[c] * (f * dr[c] - dd);                                                                       \
            pr[c] *= f;                                                                                             \
        }                                                                                                           \
    }

void at_dropout_ds_f32(const at_job *j, int64_t b, int64_t h, int64_t i0, int64_t n, int64_t j0, int64_t nk, float *pt,
                       float *dp, int64_t ld, const float *di)
{
    AT_DROPOUT_DS_BODY(float)
}

void at_dropout_ds_f64(const at_job *j, int64_t b, int64_t h, int64_t i0, int64_t n, int64_t j0, int64_t nk, double *pt,
                       double *dp, int64_t ld, const double *di)
{
    AT_DROPOUT_DS_BODY(double)
}

size_t at_scratch_bytes(const at_job *j, size_t es)
{
    int64_t bq = j->bq, bk = j->bk, D = j->D, Dv = j->Dv;
    int64_t fwd = bq * D + bk * D + bk * Dv + bq * bk + 2 * bq * Dv + 3 * bq;
    int64_t bwd = bq * D + 2 * bq * Dv + 2 * bk * D + 2 * bk * Dv + 2 * bq * bk + j->Tq * D + 2 * j->Tq;
    size_t n = (size_t)(j->go ? bwd : fwd) * es;
    return (n + 63) / 64 * 64; /* each worker's slot on its own cache lines */
}

ff_status blas_attention(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src,
                         const ff_attention_params *p)
{
    blas_ctx *c = ctx;
    ff_status st = ffb_attention_check(c->host, "cpu_blas", op, dst, n_dst, src, n_src, p, 1);
    if (st) return st;
    const ff_view *q = &src[op ? 1 : 0];
    at_job j = {.c = c, .t = q->dtype, .scale = p->scale, .causal = p->causal != 0, .mask = p->mask,
                .dropout_p = p->dropout_p, .seed = p->seed, .q = q,
                .k = q + 1, .v = q + 2, .m = p->mask ? &src[n_src - 1] : NULL};
    if (op) j.go = &src[0], j.o = &src[4], j.lse = &src[5], j.gq = &dst[0], j.gk = &dst[1], j.gv = &dst[2];
    else j.o = &dst[0], j.lse = &dst[1];
    j.B = q->shape[0], j.H = q->shape[1], j.Tq = q->shape[2], j.D = q->shape[3], j.Tk = j.k->shape[2];
    j.Dv = j.v->shape[3];
    j.bq = j.Tq < AT_TILE_Q ? (j.Tq > 0 ? j.Tq : 1) : AT_TILE_Q;
    j.bk = j.Tk < AT_TILE_K ? (j.Tk > 0 ? j.Tk : 1) : AT_TILE_K;
    j.nqt = (j.Tq + j.bq - 1) / j.bq, j.nkt = (j.Tk + j.bk - 1) / j.bk;
    j.ntasks = op ? j.B * j.H : j.B * j.H * j.nqt;
    if (j.ntasks == 0) return FF_OK;
    /* backward with fewer heads than threads: each head's k tiles across the threads */
    int split = op && j.B * j.H < c->nthreads && j.nkt > 1;
    int64_t par = split ? j.nkt : j.ntasks, workers = c->nthreads < par ? c->nthreads : par;
    if (j.B * j.H * j.Tq * j.Tk * (j.D + j.Dv) < AT_PAR_MIN) workers = 1, split = 0;
    int f64 = j.t == FF_F64;
    j.per_worker = at_scratch_bytes(&j, f64 ? sizeof(double) : sizeof(float));
    j.scratch = blas_scratch(c, j.per_worker * (size_t)workers);
    if (!j.scratch)
        return blas_error(c, FF_ERR_OOM, "cpu_blas attention: out of memory for %lld workers' tiles (%zu bytes each)",
                          (long long)workers, j.per_worker);
    if (split) {
        for (j.head = 0; j.head < j.B * j.H; j.head++) {
            atomic_store(&j.next, 0), atomic_store(&j.slot, 0);
            blas_parallel_for(c, workers, 2, 1, f64 ? at_backward_head_f64 : at_backward_head_f32, &j);
            (f64 ? at_backward_head_gq_f64 : at_backward_head_gq_f32)(&j, atomic_load(&j.slot));
        }
    } else {
        blas_task_fn fn = op ? (f64 ? at_backward_f64 : at_backward_f32) : (f64 ? at_forward_f64 : at_forward_f32);
        if (workers > 1) blas_parallel_for(c, workers, 2, 1, fn, &j);
        else fn(&j, 0, 1);
    }
    blas_free(c, j.scratch);
    return FF_OK;
}
