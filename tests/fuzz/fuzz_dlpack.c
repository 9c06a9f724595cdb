/* libFuzzer: ff_from_dlpack on DLManagedTensors built from the input bytes (device, dtype,
 * rank, shape, strides, byte offset, all unchecked). Rules checked: an import either
 * succeeds or fails with a message; on failure the producer keeps ownership (the deleter
 * is not called); on success the deleter runs exactly once, when the last tensor over
 * the memory is released. A tensor whose every element lies inside the buffer is read
 * (ASan catches a wrong extent) and exported again (bool excepted: DLPack 0.6 has no bool). */
#include "fuzz_util.h" /* first: it defines _GNU_SOURCE */

#include <stdlib.h>

#include <dlpack/dlpack.h>

#include "ff/ff.h"

static int deleted;
static void deleter(DLManagedTensor *m) { deleted++, (void)m; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_bytes b = {data, size, 0};
    static uint8_t buf[4096] __attribute__((aligned(64)));
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)i;
    int64_t shape[12], strides[12];
    DLManagedTensor m;
    memset(&m, 0, sizeof m);
    m.dl_tensor.data = buf;
    m.dl_tensor.device.device_type = fuzz_u8(&b) < 240 ? kDLCPU : (DLDeviceType)fuzz_range(&b, 0, 20);
    m.dl_tensor.ndim = fuzz_range(&b, -1, 10);
    static const uint8_t codes[] = {kDLInt, kDLUInt, kDLFloat, kDLBfloat, 6 /* kDLBool */, 9};
    m.dl_tensor.dtype.code = codes[fuzz_u8(&b) % sizeof codes];
    m.dl_tensor.dtype.bits = (uint8_t[]){8, 16, 32, 64, 1, 7}[fuzz_u8(&b) % 6];
    m.dl_tensor.dtype.lanes = fuzz_u8(&b) < 250 ? 1 : 2;
    int nd = m.dl_tensor.ndim > 0 ? m.dl_tensor.ndim : 0;
    for (int d = 0; d < nd; d++) shape[d] = fuzz_u8(&b) < 250 ? fuzz_range(&b, 0, 9) : (int64_t)(int32_t)fuzz_u32(&b);
    bool has_strides = fuzz_u8(&b) & 1;
    for (int d = 0; d < nd; d++) strides[d] = fuzz_u8(&b) < 240 ? fuzz_range(&b, 0, 40) : (int64_t)(int32_t)fuzz_u32(&b);
    m.dl_tensor.shape = nd ? shape : NULL;
    m.dl_tensor.strides = has_strides && nd ? strides : NULL;
    m.dl_tensor.byte_offset = fuzz_u8(&b) < 240 ? (uint64_t)fuzz_range(&b, 0, 64) : fuzz_u32(&b);
    m.deleter = deleter;
    deleted = 0;

    ff_tensor *t = ff_from_dlpack(&m);
    if (!t) {
        if (!ff_last_error()[0] || deleted) __builtin_trap(); /* a reason, and ownership stays here */
        return 0;
    }
    /* the extent, from our side of the contract: read it only if it fits the buffer */
    size_t es = ff_dtype_size(ff_tensor_dtype(t));
    int64_t hi = 0, numel = ff_tensor_numel(t);
    bool fits = es > 0;
    for (int d = 0; d < ff_tensor_ndim(t); d++) {
        int64_t s = ff_tensor_strides(t)[d], n = ff_tensor_shape(t)[d];
        int64_t span;
        if (s < 0 || n < 0 || __builtin_mul_overflow(n > 0 ? n - 1 : 0, s, &span) || __builtin_add_overflow(hi, span, &hi))
            fits = false;
    }
    int64_t last_byte = 0; /* exclusive */
    if (fits && (hi > (int64_t)sizeof buf || m.dl_tensor.byte_offset > sizeof buf)) fits = false;
    if (fits) last_byte = (int64_t)m.dl_tensor.byte_offset + (hi + 1) * (int64_t)es;
    if (fits && numel > 0 && last_byte <= (int64_t)sizeof buf && numel <= 4096) {
        void *host = malloc((size_t)numel * es);
        if (host && ff_tensor_to_host(t, host, (size_t)numel * es) != FF_OK) {
            fprintf(stderr, "to_host: %s\n", ff_last_error());
            __builtin_trap();
        }
        free(host);
        DLManagedTensor *out = ff_to_dlpack(t);
        if (!out && (ff_tensor_dtype(t) != FF_BOOL || !ff_last_error()[0])) { /* 0.6 has no bool to export */
            fprintf(stderr, "to_dlpack: %s\n", ff_last_error());
            __builtin_trap();
        }
        if (out) ff_dlpack_free(out);
    }
    ff_tensor_release(t);
    if (deleted != 1) __builtin_trap(); /* exactly once, at the last release */
    return 0;
}
