"""RoIAlign (Mask R-CNN, https://arxiv.org/abs/1703.06870) as torchvision.ops.roi_align: each
output bin averages a grid of bilinearly interpolated samples of the feature map.

Vectorised: the sample coordinates of all RoIs with the same sampling grid are computed at once,
the four bilinear neighbours are gathered from the feature map with index tensors, and weighted
sums pool them. The coordinate arithmetic follows torchvision's CPU kernel in the input dtype;
autograd gives the gradient with respect to the input (the boxes get none, as in torchvision)."""
from ... import Tensor, arange, cat, int64, nn, tensor, where, zeros
from ._utils import check_roi_boxes_shape, convert_boxes_to_roi_format

__all__ = ["roi_align", "RoIAlign"]

_CHUNK = 1 << 23  # gathered elements per step: bounds the memory of large RoI batches


def _pair(v, where):
    if isinstance(v, int):
        return v, v
    if isinstance(v, (tuple, list)) and len(v) == 2 and all(isinstance(x, int) for x in v):
        return tuple(v)
    raise ValueError("%s: output_size should be an int or a pair of ints, got %r" % (where, v))


def as_rois(input, boxes, where):
    """Validated boxes as detached Tensor[K, 5] in the input's dtype."""
    if not isinstance(input, Tensor) or input.dim() != 4:
        raise ValueError("%s: input should be a Tensor[N, C, H, W], got %s"
                         % (where, getattr(input, "shape", type(input).__name__)))
    check_roi_boxes_shape(boxes, where)
    rois = boxes if isinstance(boxes, Tensor) else convert_boxes_to_roi_format(boxes)
    return rois.detach().to(input.dtype).to(input.device)


def _samples(start, bin_size, bins, grid):
    """[G, bins, grid] sample positions along one axis: start + p * bin + (i + .5) * bin / grid."""
    p = arange(bins, device=start.device).to(start.dtype)
    i = arange(grid, device=start.device).to(start.dtype) + 0.5
    return (start[:, None, None] + p[None, :, None] * bin_size[:, None, None]) + \
        (i[None, None, :] * bin_size[:, None, None]) / grid


def _bilinear_axis(coord, size):
    """Neighbour indices and weights along one axis, zero weight outside [-1, size]; past the
    last pixel both neighbours are the last pixel, as torchvision's kernel."""
    valid = ((coord >= -1.0) & (coord <= size)).to(coord.dtype)
    c = coord.clamp(min=0)
    lo = c.floor()
    edge = lo >= size - 1
    lo = where(edge, lo.new_full(lo.shape, size - 1), lo)
    hi = where(edge, lo, lo + 1)
    c = where(edge, lo, c)
    frac = c - lo
    return lo.to(int64), hi.to(int64), (1 - frac) * valid, frac * valid


def _pool_group(flat, rois, start_y, start_x, bin_h, bin_w, ph, pw, gh, gw, height, width):
    """[G, C, ph, pw] for RoIs sharing the sampling grid gh x gw."""
    ylo, yhi, wylo, wyhi = _bilinear_axis(_samples(start_y, bin_h, ph, gh), height)  # [G, ph, gh]
    xlo, xhi, wxlo, wxhi = _bilinear_axis(_samples(start_x, bin_w, pw, gw), width)  # [G, pw, gw]
    base = (rois[:, 0].to(int64) * (height * width))[:, None, None, None, None]
    g, c = rois.shape[0], flat.shape[1]
    acc = None
    for yi, wy in ((ylo, wylo), (yhi, wyhi)):
        for xi, wx in ((xlo, wxlo), (xhi, wxhi)):
            idx = base + yi[:, :, :, None, None] * width + xi[:, None, None, :, :]  # [G, ph, gh, pw, gw]
            w = wy[:, :, :, None, None] * wx[:, None, None, :, :]
            vals = flat[idx.reshape(-1)].reshape(g, ph, gh, pw, gw, c)
            term = (vals * w[..., None]).sum(dim=(2, 4))  # [G, ph, pw, C]
            acc = term if acc is None else acc + term
    return (acc / max(gh * gw, 1)).permute(0, 3, 1, 2)


def roi_align(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=False):
    """Tensor[K, C, oh, ow] of RoI features. boxes: Tensor[K, 5] (batch index, x1, y1, x2, y2) or
    a list of Tensor[L, 4] per image, in input coordinates before spatial_scale. sampling_ratio
    <= 0 samples ceil(roi size / output size) points per bin; aligned=True shifts the boxes by
    -0.5 pixel so that sample points match pixel centres."""
    ph, pw = _pair(output_size, "roi_align")
    rois = as_rois(input, boxes, "roi_align")
    n, c, height, width = input.shape
    k = rois.shape[0]
    if k == 0:
        return zeros((0, c, ph, pw), dtype=input.dtype, device=input.device)
    offset = 0.5 if aligned else 0.0
    x1, y1, x2, y2 = (rois[:, j] * spatial_scale - offset for j in range(1, 5))
    roi_w, roi_h = x2 - x1, y2 - y1
    if not aligned:  # the legacy behaviour: RoIs at least 1x1
        roi_w, roi_h = roi_w.clamp(min=1.0), roi_h.clamp(min=1.0)
    bin_h, bin_w = roi_h / ph, roi_w / pw
    if sampling_ratio > 0:
        grids = [(sampling_ratio, sampling_ratio)] * k
    else:
        grids = list(zip((int(v) for v in bin_h.ceil().tolist()), (int(v) for v in bin_w.ceil().tolist())))

    flat = input.permute(0, 2, 3, 1).reshape(n * height * width, c)
    pieces, order = [], []
    for gh, gw in sorted(set(grids)):
        members = [i for i, grid in enumerate(grids) if grid == (gh, gw)]
        if gh <= 0 or gw <= 0:  # an empty (aligned, inverted) RoI pools nothing
            pieces.append(zeros((len(members), c, ph, pw), dtype=input.dtype, device=input.device))
            order += members
            continue
        step = max(1, _CHUNK // max(1, ph * gh * pw * gw * c))
        for s in range(0, len(members), step):
            part = members[s:s + step]
            sel = tensor(part, dtype=int64, device=rois.device)
            pieces.append(_pool_group(flat, rois[sel], y1[sel], x1[sel], bin_h[sel], bin_w[sel], ph, pw, gh, gw,
                                      height, width))
            order += part
    out = cat(pieces, 0)
    if order != list(range(k)):
        inverse = [0] * k
        for pos, i in enumerate(order):
            inverse[i] = pos
        out = out[tensor(inverse, dtype=int64, device=out.device)]
    return out


class RoIAlign(nn.Module):
    def __init__(self, output_size, spatial_scale, sampling_ratio, aligned=False):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale
        self.sampling_ratio = sampling_ratio
        self.aligned = aligned

    def forward(self, input, rois):
        return roi_align(input, rois, self.output_size, self.spatial_scale, self.sampling_ratio, self.aligned)

    def __repr__(self):
        return "%s(output_size=%s, spatial_scale=%s, sampling_ratio=%s, aligned=%s)" % (
            self.__class__.__name__, self.output_size, self.spatial_scale, self.sampling_ratio, self.aligned)
