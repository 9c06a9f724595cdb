/* Dense linear algebra on the backend's optional linalg entry (LAPACK on cpu_blas, the
 * written-out algorithms on the reference): solve, inverse, det, cholesky, qr, svd,
 * lstsq, batched over leading dims as torch.linalg. F32 and F64 only (an integer input
 * is an error, as PyTorch); a backend without the entry says it does not support them.
 *
 * Gradients are written with ff ops (higher orders work where the formula's ops are
 * differentiable; under create_graph a formula recomputes, with history, the outputs it
 * reads, since saved outputs are constants):
 *   solve     X = A^-1 B:  gB = A^-T gX,  gA = -gB X^T
 *   inverse   solve(A, I), so solve's gradient
 *   det       gA = g det(A) A^-T (an error at a singular A, where PyTorch switches to SVD)
 *   cholesky  gA = L^-T Phi L^-1, Phi = P + tril(P, -1)^T halved, P = tril(L^T gL), as PyTorch
 *   qr        Walter & Lehmann's formula for m >= n, the square part plus the rest for m < n
 *   svd       Townsend's formula; 1 / (s_j^2 - s_i^2) read as 0 where two singular values
 *             are equal (exact when only S is used, where PyTorch is exact too)
 *   lstsq     the normal equations' derivative (full rank; rank-deficient A is an error)
 * qr and svd return several outputs: one node records their packed concatenation, and
 * the outputs are views of it, so each output's gradient reaches the one formula. */
#include <string.h>

#include "expr.h"

/* ---- checks and raw kernels ----------------------------------------------------- */

static ff_status check_matrix(const ff_tensor *a, const char *what, bool square, const char *fn)
{
    if (!a) return ff_error(FF_ERR_INVALID, "%s: %s is NULL", fn, what);
    int nd = a->layout.ndim;
    if (!ff_dtype_is_float(a->dtype))
        return ff_error(FF_ERR_INVALID, "%s: expected a floating point %s, got %s", fn, what, ff_dtype_name(a->dtype));
    if (nd < 2)
        return ff_error(FF_ERR_INVALID, "%s: %s must have at least 2 dims [..., m, n], got rank %d", fn, what, nd);
    if (square && a->layout.shape[nd - 1] != a->layout.shape[nd - 2]) {
        char s[128];
        return ff_error(FF_ERR_INVALID, "%s: %s must be batches of square matrices, got %s", fn, what,
                        ff_shape_str(nd, a->layout.shape, s, sizeof s));
    }
    return FF_OK;
}

/* A new tensor of a's dtype on a's backend with the given shape. */
static ff_tensor *new_like(const ff_tensor *a, int nd, const int64_t *shape, const char *fn)
{
    return ff_tensor_new(a->storage->backend, nd, shape, a->dtype, fn);
}

/* Runs linalg op into fresh outputs of the given shapes; NULLs on failure. */
static ff_status run_linalg(int op, const ff_tensor *const *src, int n_src, int n_dst, const int *nds,
                            int64_t (*shapes)[FF_MAX_DIMS], ff_tensor **out, const char *fn)
{
    for (int i = 0; i < n_dst; i++) out[i] = NULL;
    ff_status st = FF_OK;
    for (int i = 0; i < n_dst && !st; i++)
        if (!(out[i] = new_like(src[0], nds[i], shapes[i], fn))) st = ff_last_status();
    if (!st) st = ff_kernel_linalg(op, out, n_dst, src, n_src, fn);
    if (st)
        for (int i = 0; i < n_dst; i++) ff_tensor_release(out[i]), out[i] = NULL;
    return st;
}

/* The identity, n x n, on a's backend and dtype, broadcast to [batch..., n, n]. */
static ff_tensor *eye_like(const ff_tensor *a, int nd, const int64_t *shape)
{
    int64_t n = shape[nd - 1];
    ff_tensor *e = ff_eye(n, n, a->dtype), *e1 = e ? ff_to(e, a->storage->backend) : NULL;
    ff_tensor *b = e1 ? ff_broadcast_to(e1, nd, shape) : NULL;
    ff_tensor_release(e), ff_tensor_release(e1);
    return b;
}

/* ---- solve and inverse -------------------------------------------------------------- */

/* X from a [..., m, n] and b [..., m, k] with one batch shape (op SOLVE, m = n, or LSTSQ):
 * X [..., n, k], recorded as node `name` with inputs a, b and X saved. */
static ff_tensor *a_x_b(int op, const ff_tensor *a, const ff_tensor *b, const char *name, ff_backward_fn bw,
                        const char *fn)
{
    const ff_tensor *src[2] = {a, b};
    int nd = b->layout.ndim;
    int64_t shape[1][FF_MAX_DIMS];
    memcpy(shape[0], b->layout.shape, sizeof shape[0]);
    shape[0][nd - 2] = a->layout.shape[nd - 1];
    ff_tensor *x;
    if (run_linalg(op, src, 2, 1, &nd, shape, &x, fn)) return NULL;
    const ff_tensor *save[1] = {x};
    return ff_op_record(x, name, bw, 2, src, 1, save);
}

/* Ends a two-input backward: gi[0] = gA, gi[1] = gB (both owned by e), frees e. */
static ff_status two_grads(ff_expr *e, ff_tensor *gA, ff_tensor *gB, ff_tensor **gi)
{
    gi[1] = e->failed ? NULL : ff_tensor_retain(gB);
    gi[0] = ff_expr_result(e, gA);
    ff_expr_free(e);
    if (!gi[0]) ff_tensor_release(gi[1]), gi[1] = NULL;
    return gi[0] ? FF_OK : ff_last_status();
}

static ff_tensor *solve_batched(const ff_tensor *a, const ff_tensor *b, const char *fn);

/* inputs A, B; saved X */
static ff_status solve_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *A = n->inputs[0], *B = n->inputs[1];
    const ff_tensor *xs = ff_node_saved(n, 0);
    if (!xs) return ff_last_status();
    ff_expr e = {0};
    ff_tensor *X = FF_EX(&e, ff_grad_enabled() ? solve_batched(A, B, n->name) : ff_tensor_retain((ff_tensor *)xs));
    ff_tensor *At = FF_EX(&e, ff_mT(A));
    ff_tensor *gB = FF_EX(&e, solve_batched(At, g, n->name));
    ff_tensor *Xt = FF_EX(&e, ff_mT(X));
    ff_tensor *p = FF_EX(&e, ff_matmul(gB, Xt));
    ff_tensor *gA = FF_EX(&e, ff_neg(p));
    return two_grads(&e, gA, gB, gi);
}

/* a [..., n, n], b [..., n, k] with one batch shape. */
static ff_tensor *solve_batched(const ff_tensor *a, const ff_tensor *b, const char *fn)
{
    return a_x_b(FF_LINALG_SOLVE, a, b, "linalg_solve", solve_backward, fn);
}

/* b as PyTorch reads it: a vector when it has rank 1, or A's rank - 1 and A's shape
 * without its last dim. */
static bool rhs_is_vector(const ff_tensor *a, const ff_tensor *b)
{
    int na = a->layout.ndim, nb = b->layout.ndim;
    if (nb == 1) return true;
    return nb == na - 1 && memcmp(a->layout.shape, b->layout.shape, sizeof(int64_t) * (size_t)nb) == 0;
}

/* Brings a [..., m, n] and b [..., m, k] (or a vector) to one batch shape; *vec says b
 * was a vector (then *b2 has a trailing 1). */
static ff_status broadcast_pair(const ff_tensor *a, const ff_tensor *b, ff_tensor **a2, ff_tensor **b2, bool *vec,
                                const char *fn)
{
    *a2 = *b2 = NULL;
    if (!b) return ff_error(FF_ERR_INVALID, "%s: B is NULL", fn);
    if (b->dtype != a->dtype)
        return ff_error(FF_ERR_INVALID, "%s: A (%s) and B (%s) must have one dtype", fn, ff_dtype_name(a->dtype),
                        ff_dtype_name(b->dtype));
    *vec = rhs_is_vector(a, b);
    int na = a->layout.ndim, nbv = b->layout.ndim + (*vec ? 1 : 0);
    int64_t bs[FF_MAX_DIMS + 1];
    memcpy(bs, b->layout.shape, sizeof(int64_t) * (size_t)b->layout.ndim);
    if (*vec) bs[nbv - 1] = 1;
    char sa[128], sb[128];
    if (nbv < 2 || bs[nbv - 2] != a->layout.shape[na - 2])
        return ff_error(FF_ERR_INVALID, "%s: incompatible shapes of A %s and B %s for A X = B", fn,
                        ff_shape_str(na, a->layout.shape, sa, sizeof sa),
                        ff_shape_str(b->layout.ndim, b->layout.shape, sb, sizeof sb));
    int nbatch;
    int64_t batch[FF_MAX_DIMS];
    if (ff_broadcast_shapes(na - 2, a->layout.shape, nbv - 2, bs, &nbatch, batch, fn)) return ff_last_status();
    if (nbatch + 2 > FF_MAX_DIMS) return ff_error(FF_ERR_INVALID, "%s: too many dims", fn);
    int64_t as[FF_MAX_DIMS], bb[FF_MAX_DIMS];
    memcpy(as, batch, sizeof(int64_t) * (size_t)nbatch);
    memcpy(bb, batch, sizeof(int64_t) * (size_t)nbatch);
    as[nbatch] = a->layout.shape[na - 2], as[nbatch + 1] = a->layout.shape[na - 1];
    bb[nbatch] = bs[nbv - 2], bb[nbatch + 1] = bs[nbv - 1];
    ff_tensor *bu = *vec ? ff_unsqueeze(b, -1) : ff_tensor_retain((ff_tensor *)b);
    *a2 = ff_broadcast_to(a, nbatch + 2, as);
    *b2 = bu ? ff_broadcast_to(bu, nbatch + 2, bb) : NULL;
    ff_tensor_release(bu);
    if (!*a2 || !*b2) {
        ff_tensor_release(*a2), ff_tensor_release(*b2);
        *a2 = *b2 = NULL;
        return ff_last_status();
    }
    return FF_OK;
}

/* A solution's vector form back (squeezes the trailing 1). */
static ff_tensor *unvector(ff_tensor *x, bool vec)
{
    if (!x || !vec) return x;
    ff_tensor *r = ff_squeeze(x, -1);
    ff_tensor_release(x);
    return r;
}

ff_tensor *ff_solve(const ff_tensor *a, const ff_tensor *b)
{
    static const char fn[] = "ff_solve";
    if (check_matrix(a, "A", true, fn)) return NULL;
    ff_tensor *a2, *b2;
    bool vec;
    if (broadcast_pair(a, b, &a2, &b2, &vec, fn)) return NULL;
    ff_tensor *x = solve_batched(a2, b2, fn);
    ff_tensor_release(a2), ff_tensor_release(b2);
    return unvector(x, vec);
}

ff_tensor *ff_inverse(const ff_tensor *a)
{
    static const char fn[] = "ff_inverse";
    if (check_matrix(a, "input", true, fn)) return NULL;
    ff_tensor *eye = eye_like(a, a->layout.ndim, a->layout.shape);
    ff_tensor *x = eye ? solve_batched(a, eye, fn) : NULL;
    ff_tensor_release(eye);
    return x;
}

/* ---- det ------------------------------------------------------------------------ */

/* inputs A; saved det */
static ff_status det_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *A = n->inputs[0], *ds = ff_node_saved(n, 0);
    if (!ds) return ff_last_status();
    ff_expr e = {0};
    ff_tensor *d = FF_EX(&e, ff_grad_enabled() ? ff_det(A) : ff_tensor_retain((ff_tensor *)ds));
    ff_tensor *gd = FF_EX(&e, ff_mul(g, d));
    ff_tensor *gd1 = FF_EX(&e, ff_unsqueeze(gd, -1));
    ff_tensor *gd2 = FF_EX(&e, ff_unsqueeze(gd1, -1));
    ff_tensor *inv = FF_EX(&e, ff_inverse(A));
    ff_tensor *invt = FF_EX(&e, ff_mT(inv));
    gi[0] = ff_expr_result(&e, FF_EX(&e, ff_mul(gd2, invt)));
    ff_expr_free(&e);
    if (!gi[0]) ff_error_prefix("det backward (a singular matrix has no inverse here)");
    return gi[0] ? FF_OK : ff_last_status();
}

ff_tensor *ff_det(const ff_tensor *a)
{
    static const char fn[] = "ff_det";
    if (check_matrix(a, "input", true, fn)) return NULL;
    int nd = a->layout.ndim - 2;
    int64_t shape[1][FF_MAX_DIMS];
    memcpy(shape[0], a->layout.shape, sizeof shape[0]);
    ff_tensor *d;
    if (run_linalg(FF_LINALG_DET, &a, 1, 1, &nd, shape, &d, fn)) return NULL;
    const ff_tensor *save[1] = {d};
    return ff_op_record(d, "det", det_backward, 1, &a, 1, save);
}

/* ---- cholesky ------------------------------------------------------------------- */

static ff_tensor *cholesky_lower(const ff_tensor *a, const char *fn);

/* x M^-T = (M^-1 x^T)^T for a square M (cholesky: x L^-1 is x (L^T)^-T; qr: x R^-T). */
static ff_tensor *solve_right_t(const ff_tensor *x, const ff_tensor *m, const char *fn)
{
    ff_tensor *xt = ff_mT(x), *y = xt ? solve_batched(m, xt, fn) : NULL, *r = y ? ff_mT(y) : NULL;
    ff_tensor_release(xt), ff_tensor_release(y);
    return r;
}

/* inputs A; saved L */
static ff_status cholesky_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *A = n->inputs[0], *ls = ff_node_saved(n, 0);
    if (!ls) return ff_last_status();
    ff_expr e = {0};
    ff_tensor *L = FF_EX(&e, ff_grad_enabled() ? cholesky_lower(A, n->name) : ff_tensor_retain((ff_tensor *)ls));
    ff_tensor *Lt = FF_EX(&e, ff_mT(L));
    ff_tensor *p0 = FF_EX(&e, ff_matmul(Lt, g));
    ff_tensor *P = FF_EX(&e, ff_tril(p0, 0));
    ff_tensor *low = FF_EX(&e, ff_tril(P, -1));
    ff_tensor *lowt = FF_EX(&e, ff_mT(low));
    ff_tensor *s = FF_EX(&e, ff_add(P, lowt));
    ff_tensor *phi = FF_EX(&e, ff_mul_scalar(s, 0.5));
    ff_tensor *y = FF_EX(&e, solve_batched(Lt, phi, n->name)); /* L^-T Phi */
    gi[0] = ff_expr_result(&e, FF_EX(&e, solve_right_t(y, Lt, n->name)));
    ff_expr_free(&e);
    return gi[0] ? FF_OK : ff_last_status();
}

static ff_tensor *cholesky_lower(const ff_tensor *a, const char *fn)
{
    int nd = a->layout.ndim;
    int64_t shape[1][FF_MAX_DIMS];
    memcpy(shape[0], a->layout.shape, sizeof shape[0]);
    ff_tensor *l;
    if (run_linalg(FF_LINALG_CHOLESKY, &a, 1, 1, &nd, shape, &l, fn)) return NULL;
    const ff_tensor *save[1] = {l};
    return ff_op_record(l, "cholesky", cholesky_backward, 1, &a, 1, save);
}

ff_tensor *ff_cholesky(const ff_tensor *a, bool upper)
{
    static const char fn[] = "ff_cholesky";
    if (check_matrix(a, "input", true, fn)) return NULL;
    ff_tensor *l = cholesky_lower(a, fn);
    if (!l || !upper) return l;
    ff_tensor *u = ff_mT(l);
    ff_tensor_release(l);
    return u;
}

/* ---- several outputs: one packed node ------------------------------------------- */

/* outs[i] flattened over their matrix dims and concatenated along one last axis,
 * recorded as node `name` with input a; saves the outputs. */
static ff_tensor *pack(const ff_tensor *a, int n, ff_tensor **outs, const int *tail, const char *name,
                       ff_backward_fn bw, int64_t ip, int64_t *sizes)
{
    int nb = a->layout.ndim - 2;
    ff_tensor *flat[3] = {NULL, NULL, NULL}, *p = NULL;
    bool prev = ff_set_grad_enabled(false);
    int ok = 1;
    for (int i = 0; i < n && ok; i++) {
        int64_t shape[FF_MAX_DIMS];
        memcpy(shape, outs[i]->layout.shape, sizeof(int64_t) * (size_t)nb);
        sizes[i] = 1;
        for (int d = nb; d < nb + tail[i]; d++) sizes[i] *= outs[i]->layout.shape[d];
        shape[nb] = sizes[i];
        ok = (flat[i] = ff_reshape(outs[i], nb + 1, shape)) != NULL;
    }
    if (ok) p = ff_concat(n, flat, nb);
    ff_set_grad_enabled(prev);
    for (int i = 0; i < n; i++) ff_tensor_release(flat[i]);
    if (!p) return NULL;
    ff_node *node = ff_op_record_node(&p, name, bw, 1, &a, n, (const ff_tensor *const *)outs);
    if (node) node->ip[0] = ip, node->nip = 1;
    return p;
}

/* Output i of a packed tensor p, a view with its own shape (tracked). */
static ff_tensor *unpack(const ff_tensor *p, const ff_tensor *like, int nb, const int64_t *sizes, int i)
{
    int64_t start = 0;
    for (int j = 0; j < i; j++) start += sizes[j];
    ff_tensor *s = ff_narrow(p, nb, start, sizes[i]);
    ff_tensor *r = s ? ff_reshape(s, like->layout.ndim, like->layout.shape) : NULL;
    ff_tensor_release(s);
    return r;
}

/* ---- qr ------------------------------------------------------------------------- */

/* gA for A = Q R with A m x n, m >= n (R square): Walter & Lehmann / TensorFlow's form
 *   gA = Q (gR + tril(Q^T gQ - gQ^T Q + R gR^T - gR R^T) R^-T) + (gQ - Q Q^T gQ) R^-T */
static ff_tensor *qr_grad_tall(const ff_tensor *Q, const ff_tensor *R, const ff_tensor *gQ, const ff_tensor *gR,
                               const char *fn)
{
    ff_expr e = {0};
    ff_tensor *Qt = FF_EX(&e, ff_mT(Q));
    ff_tensor *qdq = FF_EX(&e, ff_matmul(Qt, gQ));
    ff_tensor *qdqt = FF_EX(&e, ff_mT(qdq));
    ff_tensor *qs = FF_EX(&e, ff_sub(qdq, qdqt));
    ff_tensor *gRt = FF_EX(&e, ff_mT(gR));
    ff_tensor *rdr = FF_EX(&e, ff_matmul(R, gRt));
    ff_tensor *rdrt = FF_EX(&e, ff_mT(rdr));
    ff_tensor *rs = FF_EX(&e, ff_sub(rdr, rdrt));
    ff_tensor *sum = FF_EX(&e, ff_add(qs, rs));
    ff_tensor *low = FF_EX(&e, ff_tril(sum, 0));
    ff_tensor *t1 = FF_EX(&e, solve_right_t(low, R, fn));
    ff_tensor *t2 = FF_EX(&e, ff_add(gR, t1));
    ff_tensor *ga = FF_EX(&e, ff_matmul(Q, t2));
    ff_tensor *qqdq = FF_EX(&e, ff_matmul(Q, qdq));
    ff_tensor *d = FF_EX(&e, ff_sub(gQ, qqdq));
    ff_tensor *gb = FF_EX(&e, solve_right_t(d, R, fn));
    ff_tensor *r = ff_expr_result(&e, FF_EX(&e, ff_add(ga, gb)));
    ff_expr_free(&e);
    return r;
}

static const int qr_tail[2] = {2, 2};

/* inputs A; saved Q, R (node ip[0]: complete) */
static ff_status qr_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *A = n->inputs[0], *Qs = ff_node_saved(n, 0), *Rs = Qs ? ff_node_saved(n, 1) : NULL;
    if (!Rs) return ff_last_status();
    int nd = A->layout.ndim, nb = nd - 2;
    int64_t m = A->layout.shape[nd - 2], c = A->layout.shape[nd - 1];
    if (n->ip[0] && m > c)
        return ff_error(FF_ERR_UNSUPPORTED,
                        "%s backward: the QR decomposition is not differentiable when mode='complete' and rows > "
                        "cols (as PyTorch)", n->name);
    int64_t sizes[2] = {Qs->layout.shape[nd - 2] * Qs->layout.shape[nd - 1], Rs->layout.shape[nd - 2] * c};
    ff_expr e = {0};
    /* under create_graph Q and R must carry their dependence on A, or a second order loses
     * every path through them (svdvals' is then 0): recompute them with history (the same
     * kernel on the same A gives the same signs; saving the tracked outputs instead would
     * make the node hold itself) */
    ff_tensor *Q = NULL, *R = NULL;
    if (!ff_grad_enabled()) {
        Q = FF_EX(&e, ff_tensor_retain((ff_tensor *)Qs)), R = FF_EX(&e, ff_tensor_retain((ff_tensor *)Rs));
    } else if (ff_qr(A, n->ip[0] != 0, &Q, &R) == FF_OK) {
        FF_EX(&e, Q), FF_EX(&e, R);
    } else {
        return ff_last_status();
    }
    ff_tensor *gQ = FF_EX(&e, unpack(g, Q, nb, sizes, 0));
    ff_tensor *gR = FF_EX(&e, unpack(g, R, nb, sizes, 1));
    if (m >= c) {
        gi[0] = ff_expr_result(&e, FF_EX(&e, qr_grad_tall(Q, R, gQ, gR, n->name)));
    } else { /* A = Q [X | Y], R = [U | V]: X = Q U is square; Y = Q V */
        ff_tensor *Y = FF_EX(&e, ff_narrow(A, nd - 1, m, c - m));
        ff_tensor *U = FF_EX(&e, ff_narrow(R, nd - 1, 0, m));
        ff_tensor *gU = FF_EX(&e, ff_narrow(gR, nd - 1, 0, m));
        ff_tensor *gV = FF_EX(&e, ff_narrow(gR, nd - 1, m, c - m));
        ff_tensor *gVt = FF_EX(&e, ff_mT(gV));
        ff_tensor *ygv = FF_EX(&e, ff_matmul(Y, gVt));
        ff_tensor *gQ2 = FF_EX(&e, ff_add(gQ, ygv));
        ff_tensor *gX = FF_EX(&e, qr_grad_tall(Q, U, gQ2, gU, n->name));
        ff_tensor *gY = FF_EX(&e, ff_matmul(Q, gV));
        ff_tensor *both[2] = {gX, gY};
        gi[0] = ff_expr_result(&e, FF_EX(&e, e.failed ? NULL : ff_concat(2, both, nd - 1)));
    }
    ff_expr_free(&e);
    return gi[0] ? FF_OK : ff_last_status();
}

ff_status ff_qr(const ff_tensor *a, bool complete, ff_tensor **q, ff_tensor **r)
{
    static const char fn[] = "ff_qr";
    if (!q || !r) return ff_error(FF_ERR_INVALID, "%s: output pointers are NULL", fn);
    *q = *r = NULL;
    if (check_matrix(a, "input", false, fn)) return ff_last_status();
    int nd = a->layout.ndim;
    int64_t m = a->layout.shape[nd - 2], n = a->layout.shape[nd - 1], k = m < n ? m : n, qc = complete ? m : k;
    int nds[2] = {nd, nd};
    int64_t shapes[2][FF_MAX_DIMS];
    memcpy(shapes[0], a->layout.shape, sizeof shapes[0]);
    memcpy(shapes[1], a->layout.shape, sizeof shapes[1]);
    shapes[0][nd - 1] = qc, shapes[1][nd - 2] = qc;
    ff_tensor *out[2];
    ff_status st = run_linalg(FF_LINALG_QR, &a, 1, 2, nds, shapes, out, fn);
    if (st) return st;
    if (!(ff_grad_enabled() && ff_requires_grad(a))) {
        *q = out[0], *r = out[1];
        return FF_OK;
    }
    int64_t sizes[2];
    ff_tensor *p = pack(a, 2, out, qr_tail, "linalg_qr", qr_backward, complete, sizes);
    *q = p ? unpack(p, out[0], nd - 2, sizes, 0) : NULL;
    *r = *q ? unpack(p, out[1], nd - 2, sizes, 1) : NULL;
    ff_tensor_release(p), ff_tensor_release(out[0]), ff_tensor_release(out[1]);
    if (!*r) {
        ff_tensor_release(*q), *q = NULL;
        return ff_last_status();
    }
    return FF_OK;
}

/* ---- svd ------------------------------------------------------------------------ */

static const int svd_tail[3] = {2, 1, 2};

/* diag_embed(s): s[..., None, :] * I */
static ff_tensor *diag_embed(const ff_tensor *s, const ff_tensor *eye)
{
    ff_tensor *r = ff_unsqueeze(s, -2), *d = r ? ff_mul(r, eye) : NULL;
    ff_tensor_release(r);
    return d;
}

/* The k x k middle of Townsend's formula: J S + S K + diag(gS), with
 * J = F o (U^T gU - (U^T gU)^T), K = F o (V^T gV - (V^T gV)^T), F_ij = 1 / (s_j^2 - s_i^2)
 * off the diagonal, 0 where two singular values are equal and on the diagonal. */
static ff_tensor *svd_middle(const ff_tensor *S, const ff_tensor *utgu, const ff_tensor *vtgv, const ff_tensor *gS,
                             const ff_tensor *I)
{
    ff_expr e = {0};
    ff_tensor *s2 = FF_EX(&e, ff_mul(S, S));
    ff_tensor *row = FF_EX(&e, ff_unsqueeze(s2, -2)); /* s_j^2 */
    ff_tensor *col = FF_EX(&e, ff_unsqueeze(s2, -1)); /* s_i^2 */
    ff_tensor *den = FF_EX(&e, ff_sub(row, col));
    ff_tensor *zero = FF_EX(&e, ff_binary_scalar(FF_BINARY_EQ, den, 0.0));
    ff_tensor *one = FF_EX(&e, ff_op_scalar_like(S, 1.0, S->dtype));
    ff_tensor *nil = FF_EX(&e, ff_op_scalar_like(S, 0.0, S->dtype));
    ff_tensor *inv = FF_EX(&e, ff_reciprocal(FF_EX(&e, ff_where(zero, one, den))));
    ff_tensor *F = FF_EX(&e, ff_where(zero, nil, inv));
    ff_tensor *J = FF_EX(&e, ff_mul(F, FF_EX(&e, ff_sub(utgu, FF_EX(&e, ff_mT(utgu))))));
    ff_tensor *K = FF_EX(&e, ff_mul(F, FF_EX(&e, ff_sub(vtgv, FF_EX(&e, ff_mT(vtgv))))));
    ff_tensor *JS = FF_EX(&e, ff_mul(J, FF_EX(&e, ff_unsqueeze(S, -2))));
    ff_tensor *SK = FF_EX(&e, ff_mul(FF_EX(&e, ff_unsqueeze(S, -1)), K));
    ff_tensor *core = FF_EX(&e, ff_add(JS, SK));
    ff_tensor *r = ff_expr_result(&e, FF_EX(&e, ff_add(core, FF_EX(&e, diag_embed(gS, I)))));
    ff_expr_free(&e);
    return r;
}

/* Townsend's gradient for the reduced SVD A = U diag(S) Vh (U m x k, Vh k x n):
 *   gA = U middle Vh + (I - U U^T) gU S^-1 Vh + U S^-1 gV^T (I - V V^T) */
static ff_tensor *svd_grad(const ff_tensor *U, const ff_tensor *S, const ff_tensor *Vh, const ff_tensor *gU,
                           const ff_tensor *gS, const ff_tensor *gVh)
{
    int nd = U->layout.ndim;
    int64_t k = S->layout.shape[nd - 2], shape[FF_MAX_DIMS];
    memcpy(shape, U->layout.shape, sizeof shape);
    shape[nd - 2] = shape[nd - 1] = k;
    ff_expr e = {0};
    ff_tensor *I = FF_EX(&e, eye_like(U, nd, shape));
    ff_tensor *Ut = FF_EX(&e, ff_mT(U));
    ff_tensor *V = FF_EX(&e, ff_mT(Vh));
    ff_tensor *gV = FF_EX(&e, ff_mT(gVh));
    ff_tensor *utgu = FF_EX(&e, ff_matmul(Ut, gU));
    ff_tensor *vtgv = FF_EX(&e, ff_matmul(Vh, gV));
    ff_tensor *middle = FF_EX(&e, svd_middle(S, utgu, vtgv, gS, I));
    ff_tensor *mid = FF_EX(&e, ff_matmul(FF_EX(&e, ff_matmul(U, middle)), Vh));
    /* 1 / s read as 0 at s = 0: there the projections below are 0 unless U's or V's null
     * part is used, whose gradient does not exist */
    ff_tensor *sz = FF_EX(&e, ff_binary_scalar(FF_BINARY_EQ, S, 0.0));
    ff_tensor *one = FF_EX(&e, ff_op_scalar_like(S, 1.0, S->dtype));
    ff_tensor *rs = FF_EX(&e, ff_reciprocal(FF_EX(&e, ff_where(sz, one, S))));
    ff_tensor *rs0 = FF_EX(&e, ff_where(sz, FF_EX(&e, ff_op_scalar_like(S, 0.0, S->dtype)), rs));
    ff_tensor *sinv = FF_EX(&e, ff_unsqueeze(rs0, -2));
    /* (I - U U^T) gU S^-1 Vh = (gU - U (U^T gU)) S^-1 Vh */
    ff_tensor *pu = FF_EX(&e, ff_sub(gU, FF_EX(&e, ff_matmul(U, utgu))));
    ff_tensor *tu = FF_EX(&e, ff_matmul(FF_EX(&e, ff_mul(pu, sinv)), Vh));
    /* U S^-1 gV^T (I - V V^T) = ((gV - V (V^T gV)) S^-1 U^T)^T */
    ff_tensor *pv = FF_EX(&e, ff_sub(gV, FF_EX(&e, ff_matmul(V, vtgv))));
    ff_tensor *tv = FF_EX(&e, ff_mT(FF_EX(&e, ff_matmul(FF_EX(&e, ff_mul(pv, sinv)), Ut))));
    ff_tensor *r = ff_expr_result(&e, FF_EX(&e, ff_add(FF_EX(&e, ff_add(mid, tu)), tv)));
    ff_expr_free(&e);
    return r;
}

/* inputs A; saved U, S, Vh */
static ff_status svd_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *A = n->inputs[0], *Us = ff_node_saved(n, 0), *Ss = Us ? ff_node_saved(n, 1) : NULL;
    const ff_tensor *Vhs = Ss ? ff_node_saved(n, 2) : NULL;
    if (!Vhs) return ff_last_status();
    int nd = A->layout.ndim, nb = nd - 2;
    int64_t k = Ss->layout.shape[nb];
    int64_t sizes[3] = {Us->layout.shape[nb] * Us->layout.shape[nb + 1], k,
                        Vhs->layout.shape[nb] * Vhs->layout.shape[nb + 1]};
    ff_expr e = {0};
    /* under create_graph U, S and Vh must carry their dependence on A (as qr's Q and R
     * above): recompute them with history */
    ff_tensor *U = NULL, *S = NULL, *Vh = NULL;
    if (!ff_grad_enabled()) {
        U = FF_EX(&e, ff_tensor_retain((ff_tensor *)Us)), S = FF_EX(&e, ff_tensor_retain((ff_tensor *)Ss));
        Vh = FF_EX(&e, ff_tensor_retain((ff_tensor *)Vhs));
    } else if (ff_svd(A, n->ip[0] != 0, &U, &S, &Vh) == FF_OK) {
        FF_EX(&e, U), FF_EX(&e, S), FF_EX(&e, Vh);
    } else {
        return ff_last_status();
    }
    ff_tensor *gU = FF_EX(&e, unpack(g, U, nb, sizes, 0));
    ff_tensor *gS = FF_EX(&e, unpack(g, S, nb, sizes, 1));
    ff_tensor *gVh = FF_EX(&e, unpack(g, Vh, nb, sizes, 2));
    /* full_matrices: only the first k columns of U / rows of Vh enter A (as PyTorch) */
    ff_tensor *Uk = FF_EX(&e, ff_narrow(U, nd - 1, 0, k)), *gUk = FF_EX(&e, ff_narrow(gU, nd - 1, 0, k));
    ff_tensor *Vk = FF_EX(&e, ff_narrow(Vh, nd - 2, 0, k)), *gVk = FF_EX(&e, ff_narrow(gVh, nd - 2, 0, k));
    gi[0] = ff_expr_result(&e, FF_EX(&e, e.failed ? NULL : svd_grad(Uk, S, Vk, gUk, gS, gVk)));
    ff_expr_free(&e);
    return gi[0] ? FF_OK : ff_last_status();
}

ff_status ff_svd(const ff_tensor *a, bool full_matrices, ff_tensor **u, ff_tensor **s, ff_tensor **vh)
{
    static const char fn[] = "ff_svd";
    if (!u || !s || !vh) return ff_error(FF_ERR_INVALID, "%s: output pointers are NULL", fn);
    *u = *s = *vh = NULL;
    if (check_matrix(a, "input", false, fn)) return ff_last_status();
    int nd = a->layout.ndim;
    int64_t m = a->layout.shape[nd - 2], n = a->layout.shape[nd - 1], k = m < n ? m : n;
    int nds[3] = {nd, nd - 1, nd};
    int64_t shapes[3][FF_MAX_DIMS];
    for (int i = 0; i < 3; i++) memcpy(shapes[i], a->layout.shape, sizeof shapes[i]);
    shapes[0][nd - 1] = full_matrices ? m : k;
    shapes[1][nd - 2] = k;
    shapes[2][nd - 2] = full_matrices ? n : k;
    ff_tensor *out[3];
    ff_status st = run_linalg(FF_LINALG_SVD, &a, 1, 3, nds, shapes, out, fn);
    if (st) return st;
    if (!(ff_grad_enabled() && ff_requires_grad(a))) {
        *u = out[0], *s = out[1], *vh = out[2];
        return FF_OK;
    }
    int64_t sizes[3];
    ff_tensor *p = pack(a, 3, out, svd_tail, "linalg_svd", svd_backward, full_matrices, sizes);
    ff_tensor **dst[3] = {u, s, vh};
    for (int i = 0; i < 3 && p; i++)
        if (!(*dst[i] = unpack(p, out[i], nd - 2, sizes, i))) break;
    ff_tensor_release(p);
    for (int i = 0; i < 3; i++) ff_tensor_release(out[i]);
    if (!*vh) {
        ff_tensor_release(*u), ff_tensor_release(*s);
        *u = *s = NULL;
        return ff_last_status();
    }
    return FF_OK;
}

/* ---- lstsq ---------------------------------------------------------------------- */

static ff_tensor *lstsq_batched(const ff_tensor *a, const ff_tensor *b, const char *fn);

/* inputs A, B; saved X. Full rank assumed (the normal equations' derivative):
 *   m >= n: Z = (A^T A)^-1 gX,  gB = A Z,  gA = (B - A X) Z^T - A Z X^T
 *   m <  n: W = (A A^T)^-1 B, Y = (A A^T)^-1 A gX,  gB = Y,  gA = W gX^T - Y X^T - W Y^T A */
static ff_status lstsq_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *A = n->inputs[0], *B = n->inputs[1], *xs = ff_node_saved(n, 0);
    if (!xs) return ff_last_status();
    int nd = A->layout.ndim;
    int64_t m = A->layout.shape[nd - 2], c = A->layout.shape[nd - 1];
    ff_expr e = {0};
    ff_tensor *X = FF_EX(&e, ff_grad_enabled() ? lstsq_batched(A, B, n->name) : ff_tensor_retain((ff_tensor *)xs));
    ff_tensor *At = FF_EX(&e, ff_mT(A));
    ff_tensor *Xt = FF_EX(&e, ff_mT(X));
    ff_tensor *gA, *gB;
    if (m >= c) {
        ff_tensor *Z = FF_EX(&e, solve_batched(FF_EX(&e, ff_matmul(At, A)), g, n->name));
        ff_tensor *Zt = FF_EX(&e, ff_mT(Z));
        gB = FF_EX(&e, ff_matmul(A, Z));
        ff_tensor *res = FF_EX(&e, ff_sub(B, FF_EX(&e, ff_matmul(A, X))));
        gA = FF_EX(&e, ff_sub(FF_EX(&e, ff_matmul(res, Zt)), FF_EX(&e, ff_matmul(gB, Xt))));
    } else {
        ff_tensor *D = FF_EX(&e, ff_matmul(A, At));
        ff_tensor *W = FF_EX(&e, solve_batched(D, B, n->name));
        gB = FF_EX(&e, solve_batched(D, FF_EX(&e, ff_matmul(A, g)), n->name));
        ff_tensor *t1 = FF_EX(&e, ff_matmul(W, FF_EX(&e, ff_mT(g))));
        ff_tensor *t2 = FF_EX(&e, ff_matmul(gB, Xt));
        ff_tensor *t3 = FF_EX(&e, ff_matmul(FF_EX(&e, ff_matmul(W, FF_EX(&e, ff_mT(gB)))), A));
        gA = FF_EX(&e, ff_sub(FF_EX(&e, ff_sub(t1, t2)), t3));
    }
    return two_grads(&e, gA, gB, gi);
}

static ff_tensor *lstsq_batched(const ff_tensor *a, const ff_tensor *b, const char *fn)
{
    return a_x_b(FF_LINALG_LSTSQ, a, b, "linalg_lstsq", lstsq_backward, fn);
}

ff_tensor *ff_lstsq(const ff_tensor *a, const ff_tensor *b)
{
    static const char fn[] = "ff_lstsq";
    if (check_matrix(a, "A", false, fn)) return NULL;
    ff_tensor *a2, *b2;
    bool vec;
    if (broadcast_pair(a, b, &a2, &b2, &vec, fn)) return NULL;
    ff_tensor *x = lstsq_batched(a2, b2, fn);
    ff_tensor_release(a2), ff_tensor_release(b2);
    return unvector(x, vec);
}
