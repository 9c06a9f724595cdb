"""Loading libfusionflow and declaring the C functions the package calls.

The library is searched, in order, next to this package (the copy that `pip install .`
bundles, built with this very Python code), at $FUSIONFLOW_LIB (a file path), and in the
source tree's build directory (<repo>/build/lib); the C loader finds the backend plugins
next to whichever library that is. Every function used is declared here with argtypes and
restype; C errors become FusionFlowError carrying the C message (ff_last_error()).
"""
import ctypes
import os
from ctypes import (POINTER, c_bool, c_char_p, c_double, c_int, c_int64, c_long, c_uint32,
                    c_uint64, c_void_p)

__all__ = ["lib", "FusionFlowError", "check_ptr", "check_status", "library_path"]

# ff_status codes (include/ff/backend_abi.h)
FF_OK, FF_ERR_INVALID, FF_ERR_OOM, FF_ERR_OVERFLOW, FF_ERR_UNSUPPORTED = 0, 1, 2, 3, 4
FF_ERR_BACKEND, FF_ERR_INDEX, FF_ERR_AUTOGRAD, FF_ERR_IO = 5, 6, 7, 8


class FusionFlowError(RuntimeError):
    """An error reported by the C library; .status is the ff_status code."""

    def __init__(self, message, status=FF_ERR_INVALID):
        super().__init__(message)
        self.status = status


class FusionFlowIndexError(FusionFlowError, IndexError):
    pass


class FusionFlowValueError(FusionFlowError, ValueError):
    pass


def _candidates():
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "libfusionflow.so")  # installed: the bundled copy, always
    env = os.environ.get("FUSIONFLOW_LIB")
    if env:
        yield env  # a source checkout: an explicit choice, no guessing after it
        return
    repo = os.path.dirname(os.path.dirname(here))
    yield os.path.join(repo, "build", "lib", "libfusionflow.so")


def _load():
    tried = []
    for path in _candidates():
        if os.path.exists(path):
            return ctypes.CDLL(path), path
        tried.append(path)
    raise ImportError("fusionflow: libfusionflow.so not found (tried %s); build it with "
                      "`cmake -S . -B build && cmake --build build` or set FUSIONFLOW_LIB" % ", ".join(tried))


lib, library_path = _load()

T = c_void_p  # ff_tensor *
P64 = POINTER(c_int64)
PINT = POINTER(c_int)


class BackwardOpts(ctypes.Structure):
    _fields_ = [("retain_graph", c_bool), ("create_graph", c_bool)]


# void (*)(const char *name, const char *path, void *user): ff_backend_discover's callback
DiscoverFn = ctypes.CFUNCTYPE(None, c_char_p, c_char_p, c_void_p)
# ff_status (*)(void *user): ff_graph_host_call's callback (include/ff/graph.h)
HostFn = ctypes.CFUNCTYPE(c_int, c_void_p)
# ff_status (*)(const ff_tensor *grad, ff_tensor **replace, void *user): ff_hooked_view's hook
TensorHookFn = ctypes.CFUNCTYPE(c_int, c_void_p, POINTER(c_void_p), c_void_p)


class GraphInfo(ctypes.Structure):
    """ff_graph_info (include/ff/graph.h): what a captured graph holds and does."""
    _fields_ = [(n, c_int64) for n in (
        "kernels_captured", "launches", "constants_hoisted", "fused_groups", "fused_kernels", "fused_by_backend",
        "host_calls", "host_reads", "inputs", "outputs", "intermediates")] + [
        (n, ctypes.c_size_t) for n in ("eager_peak_bytes", "planned_peak_bytes", "arena_bytes", "intermediate_bytes")] + [
        ("in_place", c_int64), ("replays", c_int64),
        ("device_runs", c_int64), ("device_launches", c_int64), ("host_launches", c_int64)]


class Number(ctypes.Structure):
    """ff_number (include/ff/tensor.h): a scalar with its kind, 0 bool, 1 int, 2 float."""
    _fields_ = [("kind", c_int), ("i", c_int64), ("f", c_double)]


# name: (restype, argtypes)
_PROTOS = {
    # errors, dtypes
    "ff_last_error": (c_char_p, []),
    "ff_last_status": (c_int, []),
    "ff_clear_error": (None, []),
    "ff_set_error": (c_int, [c_int, c_char_p, c_char_p]),  # variadic: always called as (code, b"%s", msg)
    # lifecycle, queries
    "ff_tensor_retain": (T, [T]),
    "ff_tensor_release": (None, [T]),
    "ff_tensor_ndim": (c_int, [T]),
    "ff_tensor_shape": (P64, [T]),
    "ff_tensor_strides": (P64, [T]),
    "ff_tensor_offset": (c_int64, [T]),
    "ff_tensor_numel": (c_int64, [T]),
    "ff_tensor_dtype": (c_int, [T]),
    "ff_tensor_backend": (c_void_p, [T]),
    "ff_tensor_is_contiguous": (c_bool, [T]),
    "ff_tensor_shares_storage": (c_bool, [T, T]),
    "ff_tensor_data_ptr": (c_void_p, [T]),
    "ff_tensor_to_host": (c_int, [T, c_void_p, ctypes.c_size_t]),
    "ff_tensor_item": (c_int, [T, POINTER(c_double)]),
    "ff_tensor_item_i64": (c_int, [T, P64]),
    # factories
    "ff_empty": (T, [c_int, P64, c_int]),
    "ff_zeros": (T, [c_int, P64, c_int]),
    "ff_ones": (T, [c_int, P64, c_int]),
    "ff_full": (T, [c_int, P64, c_int, c_double]),
    "ff_full_on": (T, [c_void_p, c_int, P64, c_int, c_double]),
    "ff_scalar_tensor": (T, [c_double, c_int]),
    "ff_from_data": (T, [c_void_p, c_int, P64, c_int]),
    "ff_from_data_on": (T, [c_void_p, c_void_p, c_int, P64, c_int]),
    "ff_empty_like": (T, [T]),
    "ff_zeros_like": (T, [T]),
    "ff_ones_like": (T, [T]),
    "ff_full_like": (T, [T, c_double]),
    "ff_eye": (T, [c_int64, c_int64, c_int]),
    "ff_arange": (T, [c_double, c_double, c_double, c_int]),
    "ff_linspace": (T, [c_double, c_double, c_int64, c_int]),
    "ff_rand_uniform": (T, [c_int, P64, c_int, c_double, c_double, c_uint64]),
    "ff_rand_normal": (T, [c_int, P64, c_int, c_double, c_double, c_uint64]),
    "ff_rand": (T, [c_int, P64, c_int]),
    "ff_randn": (T, [c_int, P64, c_int]),
    "ff_eye_on": (T, [c_void_p, c_int64, c_int64, c_int]),
    "ff_arange_on": (T, [c_void_p, c_double, c_double, c_double, c_int]),
    "ff_linspace_on": (T, [c_void_p, c_double, c_double, c_int64, c_int]),
    "ff_rand_uniform_on": (T, [c_void_p, c_int, P64, c_int, c_double, c_double, c_uint64]),
    "ff_rand_normal_on": (T, [c_void_p, c_int, P64, c_int, c_double, c_double, c_uint64]),
    "ff_rand_on": (T, [c_void_p, c_int, P64, c_int]),
    "ff_randn_on": (T, [c_void_p, c_int, P64, c_int]),
    "ff_astype": (T, [T, c_int]),
    "ff_clone": (T, [T]),
    "ff_detach": (T, [T]),
    "ff_hooked_view": (T, [T, TensorHookFn, c_void_p]),
    "ff_manual_seed": (None, [c_uint64]),
    # views
    "ff_reshape": (T, [T, c_int, P64]),
    "ff_reshape_view": (T, [T, c_int, P64]),
    "ff_permute": (T, [T, PINT]),
    "ff_transpose": (T, [T, c_int, c_int]),
    "ff_mT": (T, [T]),
    "ff_slice": (T, [T, c_int, c_int64, c_int64, c_int64]),
    "ff_select": (T, [T, c_int, c_int64]),
    "ff_narrow": (T, [T, c_int, c_int64, c_int64]),
    "ff_expand": (T, [T, c_int, P64]),
    "ff_broadcast_to": (T, [T, c_int, P64]),
    "ff_squeeze": (T, [T, c_int]),
    "ff_squeeze_all": (T, [T]),
    "ff_unsqueeze": (T, [T, c_int]),
    "ff_flatten": (T, [T, c_int, c_int]),
    "ff_contiguous": (T, [T]),
    # elementwise
    "ff_unary": (T, [c_int, T]),
    "ff_gelu": (T, [T, c_bool]),
    "ff_binary": (T, [c_int, T, T]),
    "ff_add": (T, [T, T]),
    "ff_sub": (T, [T, T]),
    "ff_mul": (T, [T, T]),
    "ff_div": (T, [T, T]),
    # complex tensors (ops/complex.c)
    "ff_view_as_real": (T, [T]),
    "ff_view_as_complex": (T, [T]),
    "ff_real": (T, [T]),
    "ff_imag": (T, [T]),
    "ff_complex": (T, [T, T]),
    "ff_polar": (T, [T, T]),
    "ff_conj": (T, [T]),
    "ff_angle": (T, [T]),
    "ff_neg": (T, [T]),
    "ff_binary_scalar": (T, [c_int, T, c_double]),
    "ff_rbinary_scalar": (T, [c_int, c_double, T]),
    "ff_binary_number": (T, [c_int, T, Number]),
    "ff_rbinary_number": (T, [c_int, Number, T]),
    "ff_number_tensor_on": (T, [c_void_p, Number, c_int]),
    "ff_dtype_promote_number": (c_int, [c_int, Number]),
    "ff_result_type": (c_int, [T, T]),
    "ff_remainder": (T, [T, T]),
    "ff_floor_divide": (T, [T, T]),
    "ff_bitwise_and": (T, [T, T]),
    "ff_bitwise_or": (T, [T, T]),
    "ff_bitwise_xor": (T, [T, T]),
    "ff_bitwise_not": (T, [T]),
    "ff_clamp": (T, [T, T, T]),
    "ff_clamp_number": (T, [T, POINTER(Number), POINTER(Number)]),
    "ff_clip": (T, [T, c_double, c_double]),
    "ff_where": (T, [T, T, T]),
    "ff_lerp": (T, [T, T, c_double]),
    "ff_leaky_relu": (T, [T, c_double]),
    # reductions
    "ff_sum": (T, [T, c_int, PINT, c_bool]),
    "ff_mean": (T, [T, c_int, PINT, c_bool]),
    "ff_prod": (T, [T, c_int, PINT, c_bool]),
    "ff_amax": (T, [T, c_int, PINT, c_bool]),
    "ff_amin": (T, [T, c_int, PINT, c_bool]),
    "ff_argmax": (T, [T, c_int, c_bool]),
    "ff_argmin": (T, [T, c_int, c_bool]),
    "ff_var": (T, [T, c_int, PINT, c_int64, c_bool]),
    "ff_std": (T, [T, c_int, PINT, c_int64, c_bool]),
    "ff_logsumexp": (T, [T, c_int, PINT, c_bool]),
    "ff_any": (T, [T, c_int, PINT, c_bool]),
    "ff_all": (T, [T, c_int, PINT, c_bool]),
    "ff_norm": (T, [T, c_double, c_int, PINT, c_bool]),
    # linear algebra, nn ops
    "ff_matmul": (T, [T, T]),
    "ff_outer": (T, [T, T]),
    "ff_softmax": (T, [T, c_int]),
    "ff_cumsum": (T, [T, c_int]),
    "ff_cumprod": (T, [T, c_int]),
    "ff_argsort": (T, [T, c_int, c_bool]),
    "ff_fft_fft": (T, [T, c_int64, c_int, c_int]),
    "ff_fft_ifft": (T, [T, c_int64, c_int, c_int]),
    "ff_fft_rfft": (T, [T, c_int64, c_int, c_int]),
    "ff_fft_irfft": (T, [T, c_int64, c_int, c_int]),
    "ff_nonzero": (T, [T]),
    "ff_bincount": (T, [T, T, c_int64]),
    "ff_randperm": (T, [c_int64]),
    "ff_matrix_power": (T, [T, c_int64]),
    "ff_solve": (T, [T, T]),
    "ff_inverse": (T, [T]),
    "ff_det": (T, [T]),
    "ff_cholesky": (T, [T, c_bool]),
    "ff_qr": (c_int, [T, c_bool, POINTER(T), POINTER(T)]),
    "ff_svd": (c_int, [T, c_bool, POINTER(T), POINTER(T), POINTER(T)]),
    "ff_lstsq": (T, [T, T]),
    "ff_rnn_cell": (c_int, [c_int, T, T, T, T, T, POINTER(T), POINTER(T)]),
    "ff_rnn_layer": (c_int, [c_int, T, c_int64, POINTER(c_int64), c_bool, T, T, T, T, POINTER(T), POINTER(T),
                             POINTER(T)]),
    "ff_dist_built_with_mpi": (c_bool, []),
    "ff_dist_init": (c_int, []),
    "ff_dist_finalize": (c_int, []),
    "ff_dist_is_initialized": (c_bool, []),
    "ff_dist_rank": (c_int, []),
    "ff_dist_size": (c_int, []),
    "ff_dist_local_rank": (c_int, []),
    "ff_dist_set_timeout": (None, [c_double]),
    "ff_dist_barrier": (c_int, []),
    "ff_dist_allreduce": (c_int, [T, c_int]),
    "ff_dist_broadcast": (c_int, [T, c_int]),
    "ff_dist_allgather": (T, [T]),
    "ff_dist_shard_size": (c_int64, [c_int64, c_bool]),
    "ff_identity": (c_void_p, []),
    "ff_module_register_parameter": (c_int, [c_void_p, c_char_p, T]),
    "ff_module_release": (None, [c_void_p]),
    "ff_dist_ddp_new": (c_void_p, [c_void_p, ctypes.c_size_t]),
    "ff_dist_ddp_sync_grads": (c_int, [c_void_p]),
    "ff_dist_ddp_num_buckets": (c_int, [c_void_p]),
    "ff_dist_ddp_buckets_started_in_backward": (c_int, [c_void_p]),
    "ff_dist_ddp_no_sync": (c_bool, [c_void_p, c_bool]),
    "ff_dist_ddp_free": (None, [c_void_p]),
    "ff_dist_shard_indices": (c_int, [c_int64, c_uint64, c_int64, c_bool, c_bool, P64, c_int64]),
    "ff_einsum": (T, [c_char_p, c_int, POINTER(T)]),
    "ff_searchsorted": (T, [T, T, c_bool]),
    "ff_bucketize": (T, [T, T, c_bool]),
    "ff_multinomial": (T, [T, c_int64, c_bool]),
    "ff_unique": (c_int, [T, POINTER(T), POINTER(T), POINTER(T)]),
    "ff_mode": (c_int, [T, c_int, c_bool, POINTER(T), POINTER(T)]),
    "ff_scatter": (T, [T, c_int, T, T]),
    "ff_interpolate": (T, [T, c_int, P64, POINTER(c_double), c_int, c_bool]),
    "ff_histc": (T, [T, c_int64, c_double, c_double]),
    "ff_sort": (c_int, [T, c_int, c_bool, POINTER(T), POINTER(T)]),
    "ff_topk": (c_int, [T, c_int64, c_int, c_bool, POINTER(T), POINTER(T)]),
    "ff_kthvalue": (c_int, [T, c_int64, c_int, c_bool, POINTER(T), POINTER(T)]),
    "ff_median": (c_int, [T, c_int, c_bool, POINTER(T), POINTER(T)]),
    "ff_log_softmax": (T, [T, c_int]),
    "ff_cross_entropy": (T, [T, T]),
    "ff_mse_loss": (T, [T, T]),
    "ff_one_hot": (T, [T, c_int64]),
    "ff_embedding": (T, [T, T]),
    "ff_gather": (T, [T, c_int, T]),
    "ff_scatter_add": (T, [T, c_int, T, T]),
    "ff_index_select": (T, [T, c_int, T]),
    "ff_index": (T, [T, c_int, POINTER(c_void_p)]),
    "ff_index_put": (T, [T, c_int, POINTER(c_void_p), T, c_bool]),
    "ff_index_put_": (c_int, [T, c_int, POINTER(c_void_p), T, c_bool]),
    "ff_index_add": (T, [T, c_int, T, T, c_double]),
    "ff_index_add_": (c_int, [T, c_int, T, T, c_double]),
    "ff_index_copy": (T, [T, c_int, T, T]),
    "ff_index_copy_": (c_int, [T, c_int, T, T]),
    "ff_masked_fill": (T, [T, T, T]),
    "ff_masked_fill_": (c_int, [T, T, T]),
    "ff_masked_scatter": (T, [T, T, T]),
    "ff_masked_scatter_": (c_int, [T, T, T]),
    "ff_assign": (T, [T, T]),
    "ff_inplace_result_": (c_int, [T, T]),
    "ff_tensor_version": (c_uint64, [T]),
    "ff_dropout": (T, [T, c_double, c_bool, c_uint64]),
    "ff_layer_norm": (T, [T, c_int, T, T, c_double]),
    "ff_linear_act": (T, [T, T, T, c_int]),
    "ff_conv2d": (T, [T, T, T, c_int64, c_int64, c_int64, c_int64]),
    "ff_conv": (T, [T, T, T, c_void_p]),  # the last: ff_conv_opts * (nn/_functional_conv.py)
    "ff_conv_transpose": (T, [T, T, T, c_void_p]),
    "ff_max_pool2d": (T, [T, c_int64, c_int64, c_int64, c_int64, c_int64, c_int64]),
    "ff_avg_pool2d": (T, [T, c_int64, c_int64, c_int64, c_int64, c_int64, c_int64]),
    "ff_batch_norm": (T, [T, T, T, T, T, c_bool, c_double, c_double]),
    "ff_scaled_dot_product_attention": (T, [T, T, T, T, c_double, c_bool, c_double, c_uint64]),
    # int8 quantization (include/ff/quant.h; c_int: ff_qdtype)
    "ff_quantize_per_tensor": (T, [T, c_double, c_int64, c_int]),
    "ff_quantize_per_channel": (T, [T, T, T, c_int, c_int]),
    "ff_dequantize_per_tensor": (T, [T, c_double, c_int64, c_int]),
    "ff_dequantize_per_channel": (T, [T, T, T, c_int, c_int]),
    "ff_quantize_weight_s8": (c_int, [T, POINTER(c_void_p), POINTER(c_void_p)]),
    "ff_linear_dynamic_int8": (T, [T, T, T, T, c_bool]),
    "ff_adaptive_avg_pool": (T, [T, c_int, POINTER(c_int64)]),  # include/ff/pool.h
    "ff_adaptive_max_pool": (T, [T, c_int, POINTER(c_int64), POINTER(c_void_p)]),
    "ff_max_pool": (T, [T, c_int, c_void_p, POINTER(c_void_p)]),  # c_void_p: an ff_pool_options
    "ff_avg_pool": (T, [T, c_int, c_void_p]),
    "ff_unfold": (T, [T, c_void_p]),  # c_void_p: an ff_unfold_params (include/ff/unfold.h)
    "ff_fold": (T, [T, POINTER(c_int64), c_void_p]),
    "ff_grid_sample": (T, [T, T, c_int, c_int, c_bool]),
    "ff_affine_grid": (T, [T, POINTER(c_int64), c_bool]),
    # shape ops
    "ff_concat": (T, [c_int, POINTER(c_void_p), c_int]),
    "ff_stack": (T, [c_int, POINTER(c_void_p), c_int]),
    "ff_split": (c_int, [T, c_int64, c_int, POINTER(c_void_p), c_int]),
    "ff_chunk": (c_int, [T, c_int, c_int, POINTER(c_void_p), c_int]),
    "ff_unbind": (c_int, [T, c_int, POINTER(c_void_p), c_int]),
    "ff_pad": (T, [T, P64, c_double]),
    "ff_flip": (T, [T, c_int, PINT]),
    "ff_tril": (T, [T, c_int64]),
    "ff_triu": (T, [T, c_int64]),
    "ff_repeat": (T, [T, c_int, P64]),
    "ff_tile": (T, [T, c_int, P64]),
    # in place
    "ff_add_": (c_int, [T, T]),
    "ff_sub_": (c_int, [T, T]),
    "ff_mul_": (c_int, [T, T]),
    "ff_div_": (c_int, [T, T]),
    "ff_add_scalar_": (c_int, [T, c_double]),
    "ff_mul_scalar_": (c_int, [T, c_double]),
    "ff_fill_": (c_int, [T, c_double]),
    "ff_zero_": (c_int, [T]),
    "ff_copy_": (c_int, [T, T]),
    "ff_copy_from_host_": (c_int, [T, c_void_p, ctypes.c_size_t]),
    "ff_axpy_": (c_int, [T, c_double, T]),
    # autograd
    "ff_set_requires_grad": (c_int, [T, c_bool]),
    "ff_requires_grad": (c_bool, [T]),
    "ff_is_leaf": (c_bool, [T]),
    "ff_grad": (T, [T]),
    "ff_set_grad": (c_int, [T, T]),
    "ff_zero_grad": (c_int, [T]),
    "ff_grad_fn_name": (c_char_p, [T]),
    "ff_tensor_register_hook": (c_int64, [T, TensorHookFn, c_void_p]),
    "ff_tensor_remove_hook": (c_int, [T, c_int64]),
    "ff_retain_grad": (c_int, [T]),
    "ff_retains_grad": (c_bool, [T]),
    "ff_backward": (c_int, [T, T, POINTER(BackwardOpts)]),
    "ff_autograd_grad": (c_int, [T, T, c_int, POINTER(c_void_p), POINTER(c_void_p), POINTER(BackwardOpts)]),
    "ff_grad_enabled": (c_bool, []),
    "ff_set_grad_enabled": (c_bool, [c_bool]),
    "ff_autocast_set": (c_int, [c_int]),
    "ff_autocast_get": (c_int, []),
    # backends
    "ff_backend_load": (c_void_p, [c_char_p]),
    "ff_backend_default": (c_void_p, []),
    "ff_backend_set_default": (c_int, [c_void_p]),
    "ff_backend_name": (c_char_p, [c_void_p]),
    "ff_backend_version": (c_char_p, [c_void_p]),
    "ff_backend_description": (c_char_p, [c_void_p]),
    "ff_backend_path": (c_char_p, [c_void_p]),
    "ff_backend_discover": (c_int, [DiscoverFn, c_void_p]),
    "ff_backend_flags": (c_uint32, [c_void_p]),
    "ff_backend_dlpack_device": (c_int, [c_void_p, POINTER(ctypes.c_int32), POINTER(ctypes.c_int32)]),
    "ff_backend_sync": (c_int, [c_void_p]),
    "ff_backend_device_info": (c_int, [c_void_p, c_char_p, ctypes.c_size_t]),
    "ff_backend_memory_stats": (c_int, [c_void_p, POINTER(ctypes.c_size_t), POINTER(ctypes.c_size_t),
                                        POINTER(ctypes.c_size_t)]),
    "ff_backend_empty_cache": (c_int, [c_void_p]),
    "ff_backend_count": (c_int, []),
    "ff_backend_at": (c_void_p, [c_int]),
    "ff_to": (T, [T, c_void_p]),
    # io
    "ff_tensor_dict_new": (c_void_p, []),
    "ff_tensor_dict_free": (None, [c_void_p]),
    "ff_tensor_dict_count": (c_int, [c_void_p]),
    "ff_tensor_dict_name": (c_char_p, [c_void_p, c_int]),
    "ff_tensor_dict_tensor": (T, [c_void_p, c_int]),
    "ff_tensor_dict_meta_count": (c_int, [c_void_p]),
    "ff_tensor_dict_meta_key": (c_char_p, [c_void_p, c_int]),
    "ff_tensor_dict_meta_value": (c_char_p, [c_void_p, c_int]),
    "ff_tensor_dict_meta_pack": (ctypes.c_size_t, [c_void_p, c_char_p, ctypes.c_size_t]),
    "ff_safetensors_save": (c_int, [c_char_p, c_int, POINTER(c_char_p), POINTER(c_void_p), POINTER(c_char_p)]),
    "ff_safetensors_load": (c_void_p, [c_char_p, c_uint32]),
    "ff_safetensors_load_on": (c_void_p, [c_void_p, c_char_p, c_uint32]),
    "ff_torch_zip_load": (c_void_p, [c_char_p]),
    "ff_torch_zip_load_on": (c_void_p, [c_void_p, c_char_p]),
    "ff_storage_view": (T, [T, c_int, P64, P64, c_int64]),
    "ff_npy_save": (c_int, [c_char_p, T]),
    "ff_npy_load": (T, [c_char_p]),
    "ff_npy_load_on": (T, [c_void_p, c_char_p]),
    "ff_to_dlpack": (c_void_p, [T]),
    "ff_from_dlpack": (T, [c_void_p]),
    "ff_from_dlpack_on": (T, [c_void_p, c_void_p]),
    "ff_dlpack_free": (None, [c_void_p]),
    "ff_debug_live_tensors": (c_long, []),
    "ff_ops_force_compose": (None, [c_int, c_bool]),  # tests: FF_<OP>=compose without setenv
    # graphs
    "ff_graph_capture_begin": (c_int, []),
    "ff_graph_capture_end": (c_void_p, []),
    "ff_graph_capture_abort": (None, []),
    "ff_graph_is_capturing": (c_bool, []),
    "ff_graph_replay": (c_int, [c_void_p]),
    "ff_graph_replay_with": (c_int, [c_void_p, c_int, POINTER(T), POINTER(T)]),
    "ff_graph_release": (None, [c_void_p]),
    "ff_graph_host_call": (c_int, [HostFn, c_void_p]),
    "ff_graph_stats": (c_int, [c_void_p, POINTER(GraphInfo)]),
    "ff_graph_dump": (c_int, [c_void_p, c_char_p]),
}

missing = []


def _missing(name):
    def stub(*args):
        raise FusionFlowError("%s is not available in %s (this build of the library lacks it)"
                              % (name, library_path), 4)
    return stub


class _Funcs:
    """Namespace of declared C functions (attribute access is cheaper than dict lookups)."""


C = _Funcs()
for _name, (_res, _args) in _PROTOS.items():
    try:
        _f = getattr(lib, _name)
    except AttributeError:
        missing.append(_name)
        setattr(C, _name, _missing(_name))
        continue
    _f.restype = _res
    _f.argtypes = _args
    setattr(C, _name, _f)

_last_error = C.ff_last_error
_last_status = C.ff_last_status


def _load_ext():
    """fusionflow._ffext (python/ext), the C fast paths, from beside the library loaded above
    (build/lib, or the wheel's fusionflow/): built together, so never a mismatched pair.
    None where it was not built or FUSIONFLOW_NO_EXT=1 asks for the pure-ctypes package."""
    import importlib.machinery
    import importlib.util
    if os.environ.get("FUSIONFLOW_NO_EXT", "") not in ("", "0"):
        return None, "ctypes (FUSIONFLOW_NO_EXT set)"
    here = os.path.dirname(library_path)
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(here, "_ffext" + suffix)
        if os.path.exists(path):
            spec = importlib.util.spec_from_file_location("fusionflow._ffext", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            mod.bind_library(lib._handle, error)
            return mod, "C extension (%s)" % path
    return None, "ctypes (no _ffext beside %s)" % library_path


def error():
    """The FusionFlowError for the calling thread's last C error."""
    msg = (_last_error() or b"").decode("utf-8", "replace") or "unknown FusionFlow error"
    st = _last_status()
    if st == FF_ERR_INDEX:
        return FusionFlowIndexError(msg, st)
    if st == FF_ERR_INVALID:
        return FusionFlowValueError(msg, st)
    return FusionFlowError(msg, st)


def check_ptr(p):
    if not p:
        raise error()
    return p


def check_status(st):
    if st:
        raise error()


ext, ext_status = _load_ext()


def shape_array(shape):
    n = len(shape)
    return n, (c_int64 * max(n, 1))(*shape)


def int_array(vals):
    n = len(vals)
    return n, (c_int * max(n, 1))(*vals)
