"""Device independence of fusionflow.nn.functional (issue 47, items 6 and 7): every entry
point, called on inputs that live on 'cpu_ref' and on 'opencl' while the default device
stays 'cpu' (cpu_blas), must give outputs on the input's device. A helper tensor made
without device= (a range of class ids, a list of row indices) lands on the default device
and the next op raises "tensors live on different backends"; on the default device itself
the fault is invisible, which is why the cpu_blas case is not run here.

The table CALLS gives each public function of F one or more small valid calls; the first
test fails when F gains a function the table lacks, so a new entry point is covered from
the day it is added (or named in NOT_ENTRY_POINTS with a reason)."""
import numpy as np
import pytest

import fusionflow as ff
import fusionflow.nn.functional as F

from conftest import DEVICES  # cpu_ref, and cpu_blas / opencl when they were built



def _device_of(name):  # as tensors report it ('cpu_blas' is Python's 'cpu')
    return ff.zeros(1, device=name).device


DEFAULT = ff.zeros(1).device
OFF_DEFAULT = [d for d in DEVICES if _device_of(d) != DEFAULT]  # where a stray helper shows

NOT_ENTRY_POINTS = {  # public callables of F that are not nn.functional entry points
    "Tensor": "the tensor class, imported by functional.py",
    "as_tensor": "the factory, imported by functional.py",
    "wrap": "the C-pointer wrapper, imported by functional.py",
    "int_arg": "the argument checker, imported by functional.py",
    "pad_index": "pad's index builder for reflect/replicate/circular (reached through pad below)",
}


class Make:
    """Small seeded inputs on one device."""

    def __init__(self, device):
        self.device = device
        self.rng = np.random.RandomState(0)

    def r(self, *shape):  # floats in (-1, 1)
        return ff.tensor(self.rng.uniform(-1, 1, shape).astype(np.float32), device=self.device)

    def p(self, *shape):  # probabilities away from 0 and 1
        return ff.tensor(self.rng.uniform(0.1, 0.9, shape).astype(np.float32), device=self.device)

    def sign(self, *shape):
        return ff.tensor(np.where(self.rng.rand(*shape) < 0.5, -1.0, 1.0).astype(np.float32), device=self.device)

    def i(self, data):
        return ff.tensor(np.asarray(data, np.int64), device=self.device)

    def b(self, data):
        return ff.tensor(np.asarray(data, bool), device=self.device)

    def logp(self, *shape):  # log-probabilities over the last dim
        return self.r(*shape).log_softmax(-1)


def call(*args, **kwargs):
    return args, kwargs


def _pool_indices(m, pool, x, k):
    """(pooled, indices) for the max_unpool calls, made by the pool on m's device."""
    return pool(x, k, return_indices=True)


def _unpool(m, pool, unpool, shape):
    y, idx = _pool_indices(m, pool, m.r(*shape), 2)
    return [call(y, idx, 2)]


def _mha(m, **extra):
    e, w = 4, m.r(12, 4)
    q = m.r(3, 1, e)
    return call(q, q, q, e, 2, w, m.r(12), None, None, False, 0.0, m.r(4, 4), m.r(4), **extra)


CALLS = {  # name -> m -> [(args, kwargs), ...]
    "adaptive_avg_pool1d": lambda m: [call(m.r(1, 2, 4), 2)],
    "adaptive_avg_pool2d": lambda m: [call(m.r(1, 2, 4, 4), 2), call(m.r(1, 2, 5, 5), 3)],
    "adaptive_avg_pool3d": lambda m: [call(m.r(1, 1, 2, 4, 4), 2)],
    "adaptive_max_pool1d": lambda m: [call(m.r(1, 2, 5), 2), call(m.r(1, 2, 4), 2, return_indices=True)],
    "adaptive_max_pool1d_with_indices": lambda m: [call(m.r(1, 2, 5), 2)],
    "adaptive_max_pool2d": lambda m: [call(m.r(1, 2, 5, 5), 2), call(m.r(1, 2, 4, 4), 2, return_indices=True)],
    "adaptive_max_pool2d_with_indices": lambda m: [call(m.r(1, 2, 5, 5), 3)],
    "adaptive_max_pool3d": lambda m: [call(m.r(1, 1, 3, 4, 4), 2)],
    "adaptive_max_pool3d_with_indices": lambda m: [call(m.r(1, 1, 3, 4, 4), 2)],
    "affine_grid": lambda m: [call(m.r(1, 2, 3), [1, 1, 3, 3], align_corners=False),
                              call(m.r(1, 3, 4), [1, 1, 2, 2, 2], align_corners=True)],
    "alpha_dropout": lambda m: [call(m.r(4, 4), 0.5, True)],
    "avg_pool1d": lambda m: [call(m.r(1, 2, 5), 2, padding=1, count_include_pad=False)],
    "avg_pool2d": lambda m: [call(m.r(1, 2, 4, 4), 2), call(m.r(1, 2, 5, 5), 3, 2, 1, divisor_override=2)],
    "avg_pool3d": lambda m: [call(m.r(1, 1, 4, 4, 4), 2)],
    "batch_norm": lambda m: [call(m.r(3, 2), m.r(2), m.p(2), m.r(2), m.r(2), training=True),
                             call(m.r(2, 2, 3), m.r(2), m.p(2))],
    "bilinear": lambda m: [call(m.r(2, 3), m.r(2, 4), m.r(5, 3, 4), m.r(5))],
    "binary_cross_entropy": lambda m: [call(m.p(2, 3), m.p(2, 3), weight=m.p(3)),
                                       call(m.p(4), m.p(4), reduction="none")],
    "binary_cross_entropy_with_logits": lambda m: [call(m.r(2, 3), m.p(2, 3), weight=m.p(3), pos_weight=m.p(3))],
    "celu": lambda m: [call(m.r(2, 3), 0.5)],
    "celu_": lambda m: [call(m.r(2, 3))],
    "channel_shuffle": lambda m: [call(m.r(1, 4, 2, 2), 2)],
    "conv1d": lambda m: [call(m.r(1, 2, 5), m.r(3, 2, 3), m.r(3), padding=1)],
    "conv2d": lambda m: [call(m.r(1, 2, 4, 4), m.r(3, 2, 3, 3), m.r(3), padding="same"),
                         call(m.r(1, 4, 4, 4), m.r(4, 2, 2, 2), None, 2, 0, 1, 2)],
    "conv3d": lambda m: [call(m.r(1, 2, 3, 3, 3), m.r(2, 2, 2, 2, 2), m.r(2))],
    "conv_tbc": lambda m: [call(m.r(5, 1, 2), m.r(3, 2, 4), m.r(4), 1)],
    "conv_transpose1d": lambda m: [call(m.r(1, 2, 4), m.r(2, 3, 3), m.r(3), stride=2)],
    "conv_transpose2d": lambda m: [call(m.r(1, 2, 3, 3), m.r(2, 3, 2, 2), m.r(3), stride=2, output_padding=1)],
    "conv_transpose3d": lambda m: [call(m.r(1, 2, 2, 2, 2), m.r(2, 1, 2, 2, 2))],
    "cosine_embedding_loss": lambda m: [call(m.r(3, 4), m.r(3, 4), m.sign(3), margin=0.2)],
    "cosine_similarity": lambda m: [call(m.r(3, 4), m.r(3, 4))],
    "cross_entropy": lambda m: [call(m.r(3, 4), m.i([0, 2, 3])),
                                call(m.r(3, 4), m.i([0, 2, 3]), weight=m.p(4), ignore_index=2, label_smoothing=0.1),
                                call(m.r(2, 4, 3), m.i([[0, 1, 3], [2, 2, 0]]), reduction="none"),
                                call(m.r(3, 4), m.p(3, 4))],
    "ctc_loss": lambda m: [call(m.logp(5, 2, 4), m.i([[1, 2], [3, 3]]), m.i([5, 4]), m.i([2, 2])),
                           call(m.logp(5, 2, 4), m.i([1, 2, 3]), [5, 5], [2, 1], reduction="none"),
                           call(m.logp(4, 3), m.i([1, 1, 1, 1]), [4], [4], reduction="sum")],
    "dropout": lambda m: [call(m.r(4, 4), 0.5)],
    "dropout1d": lambda m: [call(m.r(2, 3, 4), 0.5)],
    "dropout2d": lambda m: [call(m.r(1, 2, 3, 3), 0.5)],
    "dropout3d": lambda m: [call(m.r(1, 2, 2, 2, 2), 0.5)],
    "elu": lambda m: [call(m.r(2, 3), 0.7)],
    "elu_": lambda m: [call(m.r(2, 3))],
    "embedding": lambda m: [call(m.i([[0, 2], [1, 3]]), m.r(4, 3), padding_idx=0),
                            call(m.i([0, 3]), m.r(4, 3), max_norm=0.5)],
    "embedding_bag": lambda m: [call(m.i([0, 2, 1, 3]), m.r(4, 3), m.i([0, 2])),
                                call(m.i([[0, 2], [1, 3]]), m.r(4, 3), mode="max"),
                                call(m.i([0, 2, 1, 3]), m.r(4, 3), m.i([0, 1]), mode="sum",
                                     per_sample_weights=m.p(4), padding_idx=1)],
    "feature_alpha_dropout": lambda m: [call(m.r(1, 2, 3, 3), 0.5, True)],
    "fold": lambda m: [call(m.r(1, 8, 4), (3, 3), 2)],
    "fractional_max_pool2d": lambda m: [call(m.r(1, 1, 5, 5), 2, output_size=3),
                                        call(m.r(1, 1, 6, 6), 2, output_ratio=0.5, return_indices=True)],
    "fractional_max_pool2d_with_indices": lambda m: [call(m.r(1, 1, 5, 5), 2, output_size=3)],
    "fractional_max_pool3d": lambda m: [call(m.r(1, 1, 5, 5, 5), 2, output_size=3)],
    "fractional_max_pool3d_with_indices": lambda m: [call(m.r(1, 1, 5, 5, 5), 2, output_size=3)],
    "gaussian_nll_loss": lambda m: [call(m.r(2, 3), m.r(2, 3), m.p(2, 3)), call(m.r(2, 3), m.r(2, 3), m.p(2), full=True)],
    "gelu": lambda m: [call(m.r(2, 3)), call(m.r(2, 3), approximate="tanh")],
    "glu": lambda m: [call(m.r(2, 4))],
    "grid_sample": lambda m: [call(m.r(1, 1, 3, 3), m.r(1, 2, 2, 2), align_corners=False),
                              call(m.r(1, 1, 3, 3), m.r(1, 2, 2, 2) * 1.5, mode="nearest", padding_mode="border",
                                   align_corners=True)],
    "group_norm": lambda m: [call(m.r(2, 4, 3), 2, m.r(4), m.r(4))],
    "gumbel_softmax": lambda m: [call(m.r(2, 3)), call(m.r(2, 3), hard=True)],
    "hardshrink": lambda m: [call(m.r(2, 3), 0.3)],
    "hardsigmoid": lambda m: [call(m.r(2, 3) * 4)],
    "hardswish": lambda m: [call(m.r(2, 3) * 4)],
    "hardtanh": lambda m: [call(m.r(2, 3), -0.5, 0.5)],
    "hardtanh_": lambda m: [call(m.r(2, 3))],
    "hinge_embedding_loss": lambda m: [call(m.r(2, 3), m.sign(2, 3))],
    "huber_loss": lambda m: [call(m.r(2, 3), m.r(2, 3), delta=0.3)],
    "instance_norm": lambda m: [call(m.r(2, 3, 4), m.r(3), m.p(3), m.r(3), m.r(3)), call(m.r(2, 3, 2, 2))],
    "interpolate": lambda m: [call(m.r(1, 1, 3, 3), scale_factor=2, mode="bilinear", align_corners=False),
                              call(m.r(1, 1, 3), size=5), call(m.r(1, 1, 2, 2, 2), scale_factor=2, mode="trilinear"),
                              call(m.r(1, 1, 3, 3), size=(4, 5), mode="bicubic", align_corners=True),
                              call(m.r(1, 1, 4, 4), size=3, mode="area"),
                              call(m.r(1, 1, 3), scale_factor=1.5, mode="nearest-exact"),
                              call(m.r(1, 1, 4, 4), size=2, mode="bilinear", antialias=True)],
    "kl_div": lambda m: [call(m.logp(2, 3), m.p(2, 3), reduction="batchmean"),
                         call(m.logp(2, 3), m.logp(2, 3), log_target=True)],
    "l1_loss": lambda m: [call(m.r(2, 3), m.r(2, 3)), call(m.r(2, 3), m.r(2, 3), reduction="none")],
    "layer_norm": lambda m: [call(m.r(2, 3), (3,), m.r(3), m.r(3))],
    "leaky_relu": lambda m: [call(m.r(2, 3), 0.2)],
    "leaky_relu_": lambda m: [call(m.r(2, 3))],
    "linear": lambda m: [call(m.r(2, 3), m.r(4, 3), m.r(4)), call(m.r(3), m.r(3))],
    "local_response_norm": lambda m: [call(m.r(1, 4, 3, 3), 2), call(m.r(1, 3, 4), 3)],
    "log_softmax": lambda m: [call(m.r(2, 3), 1)],
    "logsigmoid": lambda m: [call(m.r(2, 3))],
    "lp_pool1d": lambda m: [call(m.r(1, 2, 4), 2, 2)],
    "lp_pool2d": lambda m: [call(m.r(1, 2, 4, 4), 3.0, 2)],
    "margin_ranking_loss": lambda m: [call(m.r(3), m.r(3), m.sign(3), margin=0.1)],
    "max_pool1d": lambda m: [call(m.r(1, 2, 5), 2), call(m.r(1, 2, 5), 3, 2, 1, return_indices=True)],
    "max_pool1d_with_indices": lambda m: [call(m.r(1, 2, 5), 2)],
    "max_pool2d": lambda m: [call(m.r(1, 2, 4, 4), 2), call(m.r(1, 2, 5, 5), 3, 2, 1, 2, True, True)],
    "max_pool2d_with_indices": lambda m: [call(m.r(1, 2, 4, 4), 2)],
    "max_pool3d": lambda m: [call(m.r(1, 1, 4, 4, 4), 2)],
    "max_pool3d_with_indices": lambda m: [call(m.r(1, 1, 4, 4, 4), 2)],
    "max_unpool1d": lambda m: _unpool(m, F.max_pool1d, F.max_unpool1d, (1, 2, 4)),
    "max_unpool2d": lambda m: _unpool(m, F.max_pool2d, F.max_unpool2d, (1, 2, 4, 4)),
    "max_unpool3d": lambda m: _unpool(m, F.max_pool3d, F.max_unpool3d, (1, 1, 4, 4, 4)),
    "mish": lambda m: [call(m.r(2, 3))],
    "mse_loss": lambda m: [call(m.r(2, 3), m.r(2, 3)), call(m.r(2, 3), m.r(2, 3), reduction="sum")],
    "multi_head_attention_forward": lambda m: [
        _mha(m), _mha(m, key_padding_mask=m.b([[False, False, True]]), attn_mask=m.b(np.triu(np.ones((3, 3)), 1))),
        _mha(m, need_weights=False, is_causal=True, attn_mask=m.b(np.triu(np.ones((3, 3)), 1)))],
    "multi_margin_loss": lambda m: [call(m.r(3, 4), m.i([0, 2, 3])),
                                    call(m.r(3, 4), m.i([0, 2, 3]), p=2, margin=0.7, weight=m.p(4))],
    "multilabel_margin_loss": lambda m: [call(m.r(2, 4), m.i([[1, 1, 3, -1], [0, -1, 0, 0]]))],
    "multilabel_soft_margin_loss": lambda m: [call(m.r(2, 3), m.p(2, 3), weight=m.p(3))],
    "native_channel_shuffle": lambda m: [call(m.r(1, 4, 2, 2), 2)],
    "nll_loss": lambda m: [call(m.logp(3, 4), m.i([0, 2, 3])),
                           call(m.logp(3, 4), m.i([0, 2, 3]), weight=m.p(4), ignore_index=2),
                           call(m.logp(2, 3, 4).movedim(2, 1), m.i([[0, 1, 3], [2, 2, 0]]), reduction="sum")],
    "normalize": lambda m: [call(m.r(2, 3)), call(m.r(2, 3), 1.0, 0)],
    "one_hot": lambda m: [call(m.i([0, 2, 1]), 3), call(m.i([0, 2, 1]))],
    "pad": lambda m: [call(m.r(1, 2, 3), (1, 1)), call(m.r(1, 2, 3), (1, 2), "reflect"),
                      call(m.r(1, 2, 3, 3), (1, 1, 1, 1), "replicate"), call(m.r(1, 2, 3), (1, 1), "circular")],
    "pairwise_distance": lambda m: [call(m.r(3, 4), m.r(3, 4))],
    "pdist": lambda m: [call(m.r(3, 2)), call(m.r(4, 3), 1)],
    "pixel_shuffle": lambda m: [call(m.r(1, 4, 2, 2), 2)],
    "pixel_unshuffle": lambda m: [call(m.r(1, 1, 4, 4), 2)],
    "poisson_nll_loss": lambda m: [call(m.r(2, 3), m.p(2, 3)), call(m.p(2, 3), m.p(2, 3) * 4, log_input=False, full=True)],
    "prelu": lambda m: [call(m.r(1, 2, 3), m.r(2)), call(m.r(2, 3), m.r(1))],
    "relu": lambda m: [call(m.r(2, 3))],
    "relu6": lambda m: [call(m.r(2, 3) * 8)],
    "relu_": lambda m: [call(m.r(2, 3))],
    "rrelu": lambda m: [call(m.r(2, 3)), call(m.r(2, 3), training=True)],
    "rrelu_": lambda m: [call(m.r(2, 3), training=True)],
    "scaled_dot_product_attention": lambda m: [call(m.r(1, 2, 3, 4), m.r(1, 2, 3, 4), m.r(1, 2, 3, 4)),
                                               call(m.r(1, 2, 3, 4), m.r(1, 2, 3, 4), m.r(1, 2, 3, 4), is_causal=True),
                                               call(m.r(1, 3, 4), m.r(1, 3, 4), m.r(1, 3, 4),
                                                    attn_mask=m.b(np.tril(np.ones((3, 3)))))],
    "selu": lambda m: [call(m.r(2, 3))],
    "selu_": lambda m: [call(m.r(2, 3))],
    "sigmoid": lambda m: [call(m.r(2, 3))],
    "silu": lambda m: [call(m.r(2, 3))],
    "smooth_l1_loss": lambda m: [call(m.r(2, 3), m.r(2, 3), beta=0.3), call(m.r(2, 3), m.r(2, 3), beta=0.0)],
    "soft_margin_loss": lambda m: [call(m.r(2, 3), m.sign(2, 3))],
    "softmax": lambda m: [call(m.r(2, 3), 1), call(m.r(2, 3), dim=0, dtype="float64")],
    "softmin": lambda m: [call(m.r(2, 3), 1)],
    "softplus": lambda m: [call(m.r(2, 3)), call(m.r(2, 3), 2.0, 1.0)],
    "softshrink": lambda m: [call(m.r(2, 3), 0.3)],
    "softsign": lambda m: [call(m.r(2, 3))],
    "tanh": lambda m: [call(m.r(2, 3))],
    "tanhshrink": lambda m: [call(m.r(2, 3))],
    "threshold": lambda m: [call(m.r(2, 3), 0.1, 20.0)],
    "threshold_": lambda m: [call(m.r(2, 3), 0.1, 20.0)],
    "triplet_margin_loss": lambda m: [call(m.r(3, 4), m.r(3, 4), m.r(3, 4)),
                                      call(m.r(3, 4), m.r(3, 4), m.r(3, 4), p=1, swap=True)],
    "triplet_margin_with_distance_loss": lambda m: [call(m.r(3, 4), m.r(3, 4), m.r(3, 4), swap=True)],
    "unfold": lambda m: [call(m.r(1, 2, 3, 3), 2), call(m.r(1, 1, 4, 4), 2, padding=1, stride=2)],
    "upsample": lambda m: [call(m.r(1, 1, 2, 2), scale_factor=2)],
    "upsample_bilinear": lambda m: [call(m.r(1, 1, 2, 2), scale_factor=2)],
    "upsample_nearest": lambda m: [call(m.r(1, 1, 2, 2), size=3)],
}


def _public_callables():
    return {n for n in dir(F) if not n.startswith("_") and callable(getattr(F, n))}


def _tensors(out):
    """Every Tensor in a result (nested tuples, lists, dicts)."""
    if isinstance(out, ff.Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _tensors(o)]
    return []


def test_table_covers_every_function():
    names = _public_callables()
    missing = sorted(names - set(CALLS) - set(NOT_ENTRY_POINTS))
    stale = sorted((set(CALLS) | set(NOT_ENTRY_POINTS)) - names)
    assert not missing, "F functions without a call in CALLS (add one): %s" % missing
    assert not stale, "CALLS / NOT_ENTRY_POINTS name what F no longer has: %s" % stale


def test_off_default_devices_are_exercised():
    """The check below means something only where the input's device is not the default."""
    assert "cpu_ref" in OFF_DEFAULT, (DEVICES, DEFAULT)


@pytest.mark.parametrize("device", OFF_DEFAULT)
@pytest.mark.parametrize("name", sorted(CALLS))
def test_outputs_stay_on_the_input_device(name, device):
    m = Make(device)
    want = _device_of(device)
    for k, (args, kwargs) in enumerate(CALLS[name](m)):
        out = getattr(F, name)(*args, **kwargs)
        got = _tensors(out)
        assert got, "%s call %d returned no tensor" % (name, k)
        wrong = [str(t.device) for t in got if t.device != want]
        assert not wrong, "%s call %d on %s gave outputs on %s" % (name, k, device, wrong)
