/* The check of the tests run under mpirun: every rank prints its own failures, naming
 * itself, and counts them in `failures` (the tests then agree on a verdict over ff_dist). */
#ifndef FF_TEST_DIST_CHECK_H
#define FF_TEST_DIST_CHECK_H

#include <stdio.h>

#include "ff/ff.h"

static int failures;
#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "rank %d: %s:%d: CHECK failed: %s (last error: %s)\n", ff_dist_rank(), __FILE__, \
                    __LINE__, #c, ff_last_error());                                                           \
            failures++;                                                                                       \
        }                                                                                                     \
    } while (0)

#endif
