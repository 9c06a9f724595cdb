/* Ops from several threads at once, on the default backend (cpu_blas, whose thread pool
 * they then share) and on cpu: matmuls, reductions, elementwise chains and backward
 * passes, each thread with its own grad mode. Every thread's results must equal the
 * single-threaded answer. Run under ThreadSanitizer by `make test`
 * (label "threads"), where any data race fails it.
 *
 * "Equal" is to 1e-5 relative, not bit for bit: a matmul split across the pool's threads
 * and one run on the calling thread (the pool busy with another caller's job) block C
 * differently, and OpenBLAS's kernels round edge blocks differently from inner ones. */
#include <math.h>
#include <pthread.h>

#include "ff_test.h"

#define NTHREADS 4
#define ROUNDS 6

typedef struct job {
    ff_backend *be;
    const ff_tensor *a, *b;
    double want_sum, want_grad;
    int bad;
} job;

/* loss = sum(softmax(relu(a @ b) * 0.5, -1) * (a @ b)); returns it and d loss / d a summed */
static int compute(ff_backend *be, const ff_tensor *a0, const ff_tensor *b0, double *loss_out, double *grad_out)
{
    ff_tensor *a = ff_to((ff_tensor *)a0, be), *b = ff_to((ff_tensor *)b0, be);
    ff_tensor *ad = a ? ff_detach(a) : NULL;
    if (!ad || ff_set_requires_grad(ad, true)) return 1;
    ff_tensor *m = ff_matmul(ad, b), *r = m ? ff_relu(m) : NULL, *h = r ? ff_mul_scalar(r, 0.5) : NULL;
    ff_tensor *s = h ? ff_softmax(h, -1) : NULL, *p = s ? ff_mul(s, m) : NULL, *loss = p ? ff_sum(p, 0, NULL, false) : NULL;
    int bad = !loss || ff_backward(loss, NULL, NULL) != FF_OK || ff_tensor_item(loss, loss_out) != FF_OK;
    ff_tensor *g = bad ? NULL : ff_grad(ad), *gs = g ? ff_sum(g, 0, NULL, false) : NULL;
    bad = bad || !gs || ff_tensor_item(gs, grad_out) != FF_OK;
    RELEASE(a, b, ad, m, r, h, s, p, loss, g, gs);
    return bad;
}

static bool close_to(double got, double want) { return fabs(got - want) <= 1e-5 * fabs(want) + 1e-6; }

static void *worker(void *arg)
{
    job *j = arg;
    ff_set_grad_enabled(true); /* thread-local */
    for (int k = 0; k < ROUNDS; k++) {
        double l = 0, g = 0;
        if (compute(j->be, j->a, j->b, &l, &g) || !close_to(l, j->want_sum) || !close_to(g, j->want_grad)) j->bad++;
        /* and an op with grad mode off in this thread only */
        ff_set_grad_enabled(false);
        ff_tensor *t = ff_to((ff_tensor *)j->a, j->be), *e = t ? ff_exp(t) : NULL;
        if (!e || ff_requires_grad(e)) j->bad++;
        RELEASE(t, e);
        ff_set_grad_enabled(true);
    }
    return NULL;
}

static void run_on(ff_backend *be)
{
    ff_tensor *a = ff_rand_normal(2, SHAPE(512, 96), FF_F32, 0, 1, 11); /* above cpu_blas's threading threshold */
    ff_tensor *b = ff_rand_normal(2, SHAPE(96, 64), FF_F32, 0, 1, 12);
    double want_sum = 0, want_grad = 0;
    CHECK(compute(be, a, b, &want_sum, &want_grad) == 0);
    job jobs[NTHREADS];
    pthread_t tid[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        jobs[i] = (job){be, a, b, want_sum, want_grad, 0};
        CHECK(pthread_create(&tid[i], NULL, worker, &jobs[i]) == 0);
    }
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(tid[i], NULL);
        CHECK(jobs[i].bad == 0);
    }
    RELEASE(a, b);
}

static void test_default_backend(void) { run_on(ff_backend_default()); }
static void test_cpu_backend(void) { run_on(ff_backend_load("cpu")); }

FF_TEST_MAIN("threads_concurrent", TEST(test_default_backend), TEST(test_cpu_backend))
