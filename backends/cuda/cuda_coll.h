/* The collective entries (cuda_coll.c) and the NCCL functions they call, which come from
 * libnccl.so.2 through dlopen, or from tests/cuda_emu's one-rank emulation. Only where
 * nccl.h was found (FF_CUDA_NCCL). */
#ifndef FF_CUDA_COLL_H
#define FF_CUDA_COLL_H

#include <nccl.h>

#include "cuda_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cuda_nccl_api {
    int loaded;
    ncclResult_t (*get_unique_id)(ncclUniqueId *id);
    ncclResult_t (*comm_init_rank)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
    ncclResult_t (*comm_destroy)(ncclComm_t comm);
    ncclResult_t (*all_reduce)(const void *s, void *d, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream);
    ncclResult_t (*broadcast)(const void *s, void *d, size_t n, ncclDataType_t t, int root, ncclComm_t comm,
                              cudaStream_t stream);
    ncclResult_t (*all_gather)(const void *s, void *d, size_t n, ncclDataType_t t, ncclComm_t comm,
                               cudaStream_t stream);
    const char *(*get_error_string)(ncclResult_t r);
    const char *(*get_last_error)(ncclComm_t comm); /* may be NULL */
    ncclResult_t (*get_version)(int *version);
} cuda_nccl_api;

/* The NCCL functions, loaded once; NULL with *why saying what is missing. */
const cuda_nccl_api *cuda_nccl(const char **why);

ff_status cuda_coll_id(void *ctx, void *id, size_t cap, size_t *len);
ff_status cuda_coll_init(void *ctx, const void *id, size_t len, int rank, int size, void **comm);
ff_status cuda_coll_run(void *ctx, void *comm, int op, int arg, int async, const ff_view *dst, const ff_view *src);
ff_status cuda_coll_wait(void *ctx, void *comm);
void cuda_coll_free(void *ctx, void *comm);

#ifdef __cplusplus
}
#endif
#endif /* FF_CUDA_COLL_H */
