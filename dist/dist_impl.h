/* Private header of dist/: what the process group (dist.c) lends to the data-parallel
 * wrapper (ddp.c). */
#ifndef FF_DIST_IMPL_H
#define FF_DIST_IMPL_H

#include "ff/dist.h"
#include "ff_impl.h"

/* What a collective is about to do, exchanged before it runs (see dist.c). */
typedef enum ff_dist_kind { FF_DIST_K_ALLREDUCE = 1, FF_DIST_K_BROADCAST, FF_DIST_K_ALLGATHER, FF_DIST_K_BARRIER,
                            FF_DIST_K_BUCKET } ff_dist_kind;

/* Every rank checks that every rank is about to run the same collective on the same
 * dtype and shape (ndim/shape describe it; op and root too); FF_OK or an error on all. */
ff_status ff_dist_agree(const char *fn, ff_dist_kind kind, ff_dtype dtype, int ndim, const int64_t *shape, int op,
                        int root);
/* Reduces count elements of host memory in place across the ranks (after ff_dist_agree). */
ff_status ff_dist_allreduce_host(void *buf, int64_t count, ff_dtype dtype, ff_dist_reduce op, const char *fn);

#endif /* FF_DIST_IMPL_H */
