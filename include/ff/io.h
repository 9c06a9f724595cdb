/*
 * FusionFlow user API: files and zero-copy exchange.
 *
 *   safetensors  named tensors (a model's state dict) in the safetensors format:
 *                8-byte little-endian header length N, N bytes of JSON
 *                {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]}, ...,
 *                 "__metadata__": {"key": "value"}}, then the raw little-endian row-major
 *                data. Files written by PyTorch's `safetensors` load here and ours load there.
 *   .npy         one tensor in NumPy's format (header versions 1.0, 2.0, 3.0).
 *   DLPack       legacy DLManagedTensor (dlpack.h 0.6), as NumPy 1.24 and PyTorch 1.13 speak.
 *
 * Loading validates the whole file before creating anything and rejects a bad one with
 * FF_ERR_IO (cannot read / truncated) or FF_ERR_INVALID (malformed) and a message naming
 * the file and the problem; no input crashes or leaks. safetensors keeps F16 and BF16
 * (loaded and saved as they are); .npy keeps f16 ('<f2'; NumPy has no bfloat16, so a
 * BF16 tensor is refused there). Saving writes a temporary file next to the target, fsyncs it and
 * renames it over the target, so a crash never leaves a half-written file there.
 * Concurrent saves of one path (threads or processes, e.g. every DDP rank writing the same
 * checkpoint) all succeed; the file is always one whole save, the last to rename. A save
 * killed mid-write leaves nothing where the file system has O_TMPFILE; elsewhere (a named
 * "<path>.tmp.XXXXXX", also forced by FF_IO_NO_O_TMPFILE=1) it leaves that one temporary
 * file, which the next save of the path removes (one per killed save, never more).
 * Same ownership rule as tensor.h: returned tensors are new references.
 */
#ifndef FF_IO_H
#define FF_IO_H

#include "ff/tensor.h"
#include "ff/nn.h"
#include "ff/debug.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- named tensor sets --------------------------------------------------- */
/* An ordered set of (name, tensor) pairs plus optional string metadata. Holds a
 * reference to each tensor. */
typedef struct ff_tensor_dict ff_tensor_dict;

ff_tensor_dict *ff_tensor_dict_new(void);
void ff_tensor_dict_free(ff_tensor_dict *d); /* NULL-safe; releases the tensors */
/* Adds (retains t) or replaces the tensor under name. */
ff_status ff_tensor_dict_set(ff_tensor_dict *d, const char *name, ff_tensor *t);
int ff_tensor_dict_count(const ff_tensor_dict *d);
const char *ff_tensor_dict_name(const ff_tensor_dict *d, int i);       /* borrowed */
ff_tensor *ff_tensor_dict_tensor(const ff_tensor_dict *d, int i);      /* new reference */
ff_tensor *ff_tensor_dict_get(const ff_tensor_dict *d, const char *name); /* new reference; NULL + FF_ERR_INDEX if absent */
bool ff_tensor_dict_contains(const ff_tensor_dict *d, const char *name);
/* String metadata ("__metadata__" in safetensors). */
ff_status ff_tensor_dict_set_meta(ff_tensor_dict *d, const char *key, const char *value);
int ff_tensor_dict_meta_count(const ff_tensor_dict *d);
const char *ff_tensor_dict_meta_key(const ff_tensor_dict *d, int i);   /* borrowed */
const char *ff_tensor_dict_meta_value(const ff_tensor_dict *d, int i); /* borrowed */
const char *ff_tensor_dict_meta_get(const ff_tensor_dict *d, const char *key); /* NULL if absent */
/* All metadata at once, "key0\0value0\0key1\0value1\0..." in order, written to buf when
 * cap is large enough; returns the bytes it needs (like snprintf, without a terminator of
 * its own). One call instead of two per entry: a binding pays per call, and a header may
 * hold millions of entries. Keys and values hold no NUL (the loader refuses them). */
size_t ff_tensor_dict_meta_pack(const ff_tensor_dict *d, char *buf, size_t cap);

/* ---- safetensors --------------------------------------------------------- */
/* Largest JSON header accepted (as the reference implementation). */
#define FF_SAFETENSORS_MAX_HEADER 100000000u

/* Load flags. */
#define FF_IO_MMAP 0x1u /* map the file instead of reading it: on a host-memory backend the
                           tensors view the mapping (private copy-on-write pages, so
                           in-place ops never touch the file) when their data is aligned;
                           otherwise they are copied out of the mapping */

/* Writes n named tensors (any strides, any backend). names must be unique, non-empty
 * and not "__metadata__". metadata is NULL or a NULL-terminated list of alternating
 * keys and values: {"format", "pt", NULL}. */
ff_status ff_safetensors_save(const char *path, int n, const char *const *names, ff_tensor *const *tensors,
                              const char *const *metadata);
/* The same for a dict (its metadata included). */
ff_status ff_safetensors_save_dict(const char *path, const ff_tensor_dict *d);
/* Loads every tensor of the file onto the default backend (or be), in file order. */
ff_tensor_dict *ff_safetensors_load(const char *path, uint32_t flags);
ff_tensor_dict *ff_safetensors_load_on(ff_backend *be, const char *path, uint32_t flags);

/* ---- PyTorch checkpoints ------------------------------------------------- */
/* Reads the tensors of a PyTorch zip checkpoint (torch.save since PyTorch 1.6, the
 * default format) onto the default backend (or be): a state_dict gives its entries by
 * name, in file order; tensors nested deeper (a training checkpoint's "model" and
 * "optimizer") come under dotted names ("model.fc.weight", "optimizer.state.0.exp_avg"),
 * and whatever is not a tensor (epochs, learning rates, strings) is skipped. Tensors
 * that viewed one storage in PyTorch view one storage here. dtypes f32 f64 f16 bf16 i64
 * i32 u8 bool; others are refused (FF_ERR_UNSUPPORTED) naming the storage type.
 * The pickle inside is read by a restricted reader of our own that knows only what a
 * state_dict's pickle holds (containers, numbers, strings, OrderedDict, tensors): a
 * pickle naming any other Python global is refused with FF_ERR_INVALID and nothing of
 * it runs. A truncated or corrupt file is FF_ERR_IO or FF_ERR_INVALID with a message
 * naming the file; sizes are checked against the file before anything is allocated.
 * Needs libzip at build time (Debian libzip-dev); a library built without it returns
 * NULL with FF_ERR_UNSUPPORTED saying so. The legacy (non-zip) format is read by the
 * Python front end only (fusionflow.load). */
ff_tensor_dict *ff_torch_zip_load(const char *path);
ff_tensor_dict *ff_torch_zip_load_on(ff_backend *be, const char *path);
/* A view of t's storage with the given shape, strides (elements, >= 0) and offset
 * (elements from the storage's first element, not t's), without autograd history: the
 * tensor a checkpoint's (storage, offset, size, stride) describes. Refused with
 * FF_ERR_INVALID when it would reach outside the storage. */
ff_tensor *ff_storage_view(const ff_tensor *t, int ndim, const int64_t *shape, const int64_t *strides,
                           int64_t offset);

/* ---- module state dicts ------------------------------------------------ */
/* A module's parameters by dotted name ("0.weight", "fc1.bias"), sharing memory with
 * them, as PyTorch's state_dict(): saved with these names, a model loads across. */
ff_tensor_dict *ff_module_state_dict(const ff_module *m);
/* Copies each entry of d into the parameter of the same name (shapes must match;
 * dtypes are converted), without recording autograd history. strict: every parameter
 * must be in d and every entry of d must name a parameter. */
ff_status ff_module_load_state_dict(ff_module *m, const ff_tensor_dict *d, bool strict);
/* The two above through a safetensors file. */
ff_status ff_module_save_safetensors(const ff_module *m, const char *path);
ff_status ff_module_load_safetensors(ff_module *m, const char *path, bool strict);

/* ---- .npy ---------------------------------------------------------------- */
/* Writes t (any strides/backend) as C-order .npy; dtypes f32 f64 i32 i64 u8 bool. */
ff_status ff_npy_save(const char *path, const ff_tensor *t);
/* Reads a .npy file (<f4 <f8 <i4 <i8 |u1 |b1, C or Fortran order) into a new
 * contiguous tensor. */
ff_tensor *ff_npy_load(const char *path);
ff_tensor *ff_npy_load_on(ff_backend *be, const char *path);

/* ---- DLPack -------------------------------------------------------------- */
/* From <dlpack/dlpack.h>; declared here so users need the header only to use it. */
struct DLManagedTensor;

/* Exports t (any strides) as a DLManagedTensor on kDLCPU. The result holds a reference
 * to t's storage; its deleter releases it exactly once. Refused (FF_ERR_UNSUPPORTED)
 * for backends whose memory is not host memory, and for bool (DLPack 0.6 has no bool
 * type: export t.astype(u8) instead). */
struct DLManagedTensor *ff_to_dlpack(const ff_tensor *t);
/* Imports a kDLCPU DLManagedTensor as a tensor on the default backend (or be). On a
 * host-memory backend the tensor views m's memory without copying and owns m: the
 * deleter runs once, when the last tensor or view over that memory is released. On a
 * device backend (opencl) the values are copied to the device and the deleter runs
 * before the call returns. On failure
 * (NULL returned) m is untouched and still owned by the caller. Strides may be NULL
 * (compact row-major); negative strides and misaligned data are refused. */
ff_tensor *ff_from_dlpack(struct DLManagedTensor *m);
ff_tensor *ff_from_dlpack_on(ff_backend *be, struct DLManagedTensor *m);
/* Calls m's deleter (if any): for a producer-side DLManagedTensor nobody consumed. */
void ff_dlpack_free(struct DLManagedTensor *m);

#ifdef __cplusplus
}
#endif
#endif /* FF_IO_H */
