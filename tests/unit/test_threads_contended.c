/* cpu_blas's pool when its workers cannot run: the process pinned to one CPU with 4 pool
 * threads, so a worker is descheduled while the caller runs and the pieces of a job go to
 * whichever thread is running (blas_threads.c's ticket). Every op split across the pool
 * (elementwise, row and column sums, softmax, a matmul with its backward) must give the
 * same bits as with the pool's threads free to run, and nothing may hang. Run under
 * ThreadSanitizer by `make test` (label "threads"): there the threads race for pieces as
 * they please and any data race on a job's fields fails it. */
#define _GNU_SOURCE /* sched_setaffinity */
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <string.h>

#include "ff_test.h"

#define ROUNDS 40

/* loss = sum(softmax(a @ b) * (a + 1)) over wide rows, with the row and column sums of a
 * folded in; its value and d loss / d a and d loss / d b, as flat host arrays */
static int compute(ff_backend *be, const ff_tensor *a0, const ff_tensor *b0, float *out, int64_t n_out)
{
    ff_tensor *a = ff_to((ff_tensor *)a0, be), *b = ff_to((ff_tensor *)b0, be);
    ff_tensor *ad = a ? ff_detach(a) : NULL, *bd = b ? ff_detach(b) : NULL;
    if (!ad || !bd || ff_set_requires_grad(ad, true) || ff_set_requires_grad(bd, true)) return 1;
    int ax0 = 0, ax1 = 1;
    ff_tensor *m = ff_matmul(ad, bd), *s = m ? ff_softmax(m, -1) : NULL;
    ff_tensor *a1 = ff_add_scalar(ad, 1.0), *p = s && a1 ? ff_mul(s, a1) : NULL;
    ff_tensor *rs = p ? ff_sum(p, 1, &ax1, true) : NULL, *cs = p ? ff_sum(p, 1, &ax0, true) : NULL;
    ff_tensor *q = rs && cs ? ff_mul(rs, cs) : NULL, *loss = q ? ff_sum(q, 0, NULL, false) : NULL;
    int bad = !loss || ff_backward(loss, NULL, NULL) != FF_OK;
    ff_tensor *ga = bad ? NULL : ff_grad(ad), *gb = bad ? NULL : ff_grad(bd);
    ff_tensor *fa = ga ? ff_reshape(ga, 1, (int64_t[]){ff_tensor_numel(ga)}) : NULL;
    ff_tensor *fb = gb ? ff_reshape(gb, 1, (int64_t[]){ff_tensor_numel(gb)}) : NULL;
    ff_tensor *fl = loss ? ff_reshape(loss, 1, (int64_t[]){1}) : NULL;
    ff_tensor *all = fa && fb && fl ? ff_concat(3, (ff_tensor *[]){fl, fa, fb}, 0) : NULL;
    ff_tensor *host = all ? ff_to(all, ff_backend_load("cpu")) : NULL;
    bad = bad || !host || ff_tensor_numel(host) != n_out || ff_tensor_to_host(host, out, (size_t)n_out * sizeof *out);
    RELEASE(a, b, ad, bd, m, s, a1, p, rs, cs, q, loss, ga, gb, fa, fb, fl, all, host);
    return bad;
}

/* Every thread of this process (the caller and the pool's workers) onto the CPUs in set;
 * returns how many were moved. */
static int pin_all_threads(const cpu_set_t *set)
{
    DIR *d = opendir("/proc/self/task");
    int moved = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.' && sched_setaffinity((pid_t)atoi(e->d_name), sizeof *set, set) == 0) moved++;
    if (d) closedir(d);
    return moved;
}

static void test_pinned_pool_matches_free_pool(void)
{
    ff_backend *be = ff_backend_load("cpu_blas");
    if (!be) {
        printf("test_pinned_pool_matches_free_pool: cpu_blas not built, not tested\n");
        return;
    }
    ff_tensor *a = ff_rand_normal(2, SHAPE(256, 192), FF_F32, 0, 1, 21); /* past the threading thresholds */
    ff_tensor *b = ff_rand_normal(2, SHAPE(192, 192), FF_F32, 0, 0.1, 22);
    int64_t n = 1 + 256 * 192 + 192 * 192;
    float *want = malloc((size_t)n * sizeof *want), *got = malloc((size_t)n * sizeof *got);
    CHECK(want && got && a && b);
    CHECK(compute(be, a, b, want, n) == 0);

    cpu_set_t all, one;
    CHECK(sched_getaffinity(0, sizeof all, &all) == 0);
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &all)) {
            CPU_SET(c, &one);
            break;
        }
    CHECK(pin_all_threads(&one) >= 2); /* the caller and at least one pool worker */
    int mismatched = 0;
    for (int r = 0; r < ROUNDS; r++) {
        memset(got, 0, (size_t)n * sizeof *got);
        if (compute(be, a, b, got, n) || memcmp(got, want, (size_t)n * sizeof *got)) mismatched++;
    }
    CHECK(mismatched == 0);
    CHECK(pin_all_threads(&all) >= 2);
    free(want), free(got);
    RELEASE(a, b);
}

int main(void)
{
    /* four pool threads on however many CPUs, set before the plugin's first load */
    setenv("FF_NUM_THREADS", "4", 1);
    return ff_test_run("threads_contended", (ff_test_case[]){TEST(test_pinned_pool_matches_free_pool)}, 1);
}
