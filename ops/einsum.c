/* einsum, as torch.einsum: "ij,jk->ik", implicit output (the labels used once, in
 * alphabetical order), "..." (the remaining dims, broadcast across operands and aligned
 * from the right, first in an implicit output), repeated labels within an operand (a
 * diagonal: "ii->i", "ii"), size-1 dims broadcast against the same label's size.
 *
 * Composed from differentiable ops, so gradients come from autograd: each operand first
 * takes its diagonals (where(eye, x, 0) summed: exact, NaN off the diagonal stays out) and
 * sums the labels no one else needs; then the operands are contracted two at a time, the
 * pair with the smallest result first (contract_all), each pair as one batched matmul
 * [batch, M, K] @ [batch, K, N] after permute + reshape (the batch: labels both share and
 * still need; K: labels both share and nobody needs later), and the result is summed and
 * permuted into the output order. So up to 52 subscripts work as long as that greedy
 * order keeps every intermediate within FF_MAX_DIMS dims (chains, rings and pairs do);
 * the output itself must fit too.
 *
 * Each step's intermediates live in an arena of its own (ops/expr.h) that is freed once the
 * step's result is held: autograd keeps what its gradients need by reference, so any number
 * of operands (and of diagonals in one) fits, with or without grad. */
#include <stdlib.h>
#include <string.h>

#include "expr.h"

#define NL 64        /* labels: a-z 0..25, A-Z 26..51, ellipsis dims 52..59; fits a uint64_t mask */
#define ELL 52

typedef struct term {
    int n;               /* dims */
    int lab[FF_MAX_DIMS]; /* label of each dim */
} term;

static int label_of(char c)
{
    if (c >= 'a' && c <= 'z') return c - 'a';
    if (c >= 'A' && c <= 'Z') return 26 + c - 'A';
    return -1;
}

/* Parses one operand's subscripts (s[0..len)) for a tensor of rank nd; ell receives how
 * many dims "..." covers (0 if absent). */
static ff_status parse_term(const char *s, size_t len, int nd, term *t, int max_ell, const char *fn)
{
    int explicit_n = 0, has_ell = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            if (has_ell || i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.')
                return ff_error(FF_ERR_INVALID, "%s: malformed '...' in \"%.*s\"", fn, (int)len, s);
            has_ell = 1, i += 2;
        } else if (s[i] != ' ') {
            if (label_of(s[i]) < 0)
                return ff_error(FF_ERR_INVALID, "%s: subscript '%c' is not a letter", fn, s[i]);
            explicit_n++;
        }
    }
    int ell = nd - explicit_n;
    if (ell < 0 || (!has_ell && ell != 0))
        return ff_error(FF_ERR_INVALID, "%s: \"%.*s\" has %d subscripts for an operand of rank %d", fn, (int)len, s,
                        explicit_n, nd);
    if (ell > max_ell) return ff_error(FF_ERR_INVALID, "%s: '...' covers more than %d dims", fn, max_ell);
    t->n = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            for (int k = 0; k < ell; k++) t->lab[t->n++] = ELL + (max_ell - ell) + k; /* aligned from the right */
            i += 2;
        } else if (s[i] != ' ') {
            t->lab[t->n++] = label_of(s[i]);
        }
    }
    return FF_OK;
}

static int find(const term *t, int lab)
{
    for (int d = 0; d < t->n; d++)
        if (t->lab[d] == lab) return d;
    return -1;
}

/* x with dims j merged into i (same label): where(eye, x, 0) summed over j, then in x's
 * dtype again (sum gives i64 for integers and bool; the sum of one element and zeros is
 * exact), as PyTorch's diagonal view keeps x's dtype. */
static ff_tensor *take_diagonal(ff_expr *outer, ff_tensor *x, term *t, int i, int j)
{
    ff_expr local = {0}, *e = &local;
    int nd = t->n;
    int64_t n = x->layout.shape[i], shape[FF_MAX_DIMS];
    for (int d = 0; d < nd; d++) shape[d] = d == i || d == j ? n : 1;
    ff_tensor *eye = FF_EX(e, ff_eye(n, n, FF_BOOL));
    ff_tensor *eb = FF_EX(e, ff_to(eye, x->storage->backend));
    ff_tensor *mask = FF_EX(e, ff_reshape(eb, nd, shape));
    ff_tensor *zero = FF_EX(e, ff_op_scalar_like(x, 0.0, x->dtype));
    ff_tensor *kept = FF_EX(e, ff_where(mask, x, zero));
    ff_tensor *r = FF_EX(e, ff_sum(kept, 1, &j, false));
    if (r && r->dtype != x->dtype) r = FF_EX(e, ff_op_cast(r, x->dtype, "ff_einsum"));
    for (int d = j; d + 1 < nd; d++) t->lab[d] = t->lab[d + 1];
    t->n--;
    r = ff_expr_result(e, r);
    ff_expr_free(e);
    return ff_expr_keep(outer, r); /* NULL marks outer failed */
}

/* Sums the dims of x whose labels are not in `keep` (a label mask). */
static ff_tensor *sum_unneeded(ff_expr *e, ff_tensor *x, term *t, const bool *keep)
{
    int axes[FF_MAX_DIMS], na = 0;
    term out = {0};
    for (int d = 0; d < t->n; d++) {
        if (keep[t->lab[d]]) out.lab[out.n++] = t->lab[d];
        else axes[na++] = d;
    }
    if (!na) return x;
    *t = out;
    return FF_EX(e, ff_sum(x, na, axes, false));
}

/* Permutes x (labels t) into the order `order` (n labels, each present in t). */
static ff_tensor *arrange(ff_expr *e, ff_tensor *x, const term *t, const int *order, int n)
{
    int perm[FF_MAX_DIMS];
    bool identity = true;
    for (int k = 0; k < n; k++) {
        perm[k] = find(t, order[k]);
        identity = identity && perm[k] == k;
    }
    return identity ? x : FF_EX(e, ff_permute(x, perm));
}

/* ---- the order of contraction ------------------------------------------------------ */
/* Operands are merged two at a time, the pair whose result is smallest first (fewest
 * dims that fit a tensor, then fewest elements), so a chain "ab,bc,cd,...,yz" over 52
 * subscripts never holds more than the dims still needed: no intermediate spans all the
 * labels. Each label a merge makes unneeded (no other operand, not the output) is
 * summed, or contracted by the matmul, at once. */
typedef struct operands {
    int n;                /* live operands: x[0..n) */
    ff_tensor **x;        /* borrowed (an input) or owned (own[k]) */
    bool *own;
    term *t;
    int uses[NL];         /* how many live operands hold each label */
    bool in_out[NL];
    const int64_t *size;  /* each label's size (after broadcasting) */
} operands;

static void count_uses(operands *o)
{
    memset(o->uses, 0, sizeof o->uses);
    for (int k = 0; k < o->n; k++) {
        bool seen[NL] = {false};
        for (int d = 0; d < o->t[k].n; d++) {
            int l = o->t[k].lab[d];
            if (!seen[l]) o->uses[l]++, seen[l] = true;
        }
    }
}

/* Labels still needed once operands i and j (j < 0: only i) are merged: the output's and
 * those of the other live operands. */
static void needed_after(const operands *o, int i, int j, bool *later)
{
    for (int l = 0; l < NL; l++) {
        int held = (find(&o->t[i], l) >= 0) + (j >= 0 && find(&o->t[j], l) >= 0);
        later[l] = o->in_out[l] || o->uses[l] > held;
    }
}

static uint64_t label_mask(const term *t)
{
    uint64_t m = 0;
    for (int d = 0; d < t->n; d++) m |= (uint64_t)1 << t->lab[d];
    return m;
}

/* Rank and element count of merging i and j (bit masks: this runs for every pair). */
static void merged_size(const operands *o, int i, int j, int *rank, double *numel)
{
    uint64_t mi = label_mask(&o->t[i]), mj = label_mask(&o->t[j]), all = mi | mj;
    *rank = 0, *numel = 1;
    for (int l = 0; all; l++, all >>= 1) {
        if (!(all & 1)) continue;
        int held = (int)((mi >> l) & 1) + (int)((mj >> l) & 1);
        if (o->in_out[l] || o->uses[l] > held) ++*rank, *numel *= (double)o->size[l];
    }
}

static void pick_pair(const operands *o, int *pi, int *pj)
{
    int best_rank = 0;
    double best_numel = 0;
    *pi = -1, *pj = -1;
    for (int i = 0; i < o->n; i++)
        for (int j = i + 1; j < o->n; j++) {
            int rank;
            double numel;
            merged_size(o, i, j, &rank, &numel);
            bool fits = rank <= FF_MAX_DIMS, best_fits = best_rank <= FF_MAX_DIMS;
            bool better = *pi < 0 || (fits && !best_fits) || (!fits && !best_fits && rank < best_rank) ||
                          (fits && best_fits && numel < best_numel);
            if (better) *pi = i, *pj = j, best_rank = rank, best_numel = numel;
        }
}

/* The result of a step's arena as an owned reference; the arena's other values go. */
static ff_tensor *step_result(ff_expr *e, ff_tensor *y)
{
    ff_tensor *r = ff_expr_result(e, y);
    ff_expr_free(e);
    return r;
}

/* Operand k's diagonals, and the sum over the labels only it holds and the output lacks. */
static ff_tensor *prepare(ff_expr *e, const operands *o, int k)
{
    ff_tensor *x = o->x[k];
    term *t = &o->t[k];
    for (int i = 0; i < t->n && !e->failed; i++)
        for (int j = t->n - 1; j > i && !e->failed; j--)
            if (t->lab[j] == t->lab[i]) x = take_diagonal(e, x, t, i, j);
    bool keep[NL];
    needed_after(o, k, -1, keep);
    return sum_unneeded(e, x, t, keep);
}

/* a (labels *at) times b (labels *bt) as one batched matmul [B, M, K] @ [B, K, N] after
 * permute + reshape: B, the labels both hold and `later` needs; K, those both hold and
 * nobody needs; M and N, each side's own. *at becomes the result's labels. */
static ff_tensor *contract_pair(ff_expr *e, ff_tensor *a, term *at, ff_tensor *b, term *bt, const bool *later,
                                const int64_t *size)
{
    bool keep[NL];
    memcpy(keep, later, sizeof keep);
    for (int d = 0; d < at->n; d++) keep[at->lab[d]] = true;
    b = sum_unneeded(e, b, bt, keep);
    memcpy(keep, later, sizeof keep);
    for (int d = 0; d < bt->n; d++) keep[bt->lab[d]] = true;
    a = sum_unneeded(e, a, at, keep);
    int batch[FF_MAX_DIMS], nb = 0, con[FF_MAX_DIMS], nc = 0, aon[FF_MAX_DIMS], na = 0, bon[FF_MAX_DIMS], nbo = 0;
    for (int d = 0; d < at->n; d++) {
        int l = at->lab[d];
        if (find(bt, l) >= 0) {
            if (later[l]) batch[nb++] = l;
            else con[nc++] = l;
        } else {
            aon[na++] = l;
        }
    }
    for (int d = 0; d < bt->n; d++)
        if (find(at, bt->lab[d]) < 0) bon[nbo++] = bt->lab[d];
    if (nb + na + nbo > FF_MAX_DIMS) {
        ff_error(FF_ERR_INVALID, "an intermediate result would have rank %d > %d (the pair merged next "
                 "had the smallest result of all pairs)", nb + na + nbo, FF_MAX_DIMS);
        return ff_expr_keep(e, NULL);
    }
    int ao[FF_MAX_DIMS], bo[FF_MAX_DIMS];
    memcpy(ao, batch, sizeof(int) * (size_t)nb), memcpy(ao + nb, aon, sizeof(int) * (size_t)na);
    memcpy(ao + nb + na, con, sizeof(int) * (size_t)nc);
    memcpy(bo, batch, sizeof(int) * (size_t)nb), memcpy(bo + nb, con, sizeof(int) * (size_t)nc);
    memcpy(bo + nb + nc, bon, sizeof(int) * (size_t)nbo);
    ff_tensor *a2 = arrange(e, a, at, ao, nb + na + nc), *b2 = arrange(e, b, bt, bo, nb + nc + nbo);
    /* broadcast size-1 dims to the label's size, then [B, M, K] @ [B, K, N] */
    int64_t as[FF_MAX_DIMS], bs[FF_MAX_DIMS], B = 1, M = 1, K = 1, N = 1;
    for (int d = 0; d < nb + na + nc; d++) as[d] = size[ao[d]];
    for (int d = 0; d < nb + nc + nbo; d++) bs[d] = size[bo[d]];
    for (int d = 0; d < nb; d++) B *= size[batch[d]];
    for (int d = 0; d < na; d++) M *= size[aon[d]];
    for (int d = 0; d < nc; d++) K *= size[con[d]];
    for (int d = 0; d < nbo; d++) N *= size[bon[d]];
    ff_tensor *a3 = FF_EX(e, ff_broadcast_to(a2, nb + na + nc, as));
    ff_tensor *b3 = FF_EX(e, ff_broadcast_to(b2, nb + nc + nbo, bs));
    ff_tensor *am = FF_EX(e, ff_reshape(a3, 3, (int64_t[]){B, M, K}));
    ff_tensor *bm = FF_EX(e, ff_reshape(b3, 3, (int64_t[]){B, K, N}));
    ff_tensor *y = FF_EX(e, ff_matmul(am, bm));
    int64_t ys[FF_MAX_DIMS];
    at->n = 0;
    for (int d = 0; d < nb; d++) ys[at->n] = size[batch[d]], at->lab[at->n++] = batch[d];
    for (int d = 0; d < na; d++) ys[at->n] = size[aon[d]], at->lab[at->n++] = aon[d];
    for (int d = 0; d < nbo; d++) ys[at->n] = size[bon[d]], at->lab[at->n++] = bon[d];
    return FF_EX(e, ff_reshape(y, at->n, ys));
}

/* Puts x (owned, or NULL after a failure) in slot k, dropping what the slot owned. */
static void replace(operands *o, int k, ff_tensor *x)
{
    if (o->own[k]) ff_tensor_release(o->x[k]);
    o->x[k] = x, o->own[k] = true;
}

static void drop(operands *o, int j)
{
    if (o->own[j]) ff_tensor_release(o->x[j]);
    o->n--;
    o->x[j] = o->x[o->n], o->own[j] = o->own[o->n], o->t[j] = o->t[o->n];
}

/* Every operand merged into the output (out's labels, in order), or NULL. */
static ff_tensor *contract_all(int n, ff_tensor *const *ops, term *t, const term *out, const int64_t *size)
{
    operands o = {.n = n, .t = t, .size = size};
    o.x = calloc((size_t)n, sizeof *o.x);
    o.own = calloc((size_t)n, sizeof *o.own);
    if (!o.x || !o.own) {
        free(o.x), free(o.own);
        return ff_error(FF_ERR_OOM, "out of memory"), NULL;
    }
    for (int k = 0; k < n; k++) o.x[k] = ops[k];
    for (int d = 0; d < out->n; d++) o.in_out[out->lab[d]] = true;
    ff_expr e = {0};
    count_uses(&o);
    for (int k = 0; k < n && !e.failed; k++) {
        ff_tensor *y = prepare(&e, &o, k);
        replace(&o, k, step_result(&e, y));
    }
    while (o.n > 1 && !e.failed) {
        int i = 0, j = 1;
        count_uses(&o);
        pick_pair(&o, &i, &j);
        bool later[NL];
        needed_after(&o, i, j, later);
        ff_tensor *y = contract_pair(&e, o.x[i], &o.t[i], o.x[j], &o.t[j], later, size);
        replace(&o, i, step_result(&e, y));
        drop(&o, j);
    }
    ff_tensor *r = NULL;
    if (!e.failed) {
        term at = o.t[0];
        ff_tensor *acc = sum_unneeded(&e, o.x[0], &at, o.in_out);
        ff_tensor *y = arrange(&e, acc, &at, out->lab, out->n);
        int64_t os[FF_MAX_DIMS];
        for (int d = 0; d < out->n; d++) os[d] = size[out->lab[d]];
        /* a lone operand's size-1 dims broadcast too */
        ff_tensor *b = y ? FF_EX(&e, ff_broadcast_to(y, out->n, os)) : NULL;
        r = b ? ff_contiguous(b) : NULL;
    }
    ff_expr_free(&e);
    while (o.n > 0) drop(&o, o.n - 1);
    free(o.x), free(o.own);
    return r;
}

ff_tensor *ff_einsum(const char *equation, int n, ff_tensor *const *ops)
{
    static const char fn[] = "ff_einsum";
    if (!equation || n < 1 || !ops) return ff_error(FF_ERR_INVALID, "%s: need an equation and operands", fn), NULL;
    for (int k = 0; k < n; k++)
        if (!ops[k]) return ff_error(FF_ERR_INVALID, "%s: operand %d is NULL", fn, k), NULL;
    const char *arrow = strstr(equation, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - equation) : strlen(equation);
    /* the operands' subscripts, and the widest "..." */
    term *t = calloc((size_t)n, sizeof *t);
    if (!t) return ff_error(FF_ERR_OOM, "%s: out of memory", fn), NULL;
    int max_ell = 0, k = 0;
    ff_status st = FF_OK;
    size_t starts[256], lens[256];
    if (n > 256) st = ff_error(FF_ERR_INVALID, "%s: at most 256 operands", fn);
    for (const char *q = equation; !st && k < n; k++) {
        const char *c = memchr(q, ',', lhs_len - (size_t)(q - equation));
        size_t len = c ? (size_t)(c - q) : lhs_len - (size_t)(q - equation);
        starts[k] = (size_t)(q - equation), lens[k] = len;
        int explicit_n = 0;
        for (size_t i = 0; i < len; i++) explicit_n += label_of(q[i]) >= 0;
        if (memchr(q, '.', len) && ops[k]->layout.ndim - explicit_n > max_ell) max_ell = ops[k]->layout.ndim - explicit_n;
        q = c ? c + 1 : q + len;
        if (!c && k + 1 < n) st = ff_error(FF_ERR_INVALID, "%s: \"%s\" has %d operand subscripts for %d operands", fn,
                                           equation, k + 1, n);
        if (c && k + 1 == n) st = ff_error(FF_ERR_INVALID, "%s: \"%s\" has more subscripts than the %d operands", fn,
                                           equation, n);
    }
    if (max_ell > 8) st = ff_error(FF_ERR_INVALID, "%s: '...' covers more than 8 dims", fn);
    for (k = 0; !st && k < n; k++)
        st = parse_term(equation + starts[k], lens[k], ops[k]->layout.ndim, &t[k], max_ell, fn);
    /* the output's labels */
    term out = {0};
    int count[NL] = {0};
    int64_t size[NL];
    for (int l = 0; l < NL; l++) size[l] = -1;
    for (k = 0; !st && k < n; k++)
        for (int d = 0; d < t[k].n && !st; d++) {
            int l = t[k].lab[d];
            int64_t s = ops[k]->layout.shape[d];
            count[l]++;
            if (size[l] < 0 || size[l] == 1) size[l] = s;
            else if (s != 1 && s != size[l])
                st = ff_error(FF_ERR_INVALID, "%s: subscript sizes disagree (%lld and %lld)", fn, (long long)size[l],
                              (long long)s);
        }
    if (!st && arrow) {
        const char *o = arrow + 2;
        size_t olen = strlen(o);
        for (size_t i = 0; i < olen && !st; i++) {
            if (o[i] == '.') {
                if (i + 2 >= olen || o[i + 1] != '.' || o[i + 2] != '.')
                    st = ff_error(FF_ERR_INVALID, "%s: malformed '...' in the output", fn);
                for (int l = ELL; l < ELL + max_ell && !st; l++) out.lab[out.n++] = l;
                i += 2;
            } else if (o[i] != ' ') {
                int l = label_of(o[i]);
                if (l < 0 || !count[l] || find(&out, l) >= 0)
                    st = ff_error(FF_ERR_INVALID, "%s: output subscript '%c' is %s", fn, o[i],
                                  l < 0 ? "not a letter" : !count[l] ? "not in any operand" : "repeated");
                else if (out.n == FF_MAX_DIMS) st = ff_error(FF_ERR_INVALID, "%s: output rank > %d", fn, FF_MAX_DIMS);
                else out.lab[out.n++] = l;
            }
        }
    } else if (!st) { /* implicit: the ellipsis dims, then the labels used once, alphabetically */
        for (int l = ELL; l < ELL + max_ell; l++) out.lab[out.n++] = l;
        int rank = out.n;
        for (int l = 0; l < ELL; l++) rank += count[l] == 1;
        if (rank > FF_MAX_DIMS)
            st = ff_error(FF_ERR_INVALID, "%s: \"%s\": the implicit output has rank %d, more than the %d dims a "
                          "tensor may have (sum some of its subscripts with an explicit \"->\" output)", fn,
                          equation, rank, FF_MAX_DIMS);
        for (int l = 0; l < ELL && !st; l++)
            if (count[l] == 1) out.lab[out.n++] = l;
    }
    if (st) {
        free(t);
        return NULL;
    }

    ff_tensor *r = contract_all(n, ops, t, &out, size);
    free(t);
    if (!r) ff_error_prefix(fn);
    return r;
}
