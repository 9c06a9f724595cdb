/* SGD with momentum, dampening, Nesterov and L2 weight decay, step for step the
 * algorithm of torch.optim.SGD:
 *   d = g + wd * p
 *   buf = d (first step) | momentum * buf + (1 - dampening) * d
 *   d = nesterov ? d + momentum * buf : buf
 *   p -= lr * d
 * Temporaries are new tensors; only p and buf are written in place (a .grad may
 * alias other tensors, so it is never modified). */
#include <math.h>

#include "nn_impl.h"

/* ---- the fused step: sgd_param's composition below as one program (optim_fused.c) ---
 * Views: p, buf (with momentum; written), g, then the constants as 0-d tensors of p's
 * dtype in coefficients 1.. (their values never change). */
enum { SC_WD = 1, SC_MOM, SC_1MD }; /* coefficient slots; 0 is -lr */

typedef struct sgd_prog {
    ff_tensor *ts[7]; /* p, buf, g, weight_decay, momentum, 1 - dampening, -lr */
    int n_views, n_values, n_inst;
    ff_fused_inst in[9]; /* at most: decay 2, momentum 3, Nesterov 2, the update 2 */
} sgd_prog;

static int sgd_view(sgd_prog *q, ff_tensor *t)
{
    q->ts[q->n_views] = t;
    return q->n_views++;
}

static void sgd_inst(sgd_prog *q, ff_binary_op op, int dst, int a, int b)
{
    q->in[q->n_inst++] = (ff_fused_inst){FF_KIND_BINARY, op, dst, {a, b}};
}

/* Runs parameter i's step fused if it may; *ran tells whether it did. */
static ff_status sgd_fused(ff_optimizer *opt, int i, ff_tensor *g, bool *ran)
{
    const ff_sgd_opts *o = &opt->sgd;
    bool wd = o->weight_decay != 0.0, mom = o->momentum != 0.0;
    *ran = false;
    if (mom && !opt->state[0][i]) return FF_OK; /* the first step clones d into the buffer: composed */
    sgd_prog q = {.n_views = 0};
    int vp = sgd_view(&q, opt->params[i]), vb = mom ? sgd_view(&q, opt->state[0][i]) : -1, vg = sgd_view(&q, g);
    if (!ff_optim_fused_fits(q.ts, q.n_views)) return FF_OK;
    ff_status st = FF_OK;
    if (wd) st = ff_optimizer_set_coef(opt, SC_WD, i, o->weight_decay);
    if (mom && !st) st = ff_optimizer_set_coef(opt, SC_MOM, i, o->momentum);
    if (mom && !st) st = ff_optimizer_set_coef(opt, SC_1MD, i, 1.0 - o->dampening);
    if (st) return st;
    int vwd = wd ? sgd_view(&q, opt->coef[SC_WD][i]) : -1, vmom = mom ? sgd_view(&q, opt->coef[SC_MOM][i]) : -1;
    int v1md = mom ? sgd_view(&q, opt->coef[SC_1MD][i]) : -1, vlr = sgd_view(&q, opt->coef[0][i]);
    int t = q.n_views, d = vg;
    if (wd) { /* d = p * wd; d += g */
        sgd_inst(&q, FF_BINARY_MUL, t, vp, vwd);
        sgd_inst(&q, FF_BINARY_ADD, t, t, vg);
        d = t++;
    }
    if (mom) { /* buf = buf * momentum; buf += (1 - dampening) * d, ff_axpy_'s two roundings */
        sgd_inst(&q, FF_BINARY_MUL, vb, vb, vmom);
        sgd_inst(&q, FF_BINARY_MUL, t, d, v1md);
        sgd_inst(&q, FF_BINARY_ADD, vb, vb, t++);
        if (o->nesterov) { /* d = buf * momentum + d */
            sgd_inst(&q, FF_BINARY_MUL, t, vb, vmom);
            sgd_inst(&q, FF_BINARY_ADD, t, t, d);
            d = t++;
        } else {
            d = vb;
        }
    }
    sgd_inst(&q, FF_BINARY_MUL, t, d, vlr);
    sgd_inst(&q, FF_BINARY_ADD, vp, vp, t++);
    return ff_optim_fused_run(q.ts, q.n_views, t, q.in, q.n_inst, ran);
}

static ff_status sgd_param(ff_optimizer *opt, int i, ff_tensor *g)
{
    bool ran;
    ff_status fst = sgd_fused(opt, i, g, &ran);
    if (fst || ran) return fst;
    const ff_sgd_opts *o = &opt->sgd;
    ff_tensor *p = opt->params[i];
    ff_tensor *d = ff_tensor_retain(g), *tmp = NULL;
    ff_status st = FF_OK;
    if (o->weight_decay != 0.0) {
        if (!(tmp = ff_mul_scalar(p, o->weight_decay))) return ff_tensor_release(d), ff_nn_failed();
        if ((st = ff_add_(tmp, d))) goto done;
        ff_tensor_release(d);
        d = tmp;
        tmp = NULL;
    }
    if (o->momentum != 0.0) {
        ff_tensor **buf = &opt->state[0][i];
        if (!*buf && ff_graph_is_capturing()) {
            st = ff_set_error(FF_ERR_INVALID, "ff_optimizer_step: SGD creates its momentum buffers on the first step, "
                                              "which a replay would repeat; run one step before capturing");
            goto done;
        }
        if (!*buf) {
            if (!(*buf = ff_clone(d))) {
                st = ff_nn_failed();
                goto done;
            }
        } else if ((st = ff_mul_scalar_(*buf, o->momentum)) || (st = ff_axpy_(*buf, 1.0 - o->dampening, d))) {
            goto done;
        }
        if (o->nesterov) {
            if (!(tmp = ff_mul_scalar(*buf, o->momentum))) {
                st = ff_nn_failed();
                goto done;
            }
            if ((st = ff_add_(tmp, d))) goto done;
        } else {
            tmp = ff_tensor_retain(*buf);
        }
        ff_tensor_release(d);
        d = tmp;
        tmp = NULL;
    }
    st = ff_optimizer_axpy(p, opt->coef[0][i], d);
done:
    ff_tensor_release(tmp);
    ff_tensor_release(d);
    return st;
}

/* coefficient 0: -lr (read at each step, so schedules reach replayed steps) */
static ff_status sgd_prepare(ff_optimizer *opt, int i) { return ff_optimizer_set_coef(opt, 0, i, -opt->lr); }

ff_sgd_opts ff_sgd_defaults(double lr) { return (ff_sgd_opts){.lr = lr}; }

ff_optimizer *ff_sgd(ff_tensor *const *params, int n, const ff_sgd_opts *opts)
{
    static const char fn[] = "ff_sgd";
    if (!opts) return ff_set_error(FF_ERR_INVALID, "%s: opts is NULL (use ff_sgd_defaults(lr))", fn), NULL;
    const ff_sgd_opts *o = opts;
    if (!(o->lr >= 0.0) || isinf(o->lr)) return ff_set_error(FF_ERR_INVALID, "%s: lr must be finite and >= 0, got %g", fn, o->lr), NULL;
    if (!(o->momentum >= 0.0)) return ff_set_error(FF_ERR_INVALID, "%s: momentum must be >= 0, got %g", fn, o->momentum), NULL;
    if (!(o->weight_decay >= 0.0))
        return ff_set_error(FF_ERR_INVALID, "%s: weight_decay must be >= 0, got %g", fn, o->weight_decay), NULL;
    if (o->nesterov && (o->momentum <= 0.0 || o->dampening != 0.0))
        return ff_set_error(FF_ERR_INVALID, "%s: nesterov needs momentum > 0 and dampening == 0 (got %g, %g)", fn,
                        o->momentum, o->dampening), NULL;
    ff_optimizer *opt = ff_optimizer_alloc("SGD", params, n, fn);
    if (!opt) return NULL;
    opt->step_param = sgd_param;
    opt->prepare_param = sgd_prepare;
    opt->lr = o->lr;
    opt->sgd = *o;
    return opt;
}
