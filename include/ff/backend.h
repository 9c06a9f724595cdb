/*
 * FusionFlow user API: backends and the plugin loader.
 *
 * FF_BACKEND=<name>|<path.so> picks the default backend; unset, it is the fastest one
 * built: "cpu_blas" when its plugin is there, else the reference "cpu" (never a device
 * backend). A name resolves to libff_backend_<name>.so searched in FF_BACKEND_PATH
 * (colon-separated), then in the directory holding libfusionflow itself. Every failure is
 * an error, never a silent fallback to another backend.
 */
#ifndef FF_BACKEND_H
#define FF_BACKEND_H

#include "ff/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Loads (or returns the already-loaded) backend by name or path. The backend stays
 * loaded until ff_shutdown(). NULL on error with a message naming the file. */
ff_backend *ff_backend_load(const char *name_or_path);
/* The default backend, loaded on first use: FF_BACKEND, else "cpu_blas" when its plugin
 * is there, else the reference "cpu". NULL on error (an FF_BACKEND that fails never falls
 * back). */
ff_backend *ff_backend_default(void);
/* Makes be the default for factories (per process). */
ff_status ff_backend_set_default(ff_backend *be);

const char *ff_backend_name(const ff_backend *be);
const char *ff_backend_version(const ff_backend *be);
const char *ff_backend_description(const ff_backend *be);
const char *ff_backend_path(const ff_backend *be); /* file it was loaded from */
uint32_t ff_backend_flags(const ff_backend *be);
int ff_backend_abi_version(const ff_backend *be);
/* The rules step the backend is held to (backend_abi.h, "Rules steps"): its abi_step,
 * FF_ABI_STEP_UNSTATED if it states none, at most FF_ABI_STEP; -1 for NULL. */
int ff_backend_abi_step(const ff_backend *be);
/* Whether the backend computes (kind, op, dtype); see ff_op_kind. */
bool ff_backend_supports(const ff_backend *be, ff_op_kind kind, int op, ff_dtype dtype);
bool ff_backend_has_softmax(const ff_backend *be);
/* All three optional conv2d entries are there (forward and both backward passes). */
bool ff_backend_has_conv2d(const ff_backend *be);
/* One line describing the backend's device ("OpenCL: <device> on <platform>, ..."), or
 * "host memory" for a backend without the optional device_info entry. Writes at most
 * cap bytes (NUL-terminated). */
ff_status ff_backend_device_info(const ff_backend *be, char *buf, size_t cap);
ff_status ff_backend_sync(ff_backend *be);
/* DLPack's (device_type, device_id) of be's memory: (kDLCPU = 1, 0) for a host-memory
 * backend, the backend's own answer for a device backend with the optional dlpack_device
 * entry (which also waits for the device to finish its work), FF_ERR_UNSUPPORTED else. */
ff_status ff_backend_dlpack_device(ff_backend *be, int32_t *device_type, int32_t *device_id);
ff_status ff_backend_memory_stats(ff_backend *be, size_t *in_use, size_t *cached, size_t *peak);
ff_status ff_backend_empty_cache(ff_backend *be);

/* Loaded backends, in load order. */
int ff_backend_count(void);
ff_backend *ff_backend_at(int i);

/* Names of backend plugins found on the search path (without loading them).
 * Calls fn(name, path, user) for each; returns how many were found. */
int ff_backend_discover(void (*fn)(const char *name, const char *path, void *user), void *user);

/* Copies t to another backend (through host memory if needed). Returns t retained
 * if it already lives there. Differentiable. */
ff_tensor *ff_to(const ff_tensor *t, ff_backend *be);

/* ---- backend memory owned elsewhere ------------------------------------- */
/* A tensor over buf, memory that backend be holds for someone else (a framework's
 * allocator that got it from be, as the PyTorch device does; for a host-memory backend,
 * any host memory): shape, strides and offset in elements of dtype, every element inside
 * nbytes. The storage never frees buf: release(ctx) runs once, when the last view over it
 * is gone (release may be NULL: the caller keeps buf alive longer than every view). */
ff_tensor *ff_tensor_from_buffer(ff_backend *be, void *buf, size_t nbytes, ff_dtype dtype, int ndim,
                                 const int64_t *shape, const int64_t *strides, int64_t offset,
                                 void (*release)(void *ctx), void *ctx);
/* The backend handle of t's storage (its first byte, not t's first element: add
 * ff_tensor_offset elements) and, when nbytes is not NULL, its size. NULL for NULL. */
void *ff_tensor_buffer(const ff_tensor *t, size_t *nbytes);

/* Unloads every backend. Tensors must all be released first. */
void ff_shutdown(void);

#ifdef __cplusplus
}
#endif
#endif /* FF_BACKEND_H */
