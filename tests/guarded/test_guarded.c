/* The guarded backend guards: its handles are no host memory (a read through one, or
 * through the address behind it, kills the process with SIGSEGV), the core hands no host
 * address or DLPack export of them out, memory_stats counts what is live, and entries
 * from several threads at once on one shared tensor neither fault nor disagree (the
 * lock keeps one thread from closing a buffer another is reading). */
#define _POSIX_C_SOURCE 200809L /* fork, waitpid */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ff_impl.h"
#include "ff_test.h"
#include "guarded_impl.h"

#define N 65536 /* entries long enough that a missing lock shows */

static ff_backend *guarded(void)
{
    ff_backend *be = ff_backend_load(FF_GUARDED_PLUGIN);
    CHECK(be != NULL);
    return be;
}

static ff_tensor *ramp(ff_backend *be, int64_t n)
{
    static float v[N];
    for (int64_t i = 0; i < n; i++) v[i] = (float)(i % 1024);
    return ff_from_data_on(be, v, 1, &n, FF_F32);
}

/* Runs read(p) in a child: it must die of SIGSEGV (the ASan build lets the signal
 * through: ASAN_OPTIONS=handle_segv=0 in the test's environment). */
static int dies_of_segv(const volatile char *p)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        volatile char c = *p;
        (void)c;
        _exit(0);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid) return 0;
    return WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV;
}

static void test_memory_is_out_of_reach(void)
{
    ff_backend *be = guarded();
    ff_tensor *t = be ? ramp(be, N) : NULL;
    CHECK(t != NULL);
    if (!t) return;
    void *h = t->storage->buf;
    CHECK(ff_tensor_data_ptr(t) == NULL); /* not host memory: no address handed out */
    CHECK_ERROR(ff_to_dlpack(t) == NULL, FF_ERR_UNSUPPORTED, "host memory");
    CHECK(dies_of_segv(h));                                                /* the handle itself */
    CHECK(dies_of_segv((const char *)((uintptr_t)h ^ GUARDED_TAG)));       /* the mapping behind it */
    CHECK(dies_of_segv((const char *)((uintptr_t)h ^ GUARDED_TAG) + 4095)); /* all of it */
    /* while through the backend the values are there */
    ff_tensor *s = ff_sum(t, 0, NULL, false);
    double sum = 0;
    CHECK(s && ff_tensor_item(s, &sum) == FF_OK && sum == (double)(N / 1024) * 1024 * 1023 / 2);
    RELEASE(s, t);
}

static void test_memory_stats_count_live_tensors(void)
{
    ff_backend *be = guarded();
    size_t before = 0, during = 0, after = 0, peak = 0;
    CHECK(be && ff_backend_memory_stats(be, &before, NULL, NULL) == FF_OK);
    ff_tensor *a = be ? ramp(be, N) : NULL, *b = a ? ff_mul(a, a) : NULL;
    CHECK(b != NULL);
    CHECK(be && ff_backend_memory_stats(be, &during, NULL, &peak) == FF_OK);
    CHECK(during >= before + 2 * N * sizeof(float) && peak >= during);
    RELEASE(a, b);
    CHECK(be && ff_backend_memory_stats(be, &after, NULL, NULL) == FF_OK);
    CHECK(after == before);
}

typedef struct job {
    const ff_tensor *shared;
    int bad;
} job;

/* sum((t + t) * t), or -1 */
static double chain(const ff_tensor *t)
{
    ff_tensor *x = ff_add(t, t), *y = x ? ff_mul(x, t) : NULL, *s = y ? ff_sum(y, 0, NULL, false) : NULL;
    double got = -1;
    if (!s || ff_tensor_item(s, &got) != FF_OK) got = -1;
    RELEASE(x, y, s);
    return got;
}

static void *worker(void *arg)
{
    job *j = arg;
    double want = chain(j->shared);
    for (int k = 0; k < 40; k++)
        if (want < 0 || chain(j->shared) != want) j->bad++;
    return NULL;
}

static void test_threads_share_a_tensor(void)
{
    ff_backend *be = guarded();
    ff_tensor *t = be ? ramp(be, N) : NULL;
    CHECK(t != NULL);
    if (!t) return;
    enum { NT = 4 };
    pthread_t th[NT];
    job jobs[NT];
    for (int i = 0; i < NT; i++) {
        jobs[i] = (job){.shared = t};
        CHECK(pthread_create(&th[i], NULL, worker, &jobs[i]) == 0);
    }
    for (int i = 0; i < NT; i++) {
        pthread_join(th[i], NULL);
        CHECK(jobs[i].bad == 0);
    }
    ff_tensor_release(t);
}

FF_TEST_MAIN("guarded", TEST(test_memory_is_out_of_reach), TEST(test_memory_stats_count_live_tensors),
             TEST(test_threads_share_a_tensor))
