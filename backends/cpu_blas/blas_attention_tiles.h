/*
 * The attention entry's tile loops, written once for the tile type AT (float: F32, F16,
 * BF16; double: F64) and instantiated by blas_attention_f32.c and blas_attention_f64.c,
 * which define AT, AT_SFX, AT_GEMM (C = alpha op(A) op(B) + beta C, row-major),
 * AT_ROWMAX (NaN-propagating max of n values) and AT_EXPSUM (d = exp(s - shift), returns
 * the sum).
 *
 * Forward, one task per (b, h, query tile) (FlashAttention, Dao et al. 2022): the q tile
 * stays; k/v tiles stream past it; per row the running max m, the running sum l of
 * exp(s - m), and the unnormalized output O, rescaled by exp(m_old - m_new) whenever the
 * max grows. Causal skips the k tiles wholly right of the diagonal (half of the work at
 * large T). The end: o = O / l, lse = m + log l; a row that saw no finite score has
 * l = 0: o = 0, lse = -inf.
 *
 * Backward, one task per (b, h) (FlashAttention-2's order): D_i = rowsum(go * o) first;
 * then per k tile its gk and gv accumulate over the q tiles that see it, while gq
 * accumulates for the whole head in a [Tq, D] buffer (O(T) per worker): p = exp(s - lse)
 * is recomputed from the saved lse, never stored. Whole heads per task keep gk/gv
 * race-free without atomics; with B * H >= threads (the usual case) every thread is busy.
 * With fewer heads than threads, one head at a time has its k tiles spread across the
 * threads instead, each summing its share of gq in its own buffer, added up after.
 */
#define AT_CAT2(a, b) a##_##b
#define AT_CAT(a, b) AT_CAT2(a, b)
#define AT_(name) AT_CAT(name, AT_SFX)

/* One q tile's forward: rows [i0, i0 + nq) of head (b, h). */
static void AT_(fwd_tile)(const at_job *j, AT *w, int64_t b, int64_t h, int64_t i0, int64_t nq)
{
    const int64_t D = j->D, Dv = j->Dv, bk = j->bk;
    AT *qb = w, *kb = qb + j->bq * D, *vb = kb + bk * D, *s = vb + bk * Dv, *ob = s + j->bq * bk, *pv = ob + j->bq * Dv;
    AT *m = pv + j->bq * Dv, *l = m + j->bq, *alpha = l + j->bq;
    at_mat q = at_slice(j->q, b, h), k = at_slice(j->k, b, h), v = at_slice(j->v, b, h);
    int64_t ldq, ldk, ldv;
    const AT *qt = AT_(at_rows)(&q, j->t, i0, nq, D, qb, &ldq);
    for (int64_t r = 0; r < nq; r++) m[r] = -INFINITY, l[r] = 0;
    memset(ob, 0, sizeof(AT) * (size_t)(nq * Dv));
    int64_t kend = j->causal ? (i0 + nq < j->Tk ? i0 + nq : j->Tk) : j->Tk;
    for (int64_t j0 = 0; j0 < kend; j0 += bk) {
        int64_t nk = kend - j0 < bk ? kend - j0 : bk;
        const AT *kt = AT_(at_rows)(&k, j->t, j0, nk, D, kb, &ldk);
        const AT *vt = AT_(at_rows)(&v, j->t, j0, nk, Dv, vb, &ldv);
        AT_GEMM(j->c, 0, 1, nq, nk, D, (AT)j->scale, qt, ldq, kt, ldk, 0, s, bk);
        if (j->m || (j->causal && j0 + nk - 1 > i0)) AT_(at_mask)(j, b, h, i0, nq, j0, nk, s, bk);
        for (int64_t r = 0; r < nq; r++) {
            AT *sr = s + r * bk, mx = AT_ROWMAX(nk, sr), mn = mx > m[r] ? mx : m[r];
            if (mx != mx) mn = mx; /* NaN scores poison the row, as in the composition */
            if (mn == -INFINITY) { /* nothing finite yet: p = 0, O stays 0 */
                memset(sr, 0, sizeof(AT) * (size_t)nk);
                alpha[r] = 1;
                continue;
            }
            alpha[r] = m[r] == -INFINITY ? 0 : (AT)exp((double)(m[r] - mn));
            l[r] = l[r] * alpha[r] + (AT)AT_EXPSUM(nk, sr, sr, mn);
            m[r] = mn;
        }
        AT_(at_dropout)(j, b, h, i0, nq, j0, nk, s, bk); /* after l: lse is the undropped one's */
        AT_GEMM(j->c, 0, 0, nq, Dv, nk, 1, s, bk, vt, ldv, 0, pv, Dv);
        for (int64_t r = 0; r < nq; r++) {
            AT *orow = ob + r * Dv, *prow = pv + r * Dv, a = alpha[r];
            for (int64_t d = 0; d < Dv; d++) orow[d] = orow[d] * a + prow[d];
        }
    }
    int64_t les = (int64_t)ff_dtype_size(j->lse->dtype);
    char *lp = (char *)j->lse->buf + (j->lse->offset + b * j->lse->strides[0] + h * j->lse->strides[1]) * les;
    for (int64_t r = 0; r < nq; r++) {
        AT inv = l[r] > 0 ? 1 / l[r] : l[r] == 0 ? 0 : l[r], *orow = ob + r * Dv;
        for (int64_t d = 0; d < Dv; d++) orow[d] *= inv;
        double lv = l[r] > 0 ? (double)m[r] + log((double)l[r]) : m[r] != m[r] ? (double)m[r] : -INFINITY;
        ffb_st_f64(lp + (i0 + r) * j->lse->strides[2] * les, j->lse->dtype, lv);
    }
    at_mat o = at_slice(j->o, b, h);
    AT_(at_store)(&o, j->t, i0, nq, Dv, ob, Dv);
}

void AT_(at_forward)(void *arg, int64_t begin, int64_t end)
{
    at_job *j = arg;
    (void)begin, (void)end; /* tasks come from the shared counter: causal tiles differ in cost */
    AT *w = (AT *)(j->scratch + (size_t)atomic_fetch_add(&j->slot, 1) * j->per_worker);
    for (int64_t t; (t = atomic_fetch_add(&j->next, 1)) < j->ntasks;) {
        int64_t bh = t / j->nqt, qt = j->nqt - 1 - t % j->nqt; /* the costliest (causal) tiles first */
        int64_t i0 = qt * j->bq, nq = j->Tq - i0 < j->bq ? j->Tq - i0 : j->bq;
        AT_(fwd_tile)(j, w, bh / j->H, bh % j->H, i0, nq);
    }
}

/* A worker's backward scratch: tiles, then gq, D_i and lse of one head. */
typedef struct AT_(bwd_bufs) {
    AT *qb, *gob, *kb, *vb, *s, *dp, *gk, *gv, *ob, *gq, *di, *lse;
} AT_(bwd_bufs);

static AT_(bwd_bufs) AT_(bwd_split)(const at_job *j, AT *w)
{
    const int64_t D = j->D, Dv = j->Dv, bq = j->bq, bk = j->bk;
    AT_(bwd_bufs) u;
    u.qb = w, u.gob = u.qb + bq * D, u.kb = u.gob + bq * Dv, u.vb = u.kb + bk * D, u.s = u.vb + bk * Dv;
    u.dp = u.s + bq * bk, u.gk = u.dp + bq * bk, u.gv = u.gk + bk * D, u.ob = u.gv + bk * Dv, u.gq = u.ob + bq * Dv;
    u.di = u.gq + j->Tq * D, u.lse = u.di + j->Tq;
    return u;
}

/* D_i = rowsum(go * o), the softmax backward's correction, and lse, once per row of head
 * (b, h); gq's accumulator zeroed. */
static void AT_(bwd_prep)(const at_job *j, const AT_(bwd_bufs) *u, int64_t b, int64_t h)
{
    const int64_t Dv = j->Dv, bq = j->bq, Tq = j->Tq;
    at_mat o = at_slice(j->o, b, h), go = at_slice(j->go, b, h);
    int64_t ldg, ldo, les = (int64_t)ff_dtype_size(j->lse->dtype);
    const char *lp = (const char *)j->lse->buf + (j->lse->offset + b * j->lse->strides[0] + h * j->lse->strides[1]) * les;
    for (int64_t i0 = 0; i0 < Tq; i0 += bq) {
        int64_t nq = Tq - i0 < bq ? Tq - i0 : bq;
        const AT *gt = AT_(at_rows)(&go, j->t, i0, nq, Dv, u->gob, &ldg);
        const AT *ot = AT_(at_rows)(&o, j->t, i0, nq, Dv, u->ob, &ldo);
        for (int64_t r = 0; r < nq; r++) {
            double acc = 0;
            for (int64_t d = 0; d < Dv; d++) acc += (double)gt[r * ldg + d] * (double)ot[r * ldo + d];
            u->di[i0 + r] = (AT)acc;
            u->lse[i0 + r] = (AT)ffb_ld_f64(lp + (i0 + r) * j->lse->strides[2] * les, j->lse->dtype);
        }
    }
    memset(u->gq, 0, sizeof(AT) * (size_t)(Tq * j->D));
}

/* The k tile at row j0 of head (b, h): its gk and gv, written out, and its share of gq,
 * added to u->gq. */
static void AT_(bwd_ktile)(const at_job *j, const AT_(bwd_bufs) *u, int64_t b, int64_t h, int64_t j0)
{
    const int64_t D = j->D, Dv = j->Dv, bq = j->bq, bk = j->bk, Tq = j->Tq;
    const int64_t nk = j->Tk - j0 < bk ? j->Tk - j0 : bk;
    at_mat q = at_slice(j->q, b, h), k = at_slice(j->k, b, h), v = at_slice(j->v, b, h), go = at_slice(j->go, b, h);
    int64_t ldq, ldk, ldv, ldg;
    AT *s = u->s, *dp = u->dp, *gk = u->gk, *gv = u->gv;
    const AT scale = (AT)j->scale;
    const AT *kt = AT_(at_rows)(&k, j->t, j0, nk, D, u->kb, &ldk);
    const AT *vt = AT_(at_rows)(&v, j->t, j0, nk, Dv, u->vb, &ldv);
    memset(gk, 0, sizeof(AT) * (size_t)(nk * D));
    memset(gv, 0, sizeof(AT) * (size_t)(nk * Dv));
    /* causal: rows i < j0 see none of these keys */
    for (int64_t i0 = j->causal ? j0 / bq * bq : 0; i0 < Tq; i0 += bq) {
        int64_t nq = Tq - i0 < bq ? Tq - i0 : bq;
        const AT *qt = AT_(at_rows)(&q, j->t, i0, nq, D, u->qb, &ldq);
        const AT *gt = AT_(at_rows)(&go, j->t, i0, nq, Dv, u->gob, &ldg);
        AT_GEMM(j->c, 0, 1, nq, nk, D, scale, qt, ldq, kt, ldk, 0, s, bk);
        if (j->m || (j->causal && j0 + nk - 1 > i0)) AT_(at_mask)(j, b, h, i0, nq, j0, nk, s, bk);
        for (int64_t r = 0; r < nq; r++) {
            AT *sr = s + r * bk, lv = u->lse[i0 + r];
            if (lv == -INFINITY) memset(sr, 0, sizeof(AT) * (size_t)nk); /* fully masked row: no gradient */
            else AT_EXPSUM(nk, sr, sr, lv);
        }
        AT_GEMM(j->c, 0, 1, nq, nk, Dv, 1, gt, ldg, vt, ldv, 0, dp, bk); /* dp = go v^T */
        if (j->dropout_p > 0) { /* ds = p (drop(dp) - D_i), s = drop(p) */
            AT_(at_dropout_ds)(j, b, h, i0, nq, j0, nk, s, dp, bk, u->di + i0);
        } else {
            for (int64_t r = 0; r < nq; r++) {
                AT *pr = s + r * bk, *dr = dp + r * bk, dd = u->di[i0 + r];
                for (int64_t c = 0; c < nk; c++) dr[c] = pr[c] * (dr[c] - dd); /* ds */
            }
        }
        AT_GEMM(j->c, 1, 0, nk, Dv, nq, 1, s, bk, gt, ldg, 1, gv, Dv); /* gv += drop(p)^T go */
        AT_GEMM(j->c, 1, 0, nk, D, nq, scale, dp, bk, qt, ldq, 1, gk, D);            /* gk += scale ds^T q */
        AT_GEMM(j->c, 0, 0, nq, D, nk, scale, dp, bk, kt, ldk, 1, u->gq + i0 * D, D); /* gq += scale ds k */
    }
    at_mat gkm = at_slice(j->gk, b, h), gvm = at_slice(j->gv, b, h);
    AT_(at_store)(&gkm, j->t, j0, nk, D, gk, D);
    AT_(at_store)(&gvm, j->t, j0, nk, Dv, gv, Dv);
}

void AT_(at_backward)(void *arg, int64_t begin, int64_t end)
{
    at_job *j = arg;
    (void)begin, (void)end;
    AT *w = (AT *)(j->scratch + (size_t)atomic_fetch_add(&j->slot, 1) * j->per_worker);
    AT_(bwd_bufs) u = AT_(bwd_split)(j, w);
    for (int64_t t; (t = atomic_fetch_add(&j->next, 1)) < j->ntasks;) {
        int64_t b = t / j->H, h = t % j->H;
        AT_(bwd_prep)(j, &u, b, h);
        for (int64_t j0 = 0; j0 < j->Tk; j0 += j->bk) AT_(bwd_ktile)(j, &u, b, h, j0);
        at_mat gqm = at_slice(j->gq, b, h);
        AT_(at_store)(&gqm, j->t, 0, j->Tq, j->D, u.gq, j->D);
    }
}

/* Fewer heads than workers: one head at a time (j->head), its k tiles across the
 * workers, each summing its share of gq in its own buffer. */
void AT_(at_backward_head)(void *arg, int64_t begin, int64_t end)
{
    at_job *j = arg;
    (void)begin, (void)end;
    AT *w = (AT *)(j->scratch + (size_t)atomic_fetch_add(&j->slot, 1) * j->per_worker);
    AT_(bwd_bufs) u = AT_(bwd_split)(j, w);
    int64_t b = j->head / j->H, h = j->head % j->H;
    AT_(bwd_prep)(j, &u, b, h);
    for (int64_t t; (t = atomic_fetch_add(&j->next, 1)) < j->nkt;) AT_(bwd_ktile)(j, &u, b, h, t * j->bk);
}

/* ... then the first `used` workers' gq buffers summed and written as head j->head's gq. */
void AT_(at_backward_head_gq)(const at_job *j, int used)
{
    AT_(bwd_bufs) u0 = AT_(bwd_split)(j, (AT *)j->scratch);
    int64_t n = j->Tq * j->D;
    for (int w = 1; w < used; w++) {
        const AT *g = AT_(bwd_split)(j, (AT *)(j->scratch + (size_t)w * j->per_worker)).gq;
        for (int64_t i = 0; i < n; i++) u0.gq[i] += g[i];
    }
    at_mat gqm = at_slice(j->gq, j->head / j->H, j->head % j->H);
    AT_(at_store)(&gqm, j->t, 0, j->Tq, j->D, u0.gq, j->D);
}
