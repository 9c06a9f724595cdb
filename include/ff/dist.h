/*
 * FusionFlow user API: data-parallel training across processes, on MPI.
 *
 *   ff_dist_init();                                   // under mpirun: one rank per process
 *   ff_dist_ddp *ddp = ff_dist_ddp_new(net, 0);       // rank 0's parameters everywhere
 *   ... per step: forward on this rank's shard, ff_backward(loss, ...),
 *       ff_dist_ddp_sync_grads(ddp);                  // gradients averaged over the ranks
 *       ff_optimizer_step(opt);                       // identical on every rank
 *   ff_dist_ddp_free(ddp); ff_dist_finalize();
 *
 * One process group: every process of the MPI job (MPI_COMM_WORLD, duplicated). Built
 * without MPI (FF_BUILD_MPI=OFF or no libopenmpi-dev), or run outside mpirun, it is one
 * process of size 1 and every collective is the identity. Collectives take tensors of any
 * backend: host-memory backends' contiguous tensors are handed to MPI in place, others
 * are staged through host memory, except where every rank's tensor is on a backend with
 * collectives of its own (cuda: NCCL, bootstrapped over MPI), which then moves the bytes
 * device to device (also in a group of one; FF_DIST_DEVICE=0 turns it off).
 *
 * Before each collective the ranks exchange what they are about to do (which collective,
 * dtype, shape, root): a disagreement is an FF_ERR_INVALID error on every rank naming both
 * sides, never a hang or a corrupt result; a rank that does not arrive within the timeout
 * (default 300 s, FF_DIST_TIMEOUT or ff_dist_set_timeout) is an error too, after which the
 * group is unusable: the waiting ranks and the late one (when it comes) get an error, every
 * later collective fails at once, and ff_dist_finalize returns, or, when a rank cannot
 * be unwound (it never comes), aborts the job with a message (docs/distributed.md).
 */
#ifndef FF_DIST_H
#define FF_DIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ff/nn.h"
#include "ff/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ff_dist_reduce {
    FF_DIST_SUM = 0,
    FF_DIST_MEAN, /* float dtypes only */
    FF_DIST_MAX,
    FF_DIST_MIN
} ff_dist_reduce;

bool ff_dist_built_with_mpi(void);
/* Joins the job (MPI_Init_thread, or adopts an MPI the program initialised). Idempotent. */
ff_status ff_dist_init(void);
/* Leaves it (MPI_Finalize if ff_dist_init initialised MPI). Idempotent. */
ff_status ff_dist_finalize(void);
bool ff_dist_is_initialized(void);
int ff_dist_rank(void);       /* 0 before init */
int ff_dist_size(void);       /* 1 before init */
int ff_dist_local_rank(void); /* rank among the processes on this machine */
void ff_dist_set_timeout(double seconds);

ff_status ff_dist_barrier(void);
/* In place on every rank; t has the same dtype and shape everywhere. */
ff_status ff_dist_allreduce(ff_tensor *t, ff_dist_reduce op);
ff_status ff_dist_broadcast(ff_tensor *t, int root);
/* [size, *t's shape], rank r's tensor at index r (a new tensor on t's backend). */
ff_tensor *ff_dist_allgather(const ff_tensor *t);
/* How many collectives (gradient buckets included) this process has run on a backend's
 * own collectives (NCCL) and how many through host memory and MPI; NULL-safe. */
void ff_dist_counts(int64_t *device, int64_t *staged);

/* ---- data parallel ------------------------------------------------------------ */
typedef struct ff_dist_ddp ff_dist_ddp;
/* Wraps m (retained): broadcasts its parameters from rank 0 so every rank starts equal,
 * and hooks each parameter (ff_set_post_accumulate_grad_hook): when backward finishes a
 * bucket's last parameter, that bucket's allreduce starts while backward goes on.
 * bucket_bytes: how many gradient bytes travel in one allreduce (0: 25 MiB, PyTorch's). */
ff_dist_ddp *ff_dist_ddp_new(ff_module *m, size_t bucket_bytes);
/* After backward, before the optimizer step: every parameter's .grad becomes the mean
 * over the ranks (a parameter without a gradient on some rank counts as zeros there and
 * gets one). After several backwards (gradient accumulation) that is the mean of the
 * accumulated .grad, the sum of every micro-batch's gradient, as in PyTorch. */
ff_status ff_dist_ddp_sync_grads(ff_dist_ddp *d);
/* PyTorch's no_sync(): while on, backward starts no reduction (each later backward would
 * otherwise reduce the accumulated .grad again); the sync, or the first backward after it
 * is off, reduces once. Same result, less traffic. Returns the previous setting. */
bool ff_dist_ddp_no_sync(ff_dist_ddp *d, bool on);
/* How many allreduce calls one sync makes (the number of buckets). */
int ff_dist_ddp_num_buckets(const ff_dist_ddp *d);
/* How many of them the last step started during backward (the rest started in sync). */
int ff_dist_ddp_buckets_started_in_backward(const ff_dist_ddp *d);
void ff_dist_ddp_free(ff_dist_ddp *d); /* NULL-safe */

/* ---- sharded sampling ------------------------------------------------------------ */
/* This rank's share of n samples per epoch, as torch's DistributedSampler: the epoch's
 * order (a permutation of 0..n-1 from seed and epoch, the same on every rank, or 0..n-1
 * without shuffle) padded by wrapping around to a multiple of size (drop_last: cut down
 * to one), and every size-th element from this rank's position. */
int64_t ff_dist_shard_size(int64_t n, bool drop_last);
ff_status ff_dist_shard_indices(int64_t n, uint64_t seed, int64_t epoch, bool shuffle, bool drop_last, int64_t *out,
                                int64_t cap);

#ifdef __cplusplus
}
#endif
#endif /* FF_DIST_H */
