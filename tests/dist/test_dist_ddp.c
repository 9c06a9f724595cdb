/* Run under mpirun (-np 2 and -np 4, ctest label "dist"). Proves:
 *   - data parallel: size ranks with batch b each end with the same parameters (1e-6
 *     relative) as one process with batch size * b, after 20 AdamW steps; the ranks start
 *     from different random weights, so the initial broadcast is needed too;
 *   - gradient accumulation: 3 backwards then a sync give the gradients of one process on
 *     all ranks' rows, with no_sync and without;
 *   - the collectives' values (allreduce sum/mean/max, broadcast, allgather) on cpu and
 *     cpu_blas tensors, strided ones included;
 *   - a shape disagreement is an error on every rank, and the group stays usable;
 *   - the sharded sampler: the ranks' shares cover the epoch's order exactly once.
 * Every rank prints its failures; the exit code is 1 on every rank if any rank failed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist_check.h"
#include "ff/ff.h"

enum { IN = 8, HID = 16, OUT = 4, B = 6, STEPS = 20 };

static ff_tensor *mlp_forward(ff_module *m, const ff_tensor *x, void *user)
{
    (void)user;
    ff_tensor *w1 = ff_module_get_parameter(m, "w1"), *b1 = ff_module_get_parameter(m, "b1");
    ff_tensor *w2 = ff_module_get_parameter(m, "w2"), *b2 = ff_module_get_parameter(m, "b2");
    ff_tensor *h = ff_matmul(x, w1), *hb = ff_add(h, b1), *a = ff_tanh(hb), *o = ff_matmul(a, w2), *y = ff_add(o, b2);
    ff_tensor_release(h), ff_tensor_release(hb), ff_tensor_release(a), ff_tensor_release(o);
    ff_tensor_release(w1), ff_tensor_release(b1), ff_tensor_release(w2), ff_tensor_release(b2);
    return y;
}

/* An f64 MLP (so the comparison measures the method, not f32 rounding) from seed. */
static ff_module *mlp(uint64_t seed)
{
    ff_module *m = ff_module_new("DistMLP", mlp_forward, NULL, NULL);
    const char *names[4] = {"w1", "b1", "w2", "b2"};
    int64_t shapes[4][2] = {{IN, HID}, {HID, 0}, {HID, OUT}, {OUT, 0}};
    ff_manual_seed(seed);
    for (int i = 0; i < 4 && m; i++) {
        ff_tensor *p = ff_randn(shapes[i][1] ? 2 : 1, shapes[i], FF_F64), *q = p ? ff_mul_scalar(p, 0.4) : NULL;
        CHECK(q && ff_module_register_parameter(m, names[i], q) == FF_OK);
        ff_tensor_release(p), ff_tensor_release(q);
    }
    return m;
}

/* STEPS AdamW steps on rows [step * size * B + row0, + rows) of (x, y). */
static void train(ff_module *m, ff_dist_ddp *ddp, const ff_tensor *x, const ff_tensor *y, int64_t row0, int64_t rows)
{
    ff_tensor *ps[4];
    int np = ff_module_parameters(m, ps, 4);
    ff_adam_opts o = ff_adam_defaults(0.01);
    o.weight_decay = 0.01;
    ff_optimizer *opt = ff_adamw(ps, np, &o);
    for (int s = 0; s < STEPS && opt; s++) {
        int64_t start = (int64_t)s * ff_dist_size() * B + row0;
        ff_tensor *xb = ff_narrow(x, 0, start, rows), *yb = ff_narrow(y, 0, start, rows);
        ff_tensor *pred = ff_module_forward(m, xb), *loss = pred ? ff_mse_loss(pred, yb) : NULL;
        CHECK(loss && ff_optimizer_zero_grad(opt) == FF_OK && ff_backward(loss, NULL, NULL) == FF_OK);
        if (ddp) {
            CHECK(ff_dist_ddp_sync_grads(ddp) == FF_OK);
            /* every parameter has a gradient: each bucket started during backward */
            if (ff_dist_size() > 1) CHECK(ff_dist_ddp_buckets_started_in_backward(ddp) == ff_dist_ddp_num_buckets(ddp));
        }
        CHECK(ff_optimizer_step(opt) == FF_OK);
        ff_tensor_release(xb), ff_tensor_release(yb), ff_tensor_release(pred), ff_tensor_release(loss);
    }
    ff_optimizer_release(opt);
}

static void test_data_parallel_equals_one_big_batch(void)
{
    int size = ff_dist_size(), rank = ff_dist_rank();
    int64_t n = (int64_t)STEPS * size * B;
    ff_manual_seed(1234); /* the same data on every rank */
    ff_tensor *x = ff_randn(2, (int64_t[]){n, IN}, FF_F64), *y = ff_randn(2, (int64_t[]){n, OUT}, FF_F64);
    ff_module *dp = mlp(100 + (uint64_t)rank), *one = mlp(100); /* rank 0's init is seed 100 */
    ff_dist_ddp *ddp = ff_dist_ddp_new(dp, 1100); /* small buckets: w1 alone, then the rest */
    CHECK(ddp && ff_dist_ddp_num_buckets(ddp) >= 2);
    train(dp, ddp, x, y, (int64_t)rank * B, B);
    train(one, NULL, x, y, 0, (int64_t)size * B);
    double worst = 0;
    const char *names[4] = {"w1", "b1", "w2", "b2"};
    for (int i = 0; i < 4; i++) {
        ff_tensor *a = ff_module_get_parameter(dp, names[i]), *b = ff_module_get_parameter(one, names[i]);
        int64_t k = ff_tensor_numel(a);
        double *va = malloc(sizeof(double) * (size_t)k), *vb = malloc(sizeof(double) * (size_t)k);
        CHECK(ff_tensor_to_host(a, va, sizeof(double) * (size_t)k) == FF_OK);
        CHECK(ff_tensor_to_host(b, vb, sizeof(double) * (size_t)k) == FF_OK);
        for (int64_t j = 0; j < k; j++) {
            double rel = fabs(va[j] - vb[j]) / fmax(fabs(vb[j]), 1e-3);
            worst = rel > worst ? rel : worst;
        }
        free(va), free(vb);
        ff_tensor_release(a), ff_tensor_release(b);
    }
    if (rank == 0) printf("data parallel on %d ranks vs one process: worst relative difference %.3g\n", size, worst);
    CHECK(worst <= 1e-6);
    ff_dist_ddp_free(ddp);
    ff_module_release(dp), ff_module_release(one);
    ff_tensor_release(x), ff_tensor_release(y);
}

/* The MLP without b2 (so b2 gets no gradient: its bucket is only partly finished). */
static ff_tensor *partial_forward(ff_module *m, const ff_tensor *x)
{
    ff_tensor *w1 = ff_module_get_parameter(m, "w1"), *b1 = ff_module_get_parameter(m, "b1");
    ff_tensor *w2 = ff_module_get_parameter(m, "w2");
    ff_tensor *h = ff_matmul(x, w1), *hb = ff_add(h, b1), *a = ff_tanh(hb), *o = ff_matmul(a, w2);
    ff_tensor_release(h), ff_tensor_release(hb), ff_tensor_release(a);
    ff_tensor_release(w1), ff_tensor_release(b1), ff_tensor_release(w2);
    return o;
}

enum { MICRO = 3 };
enum accum_form { ACCUM_PLAIN, ACCUM_NO_SYNC_BUT_LAST, ACCUM_NO_SYNC_ALL };

/* MICRO backwards into the same .grad, micro-batch k on rows [k * size * B + row0,
 * + rows); micro-batch 1 leaves b2 out when partial. With ddp: in the given form, then
 * the sync. */
static void accumulate(ff_module *m, ff_dist_ddp *ddp, enum accum_form form, bool partial, const ff_tensor *x,
                       const ff_tensor *y, int64_t row0, int64_t rows)
{
    ff_tensor *ps[4];
    int np = ff_module_parameters(m, ps, 4);
    for (int i = 0; i < np; i++) CHECK(ff_zero_grad(ps[i]) == FF_OK);
    for (int k = 0; k < MICRO; k++) {
        bool hold = form == ACCUM_NO_SYNC_ALL || (form == ACCUM_NO_SYNC_BUT_LAST && k < MICRO - 1);
        if (ddp) ff_dist_ddp_no_sync(ddp, hold);
        int64_t start = (int64_t)k * ff_dist_size() * B + row0;
        ff_tensor *xb = ff_narrow(x, 0, start, rows), *yb = ff_narrow(y, 0, start, rows);
        ff_tensor *pred = partial && k == 1 ? partial_forward(m, xb) : ff_module_forward(m, xb);
        ff_tensor *loss = pred ? ff_mse_loss(pred, yb) : NULL;
        CHECK(loss && ff_backward(loss, NULL, NULL) == FF_OK);
        ff_tensor_release(xb), ff_tensor_release(yb), ff_tensor_release(pred), ff_tensor_release(loss);
    }
    if (!ddp) return;
    CHECK(ff_dist_ddp_no_sync(ddp, false) == (form == ACCUM_NO_SYNC_ALL));
    CHECK(ff_dist_ddp_sync_grads(ddp) == FF_OK);
    /* started in the last backward, unless no_sync held them; a bucket left partly
     * finished by one backward may be redone by the sync instead */
    int want = form == ACCUM_NO_SYNC_ALL ? 0 : ff_dist_ddp_num_buckets(ddp);
    int got = ff_dist_ddp_buckets_started_in_backward(ddp);
    CHECK(ff_dist_size() < 2 || (partial ? got <= want : got == want));
}

/* Largest relative difference between the two modules' parameters' .grad. */
static double grad_difference(ff_module *a, ff_module *b)
{
    ff_tensor *pa[4], *pb[4];
    int np = ff_module_parameters(a, pa, 4);
    CHECK(ff_module_parameters(b, pb, 4) == np);
    double worst = 0;
    for (int i = 0; i < np; i++) {
        ff_tensor *ga = ff_grad(pa[i]), *gb = ff_grad(pb[i]);
        int64_t k = ff_tensor_numel(pa[i]);
        double *va = calloc((size_t)k, sizeof(double)), *vb = calloc((size_t)k, sizeof(double));
        CHECK(ga && gb && ff_tensor_to_host(ga, va, sizeof(double) * (size_t)k) == FF_OK &&
              ff_tensor_to_host(gb, vb, sizeof(double) * (size_t)k) == FF_OK);
        for (int64_t j = 0; j < k; j++) {
            double rel = fabs(va[j] - vb[j]) / fmax(fabs(vb[j]), 1e-6);
            worst = rel > worst ? rel : worst;
        }
        free(va), free(vb);
        ff_tensor_release(ga), ff_tensor_release(gb);
    }
    return worst;
}

/* Gradient accumulation (issue 30): MICRO backwards then one sync give every rank the
 * gradient one process gets from the same micro-batches over all ranks' rows (the mean
 * over the ranks of each rank's accumulated .grad), with no_sync or without, and with a
 * micro-batch that leaves a parameter of a shared bucket without a gradient. */
static void test_accumulation_equals_one_process(void)
{
    int size = ff_dist_size(), rank = ff_dist_rank();
    int64_t n = (int64_t)MICRO * size * B;
    ff_manual_seed(99);
    ff_tensor *x = ff_randn(2, (int64_t[]){n, IN}, FF_F64), *y = ff_randn(2, (int64_t[]){n, OUT}, FF_F64);
    ff_module *dp = mlp(200 + (uint64_t)rank), *one = mlp(200);
    ff_dist_ddp *ddp = ff_dist_ddp_new(dp, 1100);
    CHECK(ddp && ff_dist_ddp_num_buckets(ddp) == 2);
    const char *forms[] = {"plain", "no_sync but the last", "no_sync throughout"};
    for (int form = ACCUM_PLAIN; ddp && form <= ACCUM_NO_SYNC_ALL; form++)
        for (int partial = 0; partial < 2; partial++) {
            accumulate(dp, ddp, (enum accum_form)form, partial, x, y, (int64_t)rank * B, B);
            accumulate(one, NULL, ACCUM_PLAIN, partial, x, y, 0, (int64_t)size * B);
            double worst = grad_difference(dp, one);
            if (rank == 0)
                printf("accumulation of %d micro-batches on %d ranks (%s%s) vs one process: worst relative "
                       "difference %.3g\n", MICRO, size, forms[form], partial ? ", b2 unused once" : "", worst);
            CHECK(worst <= 1e-9);
        }
    ff_dist_ddp_free(ddp);
    ff_module_release(dp), ff_module_release(one);
    ff_tensor_release(x), ff_tensor_release(y);
}

static double value_at(const ff_tensor *t, int64_t i)
{
    ff_tensor *f = ff_flatten(t, 0, -1);
    double v = NAN;
    ff_tensor_get(f, &i, &v);
    ff_tensor_release(f);
    return v;
}

static void test_collectives(const char *backend)
{
    int size = ff_dist_size(), rank = ff_dist_rank();
    ff_backend *be = ff_backend_load(backend);
    if (!be) return; /* cpu_blas not built */
    /* allreduce of a transposed (strided) view: staged through the host */
    double base[6] = {1, 2, 3, 4, 5, 6};
    for (int i = 0; i < 6; i++) base[i] += rank;
    ff_tensor *m = ff_from_data_on(be, base, 2, (int64_t[]){2, 3}, FF_F64), *mt = ff_mT(m);
    CHECK(ff_dist_allreduce(mt, FF_DIST_SUM) == FF_OK);
    double rsum = size * (size - 1) / 2.0;
    CHECK(value_at(m, 4) == 5 * size + rsum);
    CHECK(ff_dist_allreduce(m, FF_DIST_MEAN) == FF_OK);
    CHECK(fabs(value_at(m, 0) - (1 * size + rsum)) < 1e-12);
    int32_t iv[3] = {rank, -rank, 7};
    ff_tensor *ti = ff_from_data_on(be, iv, 1, (int64_t[]){3}, FF_I32);
    CHECK(ff_dist_allreduce(ti, FF_DIST_MAX) == FF_OK);
    CHECK(value_at(ti, 0) == size - 1 && value_at(ti, 1) == 0 && value_at(ti, 2) == 7);
    CHECK(ff_dist_allreduce(ti, FF_DIST_MEAN) == FF_ERR_INVALID); /* MEAN of ints */
    /* broadcast from the last rank; allgather of each rank's [rank, rank + 0.5] */
    ff_tensor *bc = ff_full_on(be, 1, (int64_t[]){4}, FF_F32, rank * 10.0);
    CHECK(ff_dist_broadcast(bc, size - 1) == FF_OK);
    CHECK(value_at(bc, 3) == (size - 1) * 10.0);
    float gv[2] = {(float)rank, rank + 0.5f};
    ff_tensor *g = ff_from_data_on(be, gv, 1, (int64_t[]){2}, FF_F32), *all = ff_dist_allgather(g);
    CHECK(all && ff_tensor_ndim(all) == 2 && ff_tensor_dim(all, 0) == size);
    for (int r = 0; all && r < size; r++) CHECK(value_at(all, 2 * r + 1) == r + 0.5);
    ff_tensor_release(m), ff_tensor_release(mt), ff_tensor_release(ti), ff_tensor_release(bc);
    ff_tensor_release(g), ff_tensor_release(all);
}

static void test_disagreement_is_an_error_everywhere(void)
{
    if (ff_dist_size() < 2) return;
    int64_t n = ff_dist_rank() == 1 ? 4 : 3;
    ff_tensor *t = ff_ones(1, &n, FF_F32);
    ff_status st = ff_dist_allreduce(t, FF_DIST_SUM);
    CHECK(st == FF_ERR_INVALID && strstr(ff_last_error(), "disagree") && strstr(ff_last_error(), "[4]"));
    ff_tensor *d = ff_ones(1, (int64_t[]){3}, ff_dist_rank() == 1 ? FF_F64 : FF_F32);
    CHECK(ff_dist_broadcast(d, 0) == FF_ERR_INVALID);
    CHECK(ff_dist_barrier() == FF_OK); /* still usable */
    ff_tensor_release(t), ff_tensor_release(d);
}

static void test_sampler_covers_the_epoch_once(void)
{
    int size = ff_dist_size();
    for (int drop = 0; drop < 2; drop++) {
        int64_t n = 23, per = ff_dist_shard_size(n, drop);
        CHECK(per == (drop ? n / size : (n + size - 1) / size));
        int64_t *mine = malloc(sizeof(int64_t) * (size_t)per + 1);
        CHECK(ff_dist_shard_indices(n, 42, 3, true, drop, mine, per) == FF_OK);
        ff_tensor *t = ff_from_data(mine, 1, &per, FF_I64), *all = ff_dist_allgather(t);
        int64_t total = per * size, *seen = calloc((size_t)n, sizeof(int64_t));
        for (int64_t i = 0; all && i < total; i++) seen[(int64_t)value_at(all, i)]++;
        int64_t once = 0;
        for (int64_t i = 0; i < n; i++) once += seen[i] >= 1;
        CHECK(once == (drop ? total : n)); /* drop_last: distinct; else every sample, padding repeats */
        int64_t other[64];
        CHECK(ff_dist_shard_indices(n, 42, 4, true, drop, other, 64) == FF_OK);
        CHECK(per < 3 || memcmp(mine, other, sizeof(int64_t) * (size_t)per) != 0); /* reshuffled per epoch */
        free(mine), free(seen);
        ff_tensor_release(t), ff_tensor_release(all);
    }
}

int main(void)
{
    if (ff_dist_init()) {
        fprintf(stderr, "ff_dist_init: %s\n", ff_last_error());
        return 1;
    }
    test_data_parallel_equals_one_big_batch();
    test_accumulation_equals_one_process();
    test_collectives("cpu");
    test_collectives("cpu_blas");
    test_disagreement_is_an_error_everywhere();
    test_sampler_covers_the_epoch_once();
    int32_t f = failures;
    ff_tensor *t = ff_from_data(&f, 1, (int64_t[]){1}, FF_I32);
    ff_status st = ff_dist_allreduce(t, FF_DIST_MAX);
    double any = value_at(t, 0);
    ff_tensor_release(t);
    int rank = ff_dist_rank(), size = ff_dist_size();
    ff_dist_finalize();
    if (rank == 0) printf("test_dist_ddp on %d ranks: %s\n", size, st || any ? "FAILED" : "ok");
    return st || any ? 1 : 0;
}
