/* NCCL for the emulated cuda backend: one rank only, which is all a process without a GPU
 * can check. A group of one reduces, broadcasts and gathers by copying (host memory, as
 * every emulated device buffer); a larger group fails in ncclCommInitRank, the way a
 * machine without NCCL's transport would, so multi-rank tests exercise ff_dist's fallback
 * to MPI staging. Takes the place of cuda_coll.c's dlopen of libnccl.so.2. */
#include <stdlib.h>
#include <string.h>

#include "cuda_coll.h"

struct ncclComm {
    int nranks;
};

static size_t type_size(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
    }
}

static ncclResult_t emu_unique_id(ncclUniqueId *id)
{
    memset(id, 0, sizeof *id);
    memcpy(id->internal, "cuda_emu", 8);
    return ncclSuccess;
}

static ncclResult_t emu_init_rank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    if (memcmp(id.internal, "cuda_emu", 8) || rank != 0) return ncclInvalidArgument;
    if (nranks != 1) return ncclInvalidUsage; /* one process, no transport */
    if (!(*comm = calloc(1, sizeof **comm))) return ncclSystemError;
    (*comm)->nranks = 1;
    return ncclSuccess;
}

static ncclResult_t emu_destroy(ncclComm_t comm)
{
    free(comm);
    return ncclSuccess;
}

static ncclResult_t emu_copy(const void *s, void *d, size_t n, ncclDataType_t t, ncclComm_t comm)
{
    if (!comm) return ncclInvalidArgument;
    if (d != s) memmove(d, s, n * type_size(t));
    return ncclSuccess;
}

static ncclResult_t emu_all_reduce(const void *s, void *d, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm,
                                   cudaStream_t stream)
{
    (void)stream;
    return op > ncclAvg ? ncclInvalidArgument : emu_copy(s, d, n, t, comm); /* one rank: every reduction is a copy */
}

static ncclResult_t emu_broadcast(const void *s, void *d, size_t n, ncclDataType_t t, int root, ncclComm_t comm,
                                  cudaStream_t stream)
{
    (void)stream;
    return root != 0 ? ncclInvalidArgument : emu_copy(s, d, n, t, comm);
}

static ncclResult_t emu_all_gather(const void *s, void *d, size_t n, ncclDataType_t t, ncclComm_t comm,
                                   cudaStream_t stream)
{
    (void)stream;
    return emu_copy(s, d, n, t, comm);
}

static const char *emu_error_string(ncclResult_t r)
{
    return r == ncclInvalidUsage ? "invalid usage (the emulated NCCL has one rank)" : "emulated NCCL error";
}

static ncclResult_t emu_version(int *v)
{
    *v = NCCL_VERSION_CODE;
    return ncclSuccess;
}

static const cuda_nccl_api emu_api = {
    .loaded = 1,
    .get_unique_id = emu_unique_id,
    .comm_init_rank = emu_init_rank,
    .comm_destroy = emu_destroy,
    .all_reduce = emu_all_reduce,
    .broadcast = emu_broadcast,
    .all_gather = emu_all_gather,
    .get_error_string = emu_error_string,
    .get_version = emu_version,
};

const cuda_nccl_api *cuda_nccl(const char **why)
{
    *why = "";
    return &emu_api;
}
