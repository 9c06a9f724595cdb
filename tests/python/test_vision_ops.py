"""fusionflow.vision.ops against torchvision 0.14's ops on the same inputs: NMS kept indices and
their order (scores with ties, duplicate boxes, thresholds at the edges), the box utilities, and
RoIAlign / RoIPool forward and input gradient."""
import numpy as np
import pytest

torchvision = pytest.importorskip("torchvision")
torch = pytest.importorskip("torch")
import torchvision.ops as tvops  # noqa: E402

import fusionflow as ff  # noqa: E402
from fusionflow.vision import ops  # noqa: E402
from fusionflow.vision.ops._utils import torch_sort_desc_order  # noqa: E402


def F(t):
    return ff.from_numpy(t.detach().cpu().numpy().copy())


def random_boxes(n, seed, scale=100.0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    xy = torch.rand(n, 2, generator=g) * scale
    wh = torch.rand(n, 2, generator=g) * scale / 3
    boxes = torch.cat([xy, xy + wh], 1).to(dtype)
    if n > 4:  # exact duplicates and near-duplicates: IoU ties and IoUs right at the threshold
        boxes[n // 2:n // 2 + 2] = boxes[:2]
        boxes[-1] = boxes[0] + 0.5
    return boxes


def tied_scores(n, seed, levels=4):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, levels, (n,), generator=g).float() / levels


@pytest.mark.parametrize("n", [0, 1, 17, 300])
@pytest.mark.parametrize("thr", [0.0, 0.3, 0.5, 0.7, 1.0])
def test_nms_matches_torchvision(n, thr):
    boxes, scores = random_boxes(n, n), tied_scores(n, n + 1)
    ref = tvops.nms(boxes, scores, thr)
    out = ops.nms(F(boxes), F(scores), thr)
    assert out.dtype == ff.int64
    assert out.tolist() == ref.tolist()


def test_nms_float64_and_distinct_scores():
    boxes = random_boxes(200, 5, dtype=torch.float64)
    scores = torch.rand(200, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    assert ops.nms(F(boxes), F(scores), 0.4).tolist() == tvops.nms(boxes, scores, 0.4).tolist()


@pytest.mark.parametrize("n", [0, 40, 300, 1500])  # 1500 boxes: past 4000 coordinates, the per-class path
@pytest.mark.parametrize("thr", [0.2, 0.5])
def test_batched_nms_matches_torchvision(n, thr):
    boxes, scores = random_boxes(n, n + 2), tied_scores(n, n + 3)
    idxs = torch.randint(0, 5, (n,), generator=torch.Generator().manual_seed(n))
    ref = tvops.batched_nms(boxes, scores, idxs, thr)
    assert ops.batched_nms(F(boxes), F(scores), F(idxs), thr).tolist() == ref.tolist()


def test_unstable_sort_order_is_torchs():
    g = torch.Generator().manual_seed(0)
    for n in [0, 1, 5, 16, 17, 40, 999, 2500]:
        values = torch.randint(0, 7, (n,), generator=g).float()
        assert torch_sort_desc_order(values.tolist()) == values.sort(descending=True)[1].tolist()
    values = torch.cat([torch.arange(600.0), torch.arange(600.0).flip(0), torch.zeros(300)])
    assert torch_sort_desc_order(values.tolist()) == values.sort(descending=True)[1].tolist()


def test_nms_rejects_bad_shapes():
    with pytest.raises(RuntimeError, match="nms: boxes"):
        ops.nms(ff.zeros(3, 5), ff.zeros(3), 0.5)
    with pytest.raises(RuntimeError, match="nms: scores"):
        ops.nms(ff.zeros(3, 4), ff.zeros(2), 0.5)


def test_box_iou_area_and_giou_match_torchvision():
    a, b = random_boxes(9, 1), random_boxes(6, 2)
    for name in ("box_iou", "generalized_box_iou"):
        np.testing.assert_allclose(getattr(ops, name)(F(a), F(b)).numpy(), getattr(tvops, name)(a, b).numpy(),
                                   rtol=1e-6, atol=1e-7)
    assert ops.box_area(F(a)).tolist() == tvops.box_area(a).tolist()
    ints = (a * 3).to(torch.int16)  # upcast before the products
    assert ops.box_area(F(ints)).tolist() == tvops.box_area(ints).tolist()
    assert ops.box_iou(F(a), F(b)[:0]).shape == (9, 0)


def test_box_convert_matches_torchvision():
    boxes = random_boxes(7, 3)
    fmts = ("xyxy", "xywh", "cxcywh")
    for i in fmts:
        for o in fmts:
            assert np.array_equal(ops.box_convert(F(boxes), i, o).numpy(), tvops.box_convert(boxes, i, o).numpy())
    with pytest.raises(ValueError, match="Unsupported Bounding Box Conversions"):
        ops.box_convert(F(boxes), "xyxy", "yxyx")


def test_clip_and_remove_small_boxes_match_torchvision():
    boxes = random_boxes(12, 4) - 20
    np.testing.assert_array_equal(ops.clip_boxes_to_image(F(boxes), (40, 55)).numpy(),
                                  tvops.clip_boxes_to_image(boxes, (40, 55)).numpy())
    for min_size in (0.0, 5.0, 12.5, 1e3):
        assert ops.remove_small_boxes(F(boxes), min_size).tolist() == tvops.remove_small_boxes(boxes, min_size).tolist()


# ----------------------------------------------------------------------------------------------
# RoIAlign / RoIPool

BOXES = [  # image 0: inside, crossing the border, tiny, partly outside; image 1: one inverted
    [[1.0, 1.0, 9.0, 7.0], [0.5, 2.2, 14.9, 11.8], [3.0, 3.0, 3.4, 3.2], [-2.0, -3.0, 5.0, 4.0], [10, 8, 20, 20]],
    [[2.0, 1.0, 6.0, 10.0], [7.3, 0.1, 12.8, 5.5], [5.0, 5.0, 2.0, 2.0]],
]


def _roi_inputs():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 12, 15, generator=g)
    box_list = [torch.tensor(b) for b in BOXES]
    return x, box_list, tvops._utils.convert_boxes_to_roi_format(box_list)


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling_ratio", [-1, 2])
@pytest.mark.parametrize("spatial_scale,output_size", [(1.0, (3, 4)), (0.5, 2), (1.7, (5, 5))])
def test_roi_align_matches_torchvision(aligned, sampling_ratio, spatial_scale, output_size):
    x, box_list, rois = _roi_inputs()
    xt = x.clone().requires_grad_(True)
    ref = tvops.roi_align(xt, rois, output_size, spatial_scale, sampling_ratio, aligned)
    grad = torch.randn(ref.shape, generator=torch.Generator().manual_seed(1))
    ref.backward(grad)

    xf = F(x).requires_grad_(True)
    out = ops.roi_align(xf, F(rois), output_size, spatial_scale, sampling_ratio, aligned)
    out.backward(F(grad))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(xf.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-5)

    as_list = ops.roi_align(F(x), [F(b) for b in box_list], output_size, spatial_scale, sampling_ratio, aligned)
    np.testing.assert_allclose(as_list.numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_roi_align_module_and_many_rois():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(3, 4, 20, 24, generator=g)
    xy = torch.rand(60, 2, generator=g) * 40
    boxes = torch.cat([torch.randint(0, 3, (60, 1), generator=g).float(), xy, xy + torch.rand(60, 2, generator=g) * 30],
                      1)
    ref = tvops.RoIAlign((7, 7), 0.5, -1, aligned=True)(x, boxes)
    module = ops.RoIAlign((7, 7), 0.5, -1, aligned=True)
    assert repr(module) == repr(tvops.RoIAlign((7, 7), 0.5, -1, aligned=True))
    np.testing.assert_allclose(module(F(x), F(boxes)).numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)
    assert ops.roi_align(F(x), F(boxes)[:0], 7).shape == (0, 4, 7, 7)


def test_roi_align_rejects_bad_boxes():
    x = ff.zeros(1, 1, 4, 4)
    with pytest.raises(ValueError, match="Tensor\\[K, 5\\]"):
        ops.roi_align(x, ff.zeros(2, 4), 2)
    with pytest.raises(ValueError, match="Tensor\\[L, 4\\]"):
        ops.roi_align(x, [ff.zeros(2, 5)], 2)
    with pytest.raises(TypeError, match="roi_align"):
        ops.roi_align(x, np.zeros((2, 5)), 2)


@pytest.mark.parametrize("spatial_scale,output_size", [(1.0, (3, 4)), (0.5, 2), (1.3, 5)])
def test_roi_pool_matches_torchvision(spatial_scale, output_size):
    x, box_list, rois = _roi_inputs()
    xt = x.clone().requires_grad_(True)
    ref = tvops.roi_pool(xt, rois, output_size, spatial_scale)
    grad = torch.randn(ref.shape, generator=torch.Generator().manual_seed(1))
    ref.backward(grad)
    xf = F(x).requires_grad_(True)
    out = ops.roi_pool(xf, [F(b) for b in box_list], output_size, spatial_scale)
    out.backward(F(grad))
    np.testing.assert_array_equal(out.detach().numpy(), ref.detach().numpy())
    np.testing.assert_allclose(xf.grad.numpy(), xt.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_misc_blocks_match_torchvision():
    from torchvision.ops import misc as tvmisc
    torch.manual_seed(0)
    pairs = [(tvmisc.Conv2dNormActivation(3, 8, 3, stride=2, groups=1), ops.Conv2dNormActivation(3, 8, 3, stride=2)),
             (tvmisc.Conv2dNormActivation(3, 6, 5, norm_layer=None, activation_layer=torch.nn.ReLU6),
              ops.Conv2dNormActivation(3, 6, 5, norm_layer=None, activation_layer=ff.nn.ReLU6))]
    x = torch.randn(2, 3, 9, 9)
    for tm, fm in pairs:
        assert list(fm.state_dict()) == list(tm.state_dict())
        fm.load_state_dict({k: F(v) for k, v in tm.state_dict().items()})
        with torch.no_grad():
            ref = tm.eval()(x)
        np.testing.assert_allclose(fm.eval()(F(x)).numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)
    tm, fm = tvmisc.MLP(4, [8, 3], dropout=0.1), ops.MLP(4, [8, 3], dropout=0.1)
    assert list(fm.state_dict()) == list(tm.state_dict())
    bn = torch.nn.BatchNorm2d(3)
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.uniform_(0.5, 2)
    frozen = ops.FrozenBatchNorm2d(3)
    frozen.load_state_dict({k: F(v) for k, v in bn.state_dict().items()})  # num_batches_tracked dropped
    with torch.no_grad():
        ref = bn.eval()(x)
    np.testing.assert_allclose(frozen(F(x)).numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)
