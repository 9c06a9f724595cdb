/* Private header of dist/: what the process group (dist.c) lends to the data-parallel
 * wrapper (ddp.c). */
#ifndef FF_DIST_IMPL_H
#define FF_DIST_IMPL_H

#include "ff/dist.h"
#include "ff_impl.h"

/* What a collective is about to do, exchanged before it runs (see dist.c). */
typedef enum ff_dist_kind { FF_DIST_K_ALLREDUCE = 1, FF_DIST_K_BROADCAST, FF_DIST_K_ALLGATHER, FF_DIST_K_BARRIER,
                            FF_DIST_K_BUCKET, FF_DIST_K_DDP } ff_dist_kind;

/* Every rank checks that every rank is about to run the same collective on the same
 * dtype and shape (ndim/shape describe it; op and root too); FF_OK or an error on all. */
ff_status ff_dist_agree(const char *fn, ff_dist_kind kind, ff_dtype dtype, int ndim, const int64_t *shape, int op,
                        int root);
/* The same, where *device says whether this rank's tensor can take the device path (the
 * backend's collectives); on return it says whether every rank's can. */
ff_status ff_dist_agree_device(const char *fn, ff_dist_kind kind, ff_dtype dtype, int ndim, const int64_t *shape,
                               int op, int root, bool *device);

/* ---- device collectives (a backend's coll_* entries, e.g. cuda's NCCL) ---- */
/* Whether be has the entries and takes op on t (and its group was not found unusable). */
bool ff_dist_coll_capable(ff_backend *be, ff_coll_op op, ff_dtype t);
/* be's group, made at the first call on every rank together (after an agreement that
 * said every rank can): *comm NULL (and FF_OK) when some rank could not join, from then
 * on for good, so the caller stages through host memory instead. */
ff_status ff_dist_coll_group(ff_backend *be, const char *fn, void **comm);
/* One collective on dense tensors of be (coll_run), counted, dst's version bumped. */
ff_status ff_dist_coll_run(ff_backend *be, void *comm, ff_coll_op op, int arg, bool async, ff_tensor *dst,
                           const ff_tensor *src, const char *fn);
/* be's later work waits for the group's async collectives (coll_wait). */
ff_status ff_dist_coll_wait(ff_backend *be, void *comm, const char *fn);

/* Reduces count elements of host memory in place across the ranks (after ff_dist_agree). */
ff_status ff_dist_allreduce_host(void *buf, int64_t count, ff_dtype dtype, ff_dist_reduce op, const char *fn);

/* A non-blocking allreduce of host memory in place (after ff_dist_agree), NULL with the
 * error set on failure; ff_dist_wait completes it (MEAN divides), frees it, and returns
 * its status. With one rank (or no MPI) the handle is a finished no-op. */
typedef struct ff_dist_pending ff_dist_pending;
ff_dist_pending *ff_dist_iallreduce_host(void *buf, int64_t count, ff_dtype dtype, ff_dist_reduce op, const char *fn);
ff_status ff_dist_wait(ff_dist_pending *p, const char *fn);
/* Drives MPI's progress on p (an MPI_Test) so it advances while the caller computes. */
void ff_dist_poke(ff_dist_pending *p);

#endif /* FF_DIST_IMPL_H */
