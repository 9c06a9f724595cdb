/*
 * supports() for the optional entries the in-tree host-memory backends (cpu, cpu_blas)
 * both implement on the shared helpers of this folder: scan, argsort, linalg, fft,
 * batch_norm, layer_norm, pool2d and fused. One answer for both, so they cannot drift apart (and
 * test_cpu_blas_vs_cpu checks that every supports() answer agrees). Header-only.
 */
#ifndef FF_BACKEND_HOST_ENTRIES_H
#define FF_BACKEND_HOST_ENTRIES_H

#include "ff_backend_fft.h"
#include "ff_backend_fused.h"
#include "ff_backend_layer_norm.h"
#include "ff_backend_linalg.h"
#include "ff_backend_lines.h"
#include "ff_backend_norm.h"
#include "ff_backend_pool.h"

/* 1 if (kind, op, dtype) is one of those entries' supported cases, else 0. */
static inline int ffb_host_entry_supported(ff_op_kind kind, int op, ff_dtype t)
{
    switch (kind) {
    case FF_KIND_SCAN: return ffb_scan_supported(op, t);
    case FF_KIND_SORT: return ffb_sort_supported(op, t);
    case FF_KIND_LINALG: return ffb_linalg_supported(op, t);
    case FF_KIND_FFT: return ffb_fft_supported(op, t);
    case FF_KIND_BATCH_NORM: return ffb_batch_norm_supported(op, t);
    case FF_KIND_LAYER_NORM: return ffb_layer_norm_supported(op, t);
    case FF_KIND_POOL2D: return ffb_pool2d_supported(op, t);
    case FF_KIND_FUSED: return ffb_fused_supported(op, t);
    default: return 0;
    }
}

#endif /* FF_BACKEND_HOST_ENTRIES_H */
