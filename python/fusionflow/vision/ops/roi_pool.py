"""RoIPool (Fast R-CNN) as torchvision.ops.roi_pool: the max of each bin of the rounded RoI.

Each bin is a window of whole pixels; windows are gathered padded to the largest one of the
RoI group and reduced with an argmax (the first maximum in row-major order, as torchvision's
kernel picks), so autograd sends each bin's gradient to that one pixel."""
from ... import arange, int64, nn, zeros
from .roi_align import _pair, as_rois

__all__ = ["roi_pool", "RoIPool"]


def _round_half_away(t):
    return t.sign() * (t.abs() + 0.5).floor()


def _windows(start, length, bins, size):
    """Per RoI and bin: first pixel [G, bins] and the number of pixels, clipped to [0, size]."""
    bin_size = length / bins
    p = arange(bins, device=start.device).to(bin_size.dtype)
    lo = (p[None, :] * bin_size[:, None]).floor() + start[:, None]
    hi = ((p[None, :] + 1) * bin_size[:, None]).ceil() + start[:, None]
    lo, hi = lo.clamp(0, size), hi.clamp(0, size)
    return lo.to(int64), (hi - lo).clamp(min=0).to(int64)


def roi_pool(input, boxes, output_size, spatial_scale=1.0):
    """Tensor[K, C, oh, ow]; boxes as for roi_align. Empty bins give 0."""
    ph, pw = _pair(output_size, "roi_pool")
    rois = as_rois(input, boxes, "roi_pool")
    n, c, height, width = input.shape
    k = rois.shape[0]
    if k == 0:
        return zeros((0, c, ph, pw), dtype=input.dtype, device=input.device)
    x1, y1, x2, y2 = (_round_half_away(rois[:, j] * spatial_scale) for j in range(1, 5))
    hs, hn = _windows(y1, (y2 - y1 + 1).clamp(min=1).to(input.dtype), ph, height)
    ws, wn = _windows(x1, (x2 - x1 + 1).clamp(min=1).to(input.dtype), pw, width)
    lh, lw = max(1, int(hn.max())), max(1, int(wn.max()))
    flat = input.permute(0, 2, 3, 1).reshape(n * height * width, c)

    dh = arange(lh, device=input.device)
    dw = arange(lw, device=input.device)
    rows = (hs[:, :, None] + dh).clamp(max=height - 1)  # [K, ph, lh]
    cols = (ws[:, :, None] + dw).clamp(max=width - 1)  # [K, pw, lw]
    inside = (dh[None, None, :] < hn[:, :, None])[:, :, None, :, None] & \
        (dw[None, None, :] < wn[:, :, None])[:, None, :, None, :]  # [K, ph, pw, lh, lw]
    base = rois[:, 0].to(int64) * (height * width)
    idx = base[:, None, None, None, None] + rows[:, :, None, :, None] * width + cols[:, None, :, None, :]
    vals = flat[idx.reshape(-1)].reshape(k, ph, pw, lh * lw, c)
    masked = vals.masked_fill(~inside.reshape(k, ph, pw, lh * lw, 1), float("-inf"))
    best = masked.argmax(dim=3, keepdim=True)  # first maximum, row-major in the window
    out = vals.gather(3, best).squeeze(3)  # [K, ph, pw, C]
    empty = ((hn[:, :, None] == 0) | (wn[:, None, :] == 0))[..., None]
    out = out.masked_fill(empty, 0.0)
    return out.permute(0, 3, 1, 2)


class RoIPool(nn.Module):
    def __init__(self, output_size, spatial_scale):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale

    def forward(self, input, rois):
        return roi_pool(input, rois, self.output_size, self.spatial_scale)

    def __repr__(self):
        return "%s(output_size=%s, spatial_scale=%s)" % (self.__class__.__name__, self.output_size,
                                                         self.spatial_scale)

