/* Run under `timeout ... mpirun` with FF_DIST_TIMEOUT=1 (ctest label "dist"); the last rank
 * is late to an allreduce the others wait for.
 *
 *   late: it arrives after 3 s, after the others gave up. Every rank must get an error from
 *         the allreduce (the waiting ones the timeout, the late one "arrived too late"),
 *         every later collective must fail at once saying the group is unusable, and
 *         ff_dist_finalize must return on every rank: the job ends by itself, exit 0.
 *   hung: it does not arrive for 60 s. The others get the timeout, and their finalize,
 *         rather than wait for it, aborts the job with a message (ctest matches it).
 *
 * Before the fix the waiting ranks blocked in MPI_Finalize and the late one in the
 * payload's MPI_Allreduce, forever: the `timeout` in the ctest command turns that into a
 * failure instead of a hung CI. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dist_check.h"
#include "ff/ff.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    bool hung = argc > 1 && !strcmp(argv[1], "hung");
    if (ff_dist_init() || ff_dist_size() < 2) {
        fprintf(stderr, "needs mpirun -np 2 or more: %s\n", ff_last_error());
        return 1;
    }
    int rank = ff_dist_rank(), size = ff_dist_size();
    bool late = rank == size - 1;
    if (late) nanosleep(&(struct timespec){hung ? 60 : 3, 0}, NULL);
    ff_tensor *t = ff_ones(1, (int64_t[]){4}, FF_F32);
    double t0 = now();
    ff_status st = ff_dist_allreduce(t, FF_DIST_SUM);
    double took = now() - t0;
    printf("rank %d: allreduce after %.1f s: %s\n", rank, took, st ? ff_last_error() : "ok?!");
    CHECK(st == FF_ERR_BACKEND && strstr(ff_last_error(), "unusable"));
    CHECK(late ? strstr(ff_last_error(), "arrived too late") || strstr(ff_last_error(), "gave up")
               : strstr(ff_last_error(), "waited 1 s") || strstr(ff_last_error(), "gave up"));
    CHECK(late ? took < 0.5 : took < 5); /* the late rank finds out at once */
    /* every later call fails fast, on every rank */
    t0 = now();
    CHECK(ff_dist_barrier() == FF_ERR_BACKEND && strstr(ff_last_error(), "unusable"));
    CHECK(ff_dist_broadcast(t, 0) == FF_ERR_BACKEND && strstr(ff_last_error(), "unusable"));
    CHECK(ff_dist_allgather(t) == NULL && strstr(ff_last_error(), "unusable"));
    CHECK(now() - t0 < 0.5);
    float v[4];
    CHECK(ff_tensor_to_host(t, v, sizeof v) == FF_OK && v[0] == 1.0f); /* left as it was */
    ff_tensor_release(t);
    t0 = now();
    ff_status fin = ff_dist_finalize();
    printf("rank %d: finalize returned %d after %.1f s; %d failure(s)\n", rank, (int)fin, now() - t0, failures);
    CHECK(fin == FF_OK);
    fflush(stdout);
    return failures ? 1 : 0;
}
