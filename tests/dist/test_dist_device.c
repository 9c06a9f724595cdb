/* ff_dist's device collectives (a backend's coll_* entries: cuda's NCCL) on any machine:
 *
 *     test_dist_device BACKEND                    one process: the device path
 *     mpirun -np 2 test_dist_device BACKEND       two ranks: the fallback to MPI staging
 *
 * BACKEND is a plugin with the coll_* entries: in CI the emulated cuda backend
 * (tests/cuda_emu), whose NCCL takes one rank only; on a GPU the real cuda backend, whose
 * NCCL takes any number (scripts/gpu-check.sh runs the one-rank form there). Proves:
 *   - the collectives' values (allreduce sum/mean/max, broadcast, allgather, a strided
 *     view) and which path ran them (ff_dist_counts): the device path in a group the
 *     backend could make, else MPI staging on every rank alike, with the same values;
 *   - a shape disagreement stays an error on every rank before any device work, and the
 *     group stays usable;
 *   - ranks whose tensors live on different kinds of backend (one without collectives)
 *     all stage, and agree;
 *   - DDP: gradients averaged over the ranks in buckets, started during backward, through
 *     the device path where it runs (device buckets), equal to the mean computed locally;
 *     two backwards before a sync (with no_sync on the first, and without) give the mean
 *     of the accumulated gradient.
 * Prints "device collectives: N device, M staged" and exits 1 on any failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist_check.h"
#include "ff/ff.h"

static int rank, size;

static double at(const ff_tensor *t, int64_t i)
{
    double v[64];
    int64_t n = ff_tensor_numel(t);
    ff_tensor *d = ff_astype(t, FF_F64);
    if (!d || n > 64 || ff_tensor_to_host(d, v, (size_t)n * sizeof(double))) {
        ff_tensor_release(d);
        return NAN;
    }
    ff_tensor_release(d);
    return v[i];
}

static int64_t device_count(void)
{
    int64_t d;
    ff_dist_counts(&d, NULL);
    return d;
}

static void test_collectives(ff_backend *be, int want_device)
{
    int64_t d0 = device_count();
    float v[6];
    for (int i = 0; i < 6; i++) v[i] = (float)(i + 10 * rank);
    ff_tensor *t = ff_from_data_on(be, v, 2, (int64_t[]){2, 3}, FF_F32);
    CHECK(t && ff_dist_allreduce(t, FF_DIST_SUM) == FF_OK);
    double rsum = 10.0 * size * (size - 1) / 2; /* sum over ranks of 10 * rank */
    for (int i = 0; i < 6; i++) CHECK(at(t, i) == size * i + rsum);
    CHECK(ff_dist_allreduce(t, FF_DIST_MEAN) == FF_OK);
    for (int i = 0; i < 6; i++) CHECK(fabs(at(t, i) - (size * i + rsum)) < 1e-5);
    ff_tensor_release(t);

    int32_t iv[3] = {rank, -rank, 7};
    ff_tensor *ti = ff_from_data_on(be, iv, 1, (int64_t[]){3}, FF_I32);
    CHECK(ti && ff_dist_allreduce(ti, FF_DIST_MAX) == FF_OK);
    CHECK(at(ti, 0) == size - 1 && at(ti, 1) == 0 && at(ti, 2) == 7);
    ff_tensor_release(ti);

    /* a strided view (the transpose of a [2, 3]): through a dense copy and back */
    double base[6] = {1, 2, 3, 4, 5, 6};
    ff_tensor *m = ff_from_data_on(be, base, 2, (int64_t[]){2, 3}, FF_F64), *mt = m ? ff_mT(m) : NULL;
    CHECK(mt && ff_dist_allreduce(mt, FF_DIST_SUM) == FF_OK);
    CHECK(at(m, 0) == size * 1.0 && at(m, 5) == size * 6.0 && at(mt, 1) == size * 4.0);
    ff_tensor_release(mt), ff_tensor_release(m);

    float b[2] = {(float)rank + 1, -1};
    ff_tensor *tb = ff_from_data_on(be, b, 1, (int64_t[]){2}, FF_F32);
    CHECK(tb && ff_dist_broadcast(tb, size - 1) == FF_OK);
    CHECK(at(tb, 0) == size && at(tb, 1) == -1);
    ff_tensor_release(tb);

    float g[2] = {(float)rank, (float)(100 + rank)};
    ff_tensor *tg = ff_from_data_on(be, g, 1, (int64_t[]){2}, FF_F32), *all = tg ? ff_dist_allgather(tg) : NULL;
    CHECK(all && ff_tensor_ndim(all) == 2 && ff_tensor_shape(all)[0] == size);
    for (int r = 0; all && r < size; r++) CHECK(at(all, 2 * r) == r && at(all, 2 * r + 1) == 100 + r);
    ff_tensor_release(all), ff_tensor_release(tg);

    /* allreduce x2, max, transpose, broadcast, allgather: 6 collectives */
    CHECK(device_count() - d0 == (want_device ? 6 : 0));
}

static void test_disagreement(ff_backend *be)
{
    if (size < 2) return;
    int64_t n = rank == 0 ? 3 : 4;
    ff_tensor *t = ff_full_on(be, 1, &n, FF_F32, 1.0);
    ff_status st = ff_dist_allreduce(t, FF_DIST_SUM);
    CHECK(st == FF_ERR_INVALID && strstr(ff_last_error(), "the ranks disagree"));
    ff_tensor_release(t);
    n = 3;
    t = ff_full_on(be, 1, &n, FF_F32, 1.0);
    CHECK(t && ff_dist_allreduce(t, FF_DIST_SUM) == FF_OK && at(t, 2) == size); /* still usable */
    ff_tensor_release(t);
}

/* Rank 0 on the device backend, the others on the reference: every rank stages. */
static void test_mixed(ff_backend *be, ff_backend *cpu)
{
    if (size < 2) return;
    int64_t d0 = device_count();
    float v[2] = {1, 2};
    ff_tensor *t = ff_from_data_on(rank == 0 ? be : cpu, v, 1, (int64_t[]){2}, FF_F32);
    CHECK(t && ff_dist_allreduce(t, FF_DIST_SUM) == FF_OK && at(t, 1) == 2.0 * size);
    CHECK(device_count() == d0);
    ff_tensor_release(t);
}

static ff_tensor *linear_forward(ff_module *m, const ff_tensor *x, void *user)
{
    (void)user;
    ff_tensor *w = ff_module_get_parameter(m, "w"), *bias = ff_module_get_parameter(m, "b");
    ff_tensor *h = ff_matmul(x, w), *y = h ? ff_add(h, bias) : NULL;
    ff_tensor_release(h), ff_tensor_release(w), ff_tensor_release(bias);
    return y;
}

/* The loss's gradients for this input into g[0..1] (host copies), through ddp if given. */
static void grads(ff_module *m, ff_dist_ddp *ddp, ff_backend *be, float scale, float *gw, float *gb)
{
    float xv[8];
    for (int i = 0; i < 8; i++) xv[i] = scale * (float)(i - 3) / 4;
    ff_tensor *x = ff_from_data_on(be, xv, 2, (int64_t[]){2, 4}, FF_F32);
    ff_tensor *y = ff_module_forward(m, x), *y2 = y ? ff_mul(y, y) : NULL, *loss = y2 ? ff_sum(y2, 0, NULL, false) : NULL;
    CHECK(loss && ff_module_zero_grad(m) == FF_OK && ff_backward(loss, NULL, NULL) == FF_OK);
    if (ddp) CHECK(ff_dist_ddp_sync_grads(ddp) == FF_OK);
    ff_tensor *w = ff_module_get_parameter(m, "w"), *b = ff_module_get_parameter(m, "b");
    ff_tensor *g1 = ff_grad(w), *g2 = ff_grad(b);
    CHECK(g1 && g2 && !ff_tensor_to_host(g1, gw, 12 * sizeof(float)) && !ff_tensor_to_host(g2, gb, 3 * sizeof(float)));
    ff_tensor_release(g1), ff_tensor_release(g2), ff_tensor_release(w), ff_tensor_release(b);
    ff_tensor_release(x), ff_tensor_release(y), ff_tensor_release(y2), ff_tensor_release(loss);
}

/* Two backwards (the first under no_sync when hold) into one .grad, then the sync. */
static void accumulated(ff_module *m, ff_dist_ddp *ddp, ff_backend *be, bool hold, float *gw, float *gb)
{
    float xv[8];
    for (int i = 0; i < 8; i++) xv[i] = (float)(rank + 1) * (float)(i - 3) / 4;
    ff_tensor *x = ff_from_data_on(be, xv, 2, (int64_t[]){2, 4}, FF_F32);
    CHECK(ff_module_zero_grad(m) == FF_OK);
    for (int k = 0; k < 2; k++) {
        ff_dist_ddp_no_sync(ddp, hold && k == 0);
        ff_tensor *y = ff_module_forward(m, x), *y2 = y ? ff_mul(y, y) : NULL;
        ff_tensor *loss = y2 ? ff_sum(y2, 0, NULL, false) : NULL;
        CHECK(loss && ff_backward(loss, NULL, NULL) == FF_OK);
        ff_tensor_release(y), ff_tensor_release(y2), ff_tensor_release(loss);
    }
    CHECK(ff_dist_ddp_sync_grads(ddp) == FF_OK);
    ff_tensor *w = ff_module_get_parameter(m, "w"), *b = ff_module_get_parameter(m, "b");
    ff_tensor *g1 = ff_grad(w), *g2 = ff_grad(b);
    CHECK(g1 && g2 && !ff_tensor_to_host(g1, gw, 12 * sizeof(float)) && !ff_tensor_to_host(g2, gb, 3 * sizeof(float)));
    ff_tensor_release(g1), ff_tensor_release(g2), ff_tensor_release(w), ff_tensor_release(b), ff_tensor_release(x);
}

static void test_ddp(ff_backend *be, int want_device)
{
    ff_module *m = ff_module_new("Linear", linear_forward, NULL, NULL);
    float wv[12], bv[3] = {0.1f, -0.2f, 0.3f};
    for (int i = 0; i < 12; i++) wv[i] = (float)((i * 7) % 5 - 2) / 3;
    ff_tensor *w = ff_from_data_on(be, wv, 2, (int64_t[]){4, 3}, FF_F32), *b = ff_from_data_on(be, bv, 1, (int64_t[]){3}, FF_F32);
    CHECK(m && w && b && !ff_module_register_parameter(m, "w", w) && !ff_module_register_parameter(m, "b", b));
    ff_tensor_release(w), ff_tensor_release(b);
    /* the mean over the ranks, computed here: every rank's input is scaled by rank + 1 */
    float want_w[12] = {0}, want_b[3] = {0}, gw[12], gb[3];
    for (int r = 0; r < size; r++) {
        grads(m, NULL, be, (float)(r + 1), gw, gb);
        for (int i = 0; i < 12; i++) want_w[i] += gw[i] / (float)size;
        for (int i = 0; i < 3; i++) want_b[i] += gb[i] / (float)size;
    }
    int64_t d0 = device_count();
    ff_dist_ddp *ddp = ff_dist_ddp_new(m, 16); /* 16 bytes: w and b in buckets of their own */
    CHECK(ddp && ff_dist_ddp_num_buckets(ddp) == 2);
    for (int step = 0; ddp && step < 2; step++) {
        grads(m, ddp, be, (float)(rank + 1), gw, gb);
        for (int i = 0; i < 12; i++) CHECK(fabsf(gw[i] - want_w[i]) <= 1e-5f * (1 + fabsf(want_w[i])));
        for (int i = 0; i < 3; i++) CHECK(fabsf(gb[i] - want_b[i]) <= 1e-5f * (1 + fabsf(want_b[i])));
        if (size > 1 || want_device) CHECK(ff_dist_ddp_buckets_started_in_backward(ddp) == 2);
    }
    /* the setup's two broadcasts and two buckets a step, on the device where it runs */
    CHECK(device_count() - d0 == (want_device ? 2 + 2 * 2 : 0));
    /* accumulation: twice the one-pass gradient; each backward reduces both buckets anew
     * (the first reduction dropped), or only the second under no_sync */
    for (int hold = 0; ddp && hold < 2; hold++) {
        d0 = device_count();
        accumulated(m, ddp, be, hold, gw, gb);
        for (int i = 0; i < 12; i++) CHECK(fabsf(gw[i] - 2 * want_w[i]) <= 1e-5f * (1 + fabsf(2 * want_w[i])));
        for (int i = 0; i < 3; i++) CHECK(fabsf(gb[i] - 2 * want_b[i]) <= 1e-5f * (1 + fabsf(2 * want_b[i])));
        CHECK(device_count() - d0 == (want_device ? (hold ? 2 : 4) : 0));
    }
    ff_dist_ddp_free(ddp);
    ff_module_release(m);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_dist_device BACKEND (a plugin with the coll_* entries)\n");
        return 2;
    }
    ff_backend *be = ff_backend_load(argv[1]), *cpu = ff_backend_load("cpu");
    if (!be || !cpu || ff_dist_init()) {
        fprintf(stderr, "test_dist_device: %s\n", ff_last_error());
        return 1;
    }
    rank = ff_dist_rank(), size = ff_dist_size();
    /* the emulated NCCL (FF_TEST_EMULATED_NCCL=1) joins a group of one only, a real one
     * any: which path the values must come from */
    const char *emu = getenv("FF_TEST_EMULATED_NCCL");
    const char *off = getenv("FF_DIST_DEVICE");
    int want_device = !(off && !strcmp(off, "0")) && (!emu || !strcmp(emu, "0") || size == 1);
    test_collectives(be, want_device);
    test_disagreement(be);
    test_mixed(be, cpu);
    test_ddp(be, want_device);
    int64_t dev, staged;
    ff_dist_counts(&dev, &staged);
    printf("rank %d: device collectives: %lld device, %lld staged, %d failure(s)\n", rank, (long long)dev,
           (long long)staged, failures);
    int all = failures;
    ff_tensor *f = ff_from_data(&all, 1, (int64_t[]){1}, FF_I32);
    if (!f || ff_dist_allreduce(f, FF_DIST_MAX)) all = 1;
    else all = (int)at(f, 0);
    ff_tensor_release(f);
    ff_dist_finalize();
    ff_shutdown();
    return all ? 1 : 0;
}
