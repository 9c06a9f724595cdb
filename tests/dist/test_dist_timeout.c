/* Run under mpirun -np 2 with FF_DIST_TIMEOUT=1: rank 1 never joins the allreduce (it
 * sleeps, then leaves), and rank 0 must come back with a timeout error naming the
 * collective instead of waiting forever. ctest passes on rank 0's message (the job's exit
 * code is mpirun's verdict on rank 1 leaving without finalizing). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ff/ff.h"

int main(void)
{
    if (ff_dist_init() || ff_dist_size() != 2) return 1;
    if (ff_dist_rank() == 1) {
        nanosleep(&(struct timespec){3, 0}, NULL);
        _Exit(0);
    }
    ff_tensor *t = ff_ones(1, (int64_t[]){4}, FF_F32);
    ff_status st = ff_dist_allreduce(t, FF_DIST_SUM);
    if (st != FF_OK && strstr(ff_last_error(), "waited") && strstr(ff_last_error(), "allreduce"))
        printf("timeout reported: %s\n", ff_last_error());
    else
        printf("no timeout error (status %d: %s)\n", (int)st, ff_last_error());
    fflush(stdout);
    ff_status again = ff_dist_barrier(); /* the group is unusable now, and says so */
    printf("after the timeout: %s\n", again != FF_OK && strstr(ff_last_error(), "unusable") ? "unusable, as reported"
                                                                                              : "usable?!");
    fflush(stdout);
    _Exit(0);
}
