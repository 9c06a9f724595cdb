"""Box utilities of torchvision.ops.boxes on Tensor[N, 4] (x1, y1, x2, y2) boxes: areas, IoU
matrices, format conversion, clipping, and non-maximum suppression with torchvision's kept
indices and order (ties included)."""
import numpy as np

from ... import Tensor, float32, float64, int32, int64, stack, tensor, zeros
from ._utils import torch_sort_desc_order

__all__ = ["nms", "batched_nms", "remove_small_boxes", "clip_boxes_to_image", "box_convert", "box_area", "box_iou",
           "generalized_box_iou"]


def _check_boxes(where, boxes, last=4):
    if not isinstance(boxes, Tensor):
        raise TypeError("%s: boxes should be a Tensor, got %s" % (where, type(boxes).__name__))
    if boxes.dim() != 2 or boxes.shape[1] != last:
        raise RuntimeError("%s: boxes should be a Tensor[N, %d], got shape %s" % (where, last, tuple(boxes.shape)))


def _upcast(t):
    """Products of coordinates overflow int16/uint8 and lose precision in float16: widen first."""
    if t.is_floating_point():
        return t if t.dtype in (float32, float64) else t.float()
    return t if t.dtype in (int32, int64) else t.int()


def _greedy_keep(boxes, order, iou_threshold):
    """Visit boxes by decreasing score; keep one unless an already kept box overlaps it by more
    than the threshold. Sequential by nature, so it runs over a host copy, one vectorised IoU
    row per kept box, with the float arithmetic of torchvision's CPU kernel (the box dtype
    throughout, the ratio compared against the threshold in double)."""
    b = boxes[order]
    x1, y1, x2, y2 = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    areas = (x2 - x1) * (y2 - y1)
    zero = np.zeros((), dtype=b.dtype)
    suppressed = np.zeros(len(b), dtype=bool)
    keep = []
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in range(len(b)):
            if suppressed[i]:
                continue
            keep.append(i)
            w = np.maximum(zero, np.minimum(x2[i], x2[i + 1:]) - np.maximum(x1[i], x1[i + 1:]))
            h = np.maximum(zero, np.minimum(y2[i], y2[i + 1:]) - np.maximum(y1[i], y1[i + 1:]))
            inter = w * h
            ovr = inter / (areas[i] + areas[i + 1:] - inter)
            suppressed[i + 1:] |= ovr.astype(np.float64) > float(iou_threshold)
    return order[np.asarray(keep, dtype=np.int64)]


def nms(boxes, scores, iou_threshold):
    """Indices (int64) of the boxes kept by non-maximum suppression, by decreasing score; equal
    scores keep their input order, as torchvision's stable sort. Boxes overlapping a kept box
    with IoU > iou_threshold are dropped."""
    _check_boxes("nms", boxes)
    if not isinstance(scores, Tensor) or scores.dim() != 1 or scores.shape[0] != boxes.shape[0]:
        raise RuntimeError("nms: scores should be a Tensor[N] with N = boxes.size(0) = %d, got %s"
                           % (boxes.shape[0], getattr(scores, "shape", type(scores).__name__)))
    if boxes.shape[0] == 0:
        return zeros(0, dtype=int64, device=boxes.device)
    b = boxes.detach().cpu().numpy()
    if b.dtype not in (np.float32, np.float64):
        b = b.astype(np.float32)
    order = np.argsort(-scores.detach().cpu().double().numpy(), kind="stable")
    return tensor(_greedy_keep(b, order, iou_threshold), dtype=int64, device=boxes.device)


def batched_nms(boxes, scores, idxs, iou_threshold):
    """NMS within each category idxs[i]: boxes of different categories never suppress each
    other. As torchvision: up to 4000 coordinates, one NMS over boxes shifted apart per
    category; beyond, one NMS per category, merged by (unstably) sorted score."""
    _check_boxes("batched_nms", boxes)
    if boxes.numel() > 4000:
        return _batched_nms_vanilla(boxes, scores, idxs, iou_threshold)
    return _batched_nms_coordinate_trick(boxes, scores, idxs, iou_threshold)


def _batched_nms_coordinate_trick(boxes, scores, idxs, iou_threshold):
    if boxes.numel() == 0:
        return zeros(0, dtype=int64, device=boxes.device)
    max_coordinate = boxes.max()
    offsets = idxs.to(boxes.dtype) * (max_coordinate + tensor(1).to(boxes.dtype))
    return nms(boxes + offsets[:, None], scores, iou_threshold)


def _batched_nms_vanilla(boxes, scores, idxs, iou_threshold):
    ids = idxs.detach().cpu().numpy()
    keep_mask = np.zeros(len(ids), dtype=bool)
    for class_id in np.unique(ids):
        curr = np.nonzero(ids == class_id)[0]
        curr_t = tensor(curr, dtype=int64, device=boxes.device)
        kept = nms(boxes[curr_t], scores[curr_t], iou_threshold).cpu().numpy()
        keep_mask[curr[kept]] = True
    keep = np.nonzero(keep_mask)[0]
    kept_scores = scores.detach().cpu().numpy()[keep]
    return tensor(keep[torch_sort_desc_order(kept_scores.tolist())], dtype=int64, device=boxes.device)


def remove_small_boxes(boxes, min_size):
    """Indices of the boxes whose sides are both at least min_size."""
    _check_boxes("remove_small_boxes", boxes)
    ws, hs = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    return ((ws >= min_size) & (hs >= min_size)).nonzero().reshape(-1)


def clip_boxes_to_image(boxes, size):
    """Boxes [..., 4] clamped into an image of size (height, width)."""
    if not isinstance(boxes, Tensor) or boxes.dim() < 1 or boxes.shape[-1] != 4:
        raise ValueError("clip_boxes_to_image: boxes should be a Tensor[..., 4], got %s"
                         % (getattr(boxes, "shape", type(boxes).__name__),))
    height, width = size
    xs = boxes[..., 0::2].clamp(min=0, max=width)
    ys = boxes[..., 1::2].clamp(min=0, max=height)
    return stack((xs, ys), dim=boxes.dim()).reshape(boxes.shape)


def _cxcywh_to_xyxy(b):
    cx, cy, w, h = b.unbind(-1)
    return stack((cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h), dim=-1)


def _xyxy_to_cxcywh(b):
    x1, y1, x2, y2 = b.unbind(-1)
    return stack(((x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1), dim=-1)


def _xywh_to_xyxy(b):
    x, y, w, h = b.unbind(-1)
    return stack((x, y, x + w, y + h), dim=-1)


def _xyxy_to_xywh(b):
    x1, y1, x2, y2 = b.unbind(-1)
    return stack((x1, y1, x2 - x1, y2 - y1), dim=-1)


_TO_XYXY = {"xyxy": lambda b: b, "xywh": _xywh_to_xyxy, "cxcywh": _cxcywh_to_xyxy}
_FROM_XYXY = {"xyxy": lambda b: b, "xywh": _xyxy_to_xywh, "cxcywh": _xyxy_to_cxcywh}


def box_convert(boxes, in_fmt, out_fmt):
    """Boxes between 'xyxy' (corners), 'xywh' (corner and size) and 'cxcywh' (centre and size)."""
    if in_fmt not in _TO_XYXY or out_fmt not in _TO_XYXY:
        raise ValueError("Unsupported Bounding Box Conversions for given in_fmt and out_fmt")
    if in_fmt == out_fmt:
        return boxes.clone()
    return _FROM_XYXY[out_fmt](_TO_XYXY[in_fmt](boxes))


def box_area(boxes):
    """Tensor[N] of (x2 - x1) * (y2 - y1)."""
    _check_boxes("box_area", boxes)
    boxes = _upcast(boxes)
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def _inter_union(boxes1, boxes2):
    area1, area2 = box_area(boxes1), box_area(boxes2)
    lt = boxes1[:, None, :2].maximum(boxes2[:, :2])
    rb = boxes1[:, None, 2:].minimum(boxes2[:, 2:])
    wh = _upcast(rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    return inter, area1[:, None] + area2 - inter


def box_iou(boxes1, boxes2):
    """Tensor[N, M] of intersection over union of every pair."""
    _check_boxes("box_iou", boxes1)
    _check_boxes("box_iou", boxes2)
    inter, union = _inter_union(boxes1, boxes2)
    return inter / union


def generalized_box_iou(boxes1, boxes2):
    """IoU minus the share of the enclosing box that the union leaves empty (GIoU, in [-1, 1])."""
    _check_boxes("generalized_box_iou", boxes1)
    _check_boxes("generalized_box_iou", boxes2)
    inter, union = _inter_union(boxes1, boxes2)
    iou = inter / union
    lti = boxes1[:, None, :2].minimum(boxes2[:, :2])
    rbi = boxes1[:, None, 2:].maximum(boxes2[:, 2:])
    whi = _upcast(rbi - lti).clamp(min=0)
    areai = whi[:, :, 0] * whi[:, :, 1]
    return iou - (areai - union) / areai
