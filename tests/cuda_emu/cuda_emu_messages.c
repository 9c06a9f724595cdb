/* What backends/cuda/cuda_backend.c provides to the other files, for the host unit tests
 * that compile one of them alone (test_cuda_mem, test_cuda_matmul): messages land in
 * cuda_emu_last_msg, the device is always current. */
#include <stdarg.h>
#include <stdio.h>

#include "cuda_impl.h"

char cuda_emu_last_msg[512];

ff_status cuda_error(cuda_ctx *c, ff_status st, const char *fmt, ...)
{
    (void)c;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cuda_emu_last_msg, sizeof cuda_emu_last_msg, fmt, ap);
    va_end(ap);
    return st;
}

ff_status cuda_fail(cuda_ctx *c, const char *entry, const char *call, cudaError_t err)
{
    return cuda_error(c, FF_ERR_BACKEND, "cuda %s: %s failed: %d", entry, call, (int)err);
}

ff_status cuda_use_device(cuda_ctx *c, const char *entry)
{
    (void)c, (void)entry;
    return FF_OK;
}
