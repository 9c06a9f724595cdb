/* Optimizers against closed-form numbers: SGD (momentum, dampening, Nesterov, weight
 * decay), Adam (bias correction, sign-like first step, a 3-step scalar reference),
 * AdamW's decoupled decay, RMSprop (plain, momentum, centered, weight decay); LR
 * schedules; clip_grad_norm. */
#include "ff_test.h"

/* A leaf parameter from values. */
static ff_tensor *param(int n, const double *v)
{
    int64_t s[1] = {n};
    ff_tensor *p = ff_test_tensor(FF_F32, 1, s, v);
    ff_set_requires_grad(p, true);
    return p;
}

/* loss = sum(c * p^2) (c = 1) or sum(c * p) (linear): sets p.grad by backward. */
static void backward_quadratic(ff_tensor *p)
{
    ff_tensor *sq = ff_mul(p, p), *l = ff_sum(sq, 0, NULL, false);
    CHECK(ff_backward(l, NULL, NULL) == FF_OK);
    ff_tensor_release(sq), ff_tensor_release(l);
}

static void backward_linear(ff_tensor *p, int n, const double *c)
{
    int64_t s[1] = {n};
    ff_tensor *ct = ff_test_tensor(FF_F32, 1, s, c), *pc = ff_mul(p, ct), *l = ff_sum(pc, 0, NULL, false);
    CHECK(ff_backward(l, NULL, NULL) == FF_OK);
    ff_tensor_release(ct), ff_tensor_release(pc), ff_tensor_release(l);
}

/* Runs `steps` steps of opt on f(x) = x^2 from x0 = 1 and returns x. */
static double run_scalar(ff_optimizer *(*make)(ff_tensor *const *, int, const void *), const void *opts, int steps)
{
    ff_tensor *p = param(1, (double[]){1.0});
    ff_optimizer *opt = make(&p, 1, opts);
    CHECK(opt != NULL);
    for (int i = 0; i < steps && opt; i++) {
        CHECK(ff_optimizer_zero_grad(opt) == FF_OK);
        backward_quadratic(p);
        CHECK(ff_optimizer_step(opt) == FF_OK);
    }
    double x = NAN;
    CHECK(ff_tensor_item(p, &x) == FF_OK);
    CHECK(ff_optimizer_step_count(opt) == steps);
    ff_optimizer_release(opt);
    ff_tensor_release(p);
    return x;
}

static ff_optimizer *make_sgd(ff_tensor *const *p, int n, const void *o) { return ff_sgd(p, n, o); }
static ff_optimizer *make_adam(ff_tensor *const *p, int n, const void *o) { return ff_adam(p, n, o); }
static ff_optimizer *make_rmsprop(ff_tensor *const *p, int n, const void *o) { return ff_rmsprop(p, n, o); }

static void test_sgd_closed_form(void)
{
    ff_sgd_opts o = ff_sgd_defaults(0.1);
    CHECK_NEAR(run_scalar(make_sgd, &o, 1), 0.8, 1e-6); /* x - 0.1 * 2x */
    o.momentum = 0.9;
    /* g 2, buf 2, x .8; g 1.6, buf 3.4, x .46; g .92, buf 3.98, x .062 */
    CHECK_NEAR(run_scalar(make_sgd, &o, 3), 0.062, 1e-6);
    o.nesterov = true;
    /* g 2, buf 2, d 3.8, x .62; g 1.24, buf 3.04, d 3.976, x .2224 */
    CHECK_NEAR(run_scalar(make_sgd, &o, 2), 0.2224, 1e-6);
    o.nesterov = false;
    o.dampening = 0.5;
    /* first buf is the raw gradient; then buf = .9 * 2 + .5 * 1.6 = 2.6, x = .8 - .26 */
    CHECK_NEAR(run_scalar(make_sgd, &o, 2), 0.54, 1e-6);
    ff_sgd_opts wd = ff_sgd_defaults(0.1);
    wd.weight_decay = 0.1; /* g = 2x + .1x */
    CHECK_NEAR(run_scalar(make_sgd, &wd, 1), 0.79, 1e-6);
}

static void test_sgd_handles_broadcast_grad_and_skips_gradless(void)
{
    ff_tensor *p = param(4, (double[]){1, 2, 3, 4}), *q = param(2, (double[]){5, 6});
    ff_tensor *ps[2] = {p, q};
    ff_sgd_opts o = ff_sgd_defaults(1.0);
    ff_optimizer *opt = ff_sgd(ps, 2, &o);
    ff_tensor *l = ff_mean(p, 0, NULL, false); /* grad is an expanded 0.25: a stride-0 view */
    CHECK(ff_backward(l, NULL, NULL) == FF_OK);
    CHECK(ff_optimizer_step(opt) == FF_OK);
    CHECK_TENSOR(p, 1, ((int64_t[]){4}), ((double[]){0.75, 1.75, 2.75, 3.75}), 1e-6);
    CHECK_TENSOR(q, 1, ((int64_t[]){2}), ((double[]){5, 6}), 0); /* no grad: untouched */
    CHECK(ff_optimizer_zero_grad(opt) == FF_OK);
    ff_tensor *g = ff_grad(p);
    CHECK(g == NULL);
    CHECK(ff_optimizer_set_lr(opt, 0.5) == FF_OK && ff_optimizer_get_lr(opt) == 0.5);
    CHECK(!strcmp(ff_optimizer_name(opt), "SGD"));
    ff_tensor_release(l);
    ff_optimizer_release(opt);
    ff_tensor_release(p), ff_tensor_release(q);
}

static void test_optimizer_argument_errors(void)
{
    ff_tensor *p = param(1, (double[]){1});
    ff_sgd_opts o = ff_sgd_defaults(0.1);
    o.nesterov = true;
    CHECK_ERROR(ff_sgd(&p, 1, &o) == NULL, FF_ERR_INVALID, "nesterov needs momentum");
    o = ff_sgd_defaults(-1);
    CHECK_ERROR(ff_sgd(&p, 1, &o) == NULL, FF_ERR_INVALID, "lr must be");
    ff_adam_opts a = ff_adam_defaults(1e-3);
    a.beta2 = 1.0;
    CHECK_ERROR(ff_adam(&p, 1, &a) == NULL, FF_ERR_INVALID, "betas");
    a = ff_adam_defaults(1e-3);
    ff_tensor *two[2] = {p, p};
    CHECK_ERROR(ff_adamw(two, 2, &a) == NULL, FF_ERR_INVALID, "repeats parameter 0");
    ff_tensor *nl = ff_mul_scalar(p, 2);
    CHECK_ERROR(ff_adam(&nl, 1, &a) == NULL, FF_ERR_INVALID, "not a leaf");
    o = ff_sgd_defaults(0.1);
    CHECK_ERROR(ff_sgd(&p, 0, &o) == NULL, FF_ERR_INVALID, "at least one parameter");
    CHECK_ERROR(ff_optimizer_step(NULL) != FF_OK, FF_ERR_INVALID, "NULL");
    ff_tensor_release(nl), ff_tensor_release(p);
}

static void test_adam_first_steps_move_by_lr_sign(void)
{
    /* constant gradient c: m_hat = c and v_hat = c^2 at every step, so each step moves
     * by lr * c / (|c| + eps) = lr * sign(c) (to 1e-5 relative here) */
    const double c[3] = {3.0, -0.01, 1e-3};
    ff_tensor *p = param(3, (double[]){0.5, -1.0, 2.0});
    ff_adam_opts o = ff_adam_defaults(0.01);
    ff_optimizer *opt = ff_adam(&p, 1, &o);
    for (int s = 0; s < 2; s++) {
        ff_optimizer_zero_grad(opt);
        backward_linear(p, 3, c);
        CHECK(ff_optimizer_step(opt) == FF_OK);
    }
    CHECK_TENSOR(p, 1, ((int64_t[]){3}), ((double[]){0.48, -0.98, 1.98}), 1e-6);
    ff_optimizer_release(opt);
    ff_tensor_release(p);
    /* bias correction counts each parameter's own steps (torch's state['step']): q gets
     * its first gradient at the optimizer's second step and still moves by exactly lr
     * (a shared t = 2 would move it by 0.744 lr) */
    ff_tensor *a = param(1, (double[]){1.0}), *q = param(1, (double[]){1.0});
    ff_tensor *aq[2] = {a, q};
    opt = ff_adam(aq, 2, &o);
    backward_linear(a, 1, (double[]){2.0});
    CHECK(ff_optimizer_step(opt) == FF_OK);
    backward_linear(q, 1, (double[]){5.0});
    CHECK(ff_optimizer_step(opt) == FF_OK);
    CHECK_TENSOR(q, 1, ((int64_t[]){1}), ((double[]){0.99}), 1e-6);
    ff_optimizer_release(opt);
    ff_tensor_release(a), ff_tensor_release(q);
}

static void test_adam_matches_scalar_reference(void)
{
    /* f = x^2 from 1: the textbook recursion in doubles, three steps */
    double lr = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-8, x = 1, m = 0, v = 0;
    for (int t = 1; t <= 3; t++) {
        double g = 2 * x;
        m = b1 * m + (1 - b1) * g;
        v = b2 * v + (1 - b2) * g * g;
        x -= lr * (m / (1 - pow(b1, t))) / (sqrt(v / (1 - pow(b2, t))) + eps);
    }
    ff_adam_opts o = ff_adam_defaults(lr);
    CHECK_NEAR(run_scalar(make_adam, &o, 3), x, 1e-6);
    CHECK_NEAR(x, 0.701586, 1e-5); /* torch.optim.Adam gives 0.7015863 */
}

static void test_adamw_decouples_weight_decay(void)
{
    /* zero gradient: AdamW only decays, p * (1 - lr * wd) = 2 * 0.99; Adam's L2 term
     * becomes the gradient 0.1 * 2 and the step moves by lr * sign = 0.1 */
    ff_tensor *pw = param(1, (double[]){2.0}), *pa = param(1, (double[]){2.0});
    ff_adam_opts o = ff_adam_defaults(0.1);
    o.weight_decay = 0.1;
    ff_optimizer *ow = ff_adamw(&pw, 1, &o), *oa = ff_adam(&pa, 1, &o);
    backward_linear(pw, 1, (double[]){0.0});
    backward_linear(pa, 1, (double[]){0.0});
    CHECK(ff_optimizer_step(ow) == FF_OK && ff_optimizer_step(oa) == FF_OK);
    CHECK_TENSOR(pw, 1, ((int64_t[]){1}), ((double[]){1.98}), 1e-6);
    CHECK_TENSOR(pa, 1, ((int64_t[]){1}), ((double[]){1.9}), 1e-6);
    CHECK(!strcmp(ff_optimizer_name(ow), "AdamW"));
    ff_optimizer_release(ow), ff_optimizer_release(oa);
    ff_tensor_release(pw), ff_tensor_release(pa);
}

/* torch.optim.RMSprop's recursion in doubles for `steps` steps from x0 = 1 on
 * f = x^2 (quadratic) or f = x (linear), the gradient plus wd * x. */
static double rmsprop_ref(const ff_rmsprop_opts *o, bool quadratic, int steps)
{
    double x = 1, v = 0, ga = 0, buf = 0;
    for (int t = 0; t < steps; t++) {
        double g = (quadratic ? 2 * x : 1.0) + o->weight_decay * x, avg;
        v = o->alpha * v + (1 - o->alpha) * g * g;
        if (o->centered) {
            ga = o->alpha * ga + (1 - o->alpha) * g;
            avg = sqrt(v - ga * ga) + o->eps;
        } else {
            avg = sqrt(v) + o->eps;
        }
        if (o->momentum > 0) {
            buf = o->momentum * buf + g / avg;
            x -= o->lr * buf;
        } else {
            x -= o->lr * g / avg;
        }
    }
    return x;
}

static void test_rmsprop_closed_form(void)
{
    /* f = x^2 from 1, lr .01, alpha .99: step 1 has v = .01 * 4, avg = .2, so x moves by
     * lr * 2 / .2 = .1 to .9; step 2: g 1.8, v = .0396 + .0324 = .072, x = .9 - .018 /
     * sqrt(.072) = .832918; step 3: .779982 */
    ff_rmsprop_opts o = ff_rmsprop_defaults(0.01);
    CHECK(o.alpha == 0.99 && o.eps == 1e-8 && o.momentum == 0 && o.weight_decay == 0 && !o.centered);
    CHECK_NEAR(run_scalar(make_rmsprop, &o, 1), 0.9, 1e-6);
    CHECK_NEAR(run_scalar(make_rmsprop, &o, 2), 0.832918, 1e-6);
    CHECK_NEAR(run_scalar(make_rmsprop, &o, 3), 0.779982, 1e-6);
    CHECK_NEAR(run_scalar(make_rmsprop, &o, 3), rmsprop_ref(&o, true, 3), 1e-6);
    /* momentum .9: buf 10, x .9; buf = 9 + 1.8 / sqrt(.072) = 15.7082, x .742918; .552915 */
    o.momentum = 0.9;
    CHECK_NEAR(run_scalar(make_rmsprop, &o, 2), 0.742918, 1e-6);
    CHECK_NEAR(run_scalar(make_rmsprop, &o, 3), 0.552915, 1e-6);
    CHECK_NEAR(run_scalar(make_rmsprop, &o, 3), rmsprop_ref(&o, true, 3), 1e-6);
    /* centered: ga = .02, avg = sqrt(.04 - .0004) = .198997, x = 1 - .02 / .198997 */
    o = ff_rmsprop_defaults(0.01);
    o.centered = true;
    CHECK_NEAR(run_scalar(make_rmsprop, &o, 1), 0.899496, 1e-6);
    CHECK_NEAR(run_scalar(make_rmsprop, &o, 3), 0.778068, 1e-6);
    CHECK_NEAR(run_scalar(make_rmsprop, &o, 3), rmsprop_ref(&o, true, 3), 1e-6);
    o.momentum = 0.5; /* centered and momentum together */
    CHECK_NEAR(run_scalar(make_rmsprop, &o, 3), 0.671221, 1e-6);
    CHECK_NEAR(run_scalar(make_rmsprop, &o, 3), rmsprop_ref(&o, true, 3), 1e-6);
}

static void test_rmsprop_weight_decay(void)
{
    /* f = x from 1 with wd .5 (on x^2 an L2 term only rescales the gradient, which
     * RMSprop normalizes away): g 1.5, v .0225, x .9; g 1.45, v = .022275 + .021025 =
     * .0433, x = .9 - .0145 / sqrt(.0433) = .830317; .773889 */
    ff_rmsprop_opts o = ff_rmsprop_defaults(0.01);
    o.weight_decay = 0.5;
    const double want[3] = {0.9, 0.830317, 0.773889};
    ff_tensor *p = param(1, (double[]){1.0});
    ff_optimizer *opt = ff_rmsprop(&p, 1, &o);
    CHECK(opt != NULL);
    for (int t = 0; t < 3 && opt; t++) {
        CHECK(ff_optimizer_zero_grad(opt) == FF_OK);
        backward_linear(p, 1, (double[]){1.0});
        CHECK(ff_optimizer_step(opt) == FF_OK);
        double x = NAN;
        CHECK(ff_tensor_item(p, &x) == FF_OK);
        CHECK_NEAR(x, want[t], 1e-6);
        CHECK_NEAR(x, rmsprop_ref(&o, false, t + 1), 1e-6);
    }
    CHECK(opt && !strcmp(ff_optimizer_name(opt), "RMSprop"));
    ff_optimizer_release(opt);
    ff_tensor_release(p);
}

static void test_rmsprop_vector_and_errors(void)
{
    /* elementwise on a vector; q has no grad and is skipped. First step moves each
     * element by lr * g / (sqrt(.01) |g|) = 10 lr * sign(g) */
    ff_tensor *p = param(3, (double[]){0.5, -1.0, 2.0}), *q = param(1, (double[]){7.0});
    ff_tensor *ps[2] = {p, q};
    ff_rmsprop_opts o = ff_rmsprop_defaults(0.001);
    ff_optimizer *opt = ff_rmsprop(ps, 2, &o);
    CHECK(opt != NULL);
    backward_linear(p, 3, (double[]){3.0, -0.5, 1e-2});
    CHECK(ff_optimizer_step(opt) == FF_OK);
    CHECK_TENSOR(p, 1, ((int64_t[]){3}), ((double[]){0.49, -0.99, 1.99}), 1e-6);
    CHECK_TENSOR(q, 1, ((int64_t[]){1}), ((double[]){7.0}), 0);
    ff_optimizer_release(opt);
    o.alpha = 1.5;
    CHECK_ERROR(ff_rmsprop(&p, 1, &o) == NULL, FF_ERR_INVALID, "alpha");
    o = ff_rmsprop_defaults(0.01);
    o.momentum = -0.1;
    CHECK_ERROR(ff_rmsprop(&p, 1, &o) == NULL, FF_ERR_INVALID, "momentum");
    o = ff_rmsprop_defaults(0.01);
    o.eps = -1;
    CHECK_ERROR(ff_rmsprop(&p, 1, &o) == NULL, FF_ERR_INVALID, "eps");
    o = ff_rmsprop_defaults(NAN);
    CHECK_ERROR(ff_rmsprop(&p, 1, &o) == NULL, FF_ERR_INVALID, "lr must be");
    CHECK_ERROR(ff_rmsprop(&p, 1, NULL) == NULL, FF_ERR_INVALID, "opts is NULL");
    ff_tensor_release(p), ff_tensor_release(q);
}

static void test_lr_schedules(void)
{
    CHECK_NEAR(ff_lr_step(1.0, 0, 2, 0.5), 1.0, 0);
    CHECK_NEAR(ff_lr_step(1.0, 5, 2, 0.5), 0.25, 1e-15);
    CHECK_NEAR(ff_lr_cosine(1.0, 0, 10, 0.0), 1.0, 1e-15);
    CHECK_NEAR(ff_lr_cosine(1.0, 5, 10, 0.0), 0.5, 1e-15);
    CHECK_NEAR(ff_lr_cosine(1.0, 10, 10, 0.1), 0.1, 1e-15);
    CHECK_NEAR(ff_lr_cosine(1.0, 25, 10, 0.1), 0.1, 1e-15); /* held after t_max */
    CHECK_NEAR(ff_lr_cosine(2.0, 2, 4, 0.0), 1.0, 1e-15);
}

static void test_clip_grad_norm(void)
{
    ff_tensor *a = param(2, (double[]){0, 0}), *b = param(1, (double[]){0});
    backward_linear(a, 2, (double[]){3, 4});
    backward_linear(b, 1, (double[]){12});
    ff_tensor *ps[2] = {a, b};
    double norm = 0;
    CHECK(ff_clip_grad_norm(ps, 2, 100.0, &norm) == FF_OK);
    CHECK_NEAR(norm, 13.0, 1e-9);
    ff_tensor *ga = ff_grad(a), *gb = ff_grad(b);
    CHECK_TENSOR(ga, 1, ((int64_t[]){2}), ((double[]){3, 4}), 0); /* under the limit: unchanged */
    ff_tensor_release(ga), ff_tensor_release(gb);
    CHECK(ff_clip_grad_norm(ps, 2, 6.5, &norm) == FF_OK);
    CHECK_NEAR(norm, 13.0, 1e-9);
    ga = ff_grad(a), gb = ff_grad(b);
    CHECK_TENSOR(ga, 1, ((int64_t[]){2}), ((double[]){1.5, 2}), 1e-6);
    CHECK_TENSOR(gb, 1, ((int64_t[]){1}), ((double[]){6}), 1e-6);
    CHECK(ff_clip_grad_norm(ps, 2, 1e9, &norm) == FF_OK);
    CHECK_NEAR(norm, 6.5, 1e-5); /* the clipped norm is exactly max_norm */
    ff_tensor_release(ga), ff_tensor_release(gb), ff_tensor_release(a), ff_tensor_release(b);
    /* gradients that alias each other (add passes one tensor to both inputs) are
     * scaled once each, not twice */
    ff_tensor *x = param(2, (double[]){1, 1}), *y = param(2, (double[]){1, 1});
    ff_tensor *s = ff_add(x, y), *l = ff_sum(s, 0, NULL, false);
    CHECK(ff_backward(l, NULL, NULL) == FF_OK);
    ff_tensor *xy[2] = {x, y};
    CHECK(ff_clip_grad_norm(xy, 2, 1.0, &norm) == FF_OK);
    CHECK_NEAR(norm, 2.0, 1e-9);
    ff_tensor *gx = ff_grad(x), *gy = ff_grad(y);
    CHECK_TENSOR(gx, 1, ((int64_t[]){2}), ((double[]){0.5, 0.5}), 1e-7);
    CHECK_TENSOR(gy, 1, ((int64_t[]){2}), ((double[]){0.5, 0.5}), 1e-7);
    CHECK_ERROR(ff_clip_grad_norm(xy, 2, -1, NULL) != FF_OK, FF_ERR_INVALID, "max_norm");
    ff_tensor *tmp[] = {x, y, s, l, gx, gy};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) ff_tensor_release(tmp[i]);
}

static void test_module_training_reduces_loss(void)
{
    /* end to end: Linear + MSE + SGD momentum fits y = 3x - 1 exactly */
    int64_t xs[2] = {32, 1};
    ff_tensor *x = ff_linspace(-1, 1, 32, FF_F32), *xc = ff_reshape(x, 2, xs);
    ff_tensor *t3 = ff_mul_scalar(xc, 3), *y = ff_sub_scalar(t3, 1);
    ff_module *lin = ff_linear(1, 1, true, 4), *mse = ff_mse_loss_module();
    ff_tensor *ps[2];
    CHECK(ff_module_parameters(lin, ps, 2) == 2);
    ff_sgd_opts o = ff_sgd_defaults(0.1);
    o.momentum = 0.5;
    ff_optimizer *opt = ff_sgd(ps, 2, &o);
    double first = 0, last = 0;
    for (int i = 0; i < 200; i++) {
        ff_tensor *pred = ff_module_forward(lin, xc), *l = ff_loss_forward(mse, pred, y);
        ff_module_zero_grad(lin);
        CHECK(l && ff_backward(l, NULL, NULL) == FF_OK && ff_optimizer_step(opt) == FF_OK);
        ff_tensor_item(l, i == 0 ? &first : &last);
        ff_tensor_release(pred), ff_tensor_release(l);
    }
    CHECK(first > 0.1 && last < 1e-6);
    CHECK_TENSOR(ps[0], 2, ((int64_t[]){1, 1}), ((double[]){3}), 1e-3);
    CHECK_TENSOR(ps[1], 1, ((int64_t[]){1}), ((double[]){-1}), 1e-3);
    ff_optimizer_release(opt);
    ff_module_release(lin), ff_module_release(mse);
    ff_tensor_release(x), ff_tensor_release(xc), ff_tensor_release(t3), ff_tensor_release(y);
}

FF_TEST_MAIN("nn_optim", TEST(test_sgd_closed_form), TEST(test_sgd_handles_broadcast_grad_and_skips_gradless),
             TEST(test_optimizer_argument_errors), TEST(test_adam_first_steps_move_by_lr_sign),
             TEST(test_adam_matches_scalar_reference), TEST(test_adamw_decouples_weight_decay), TEST(test_rmsprop_closed_form),
             TEST(test_rmsprop_weight_decay), TEST(test_rmsprop_vector_and_errors), TEST(test_lr_schedules),
             TEST(test_clip_grad_norm), TEST(test_module_training_reduces_loss))
