"""torchvision.utils' make_grid, save_image and draw_bounding_boxes, on fusionflow tensors
(the drawing and the image files through PIL)."""
import math
import pathlib
import warnings

import numpy as np
from PIL import Image, ImageColor, ImageDraw, ImageFont

import fusionflow as ff

__all__ = ["make_grid", "save_image", "draw_bounding_boxes"]


def _batch(fn, tensor):
    """tensor (or a list of same-sized images) as a 4-D batch [B, C, H, W], one channel made three."""
    if isinstance(tensor, list):
        for t in tensor:
            if not isinstance(t, ff.Tensor):
                raise TypeError("%s: tensor or list of tensors expected, got a list containing %s"
                                % (fn, type(t).__name__))
        tensor = ff.stack(tensor, dim=0)
    elif not isinstance(tensor, ff.Tensor):
        raise TypeError("%s: tensor or list of tensors expected, got %s" % (fn, type(tensor).__name__))
    if tensor.dim() == 2:  # one H x W image
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 3:  # one C x H x W image
        if tensor.shape[0] == 1:
            tensor = ff.cat((tensor, tensor, tensor), 0)
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 4 and tensor.shape[1] == 1:
        tensor = ff.cat((tensor, tensor, tensor), 1)
    return tensor


def _normalized(t, value_range):
    """t clamped to value_range (default: t's own min and max) and mapped onto [0, 1]."""
    low, high = value_range if value_range is not None else (float(t.min()), float(t.max()))
    return (t.clamp(min=low, max=high) - low) / max(high - low, 1e-5)


def make_grid(tensor, nrow=8, padding=2, normalize=False, value_range=None, scale_each=False, pad_value=0.0, **kwargs):
    """The images of a batch [B, C, H, W] (or a list of [C, H, W]) tiled nrow to a row, with
    `padding` pixels of pad_value around each; normalize maps value_range (or the min and max:
    of each image with scale_each, else of all) onto [0, 1]. One image comes back as it is."""
    with ff.no_grad():
        tensor = _batch("make_grid", tensor)
        if normalize is True:
            if value_range is not None and not isinstance(value_range, tuple):
                raise TypeError("make_grid: value_range has to be a tuple (min, max) if specified. min and max are "
                                "numbers; got %r" % (value_range,))
            if scale_each is True:
                tensor = ff.stack([_normalized(t, value_range) for t in tensor], 0)
            else:
                tensor = _normalized(tensor, value_range)
        if tensor.shape[0] == 1:
            return tensor.squeeze(0)
        count, channels = tensor.shape[0], tensor.shape[1]
        xmaps = min(nrow, count)
        ymaps = int(math.ceil(float(count) / xmaps))
        height, width = int(tensor.shape[2] + padding), int(tensor.shape[3] + padding)
        grid = ff.full((channels, height * ymaps + padding, width * xmaps + padding), pad_value, dtype=tensor.dtype)
        for k in range(count):
            y, x = divmod(k, xmaps)
            grid[:, y * height + padding:(y + 1) * height, x * width + padding:(x + 1) * width] = tensor[k]
        return grid


def save_image(tensor, fp, format=None, **kwargs):
    """Writes make_grid(tensor, **kwargs) as an image (by fp's extension unless format is given):
    values in [0, 1] scaled to 0..255, rounded to nearest."""
    with ff.no_grad():
        grid = make_grid(tensor, **kwargs)
        pixels = (grid * 255 + 0.5).clamp(0, 255).permute(1, 2, 0).to(ff.uint8).numpy()
    if isinstance(fp, pathlib.Path):
        fp = str(fp)
    Image.fromarray(pixels).save(fp, format=format)


def _color_palette(count):
    """torchvision's default box colours: i * (2^25 - 1, 2^15 - 1, 2^21 - 1) mod 255."""
    return [tuple((i * p) % 255 for p in (2 ** 25 - 1, 2 ** 15 - 1, 2 ** 21 - 1)) for i in range(count)]


def draw_bounding_boxes(image, boxes, labels=None, colors=None, fill=False, width=1, font=None, font_size=None):
    """image (uint8 [1 or 3, H, W]) with the boxes (N x 4, xmin ymin xmax ymax, in pixels) drawn
    by PIL, each in its colour (default: torchvision's palette), filled at alpha 100 with fill,
    labelled in PIL's default font (or the TrueType `font`); returns uint8 [3, H, W]."""
    if not isinstance(image, ff.Tensor):
        raise TypeError("draw_bounding_boxes: Tensor expected, got %s" % type(image).__name__)
    if image.dtype != ff.uint8:
        raise ValueError("draw_bounding_boxes: Tensor uint8 expected, got %s" % image.dtype)
    if image.dim() != 3:
        raise ValueError("draw_bounding_boxes: Pass individual images, not batches (got shape %s)"
                         % (tuple(image.shape),))
    if image.shape[0] not in (1, 3):
        raise ValueError("draw_bounding_boxes: Only grayscale and RGB images are supported (got %d channels)"
                         % image.shape[0])
    box_list = np.asarray(boxes.numpy() if isinstance(boxes, ff.Tensor) else boxes, dtype=np.float64).reshape(-1, 4)
    if (box_list[:, 0] > box_list[:, 2]).any() or (box_list[:, 1] > box_list[:, 3]).any():
        raise ValueError("draw_bounding_boxes: Boxes need to be in (xmin, ymin, xmax, ymax) format. Use "
                         "torchvision.ops.box_convert to convert them")
    count = len(box_list)
    if count == 0:
        warnings.warn("boxes doesn't contain any box. No box was drawn")
        return image
    if labels is None:
        labels = [None] * count
    elif len(labels) != count:
        raise ValueError("draw_bounding_boxes: Number of boxes (%d) and labels (%d) mismatch. Please specify labels "
                         "for each box." % (count, len(labels)))
    if colors is None:
        colors = _color_palette(count)
    elif isinstance(colors, list):
        if len(colors) < count:
            raise ValueError("draw_bounding_boxes: Number of colors (%d) is less than number of boxes (%d). "
                             % (len(colors), count))
    else:
        colors = [colors] * count
    colors = [ImageColor.getrgb(c) if isinstance(c, str) else tuple(c) for c in colors]
    if font is None:
        if font_size is not None:
            warnings.warn("Argument 'font_size' will be ignored since 'font' is not set.")
        txt_font = ImageFont.load_default()
    else:
        txt_font = ImageFont.truetype(font=font, size=font_size or 10)
    arr = image.numpy().transpose(1, 2, 0)
    canvas = Image.fromarray(np.array(np.broadcast_to(arr, arr.shape[:2] + (3,)), dtype=np.uint8))
    draw = ImageDraw.Draw(canvas, "RGBA") if fill else ImageDraw.Draw(canvas)
    for box, color, label in zip(box_list.astype(np.int64).tolist(), colors, labels):
        draw.rectangle(box, width=width, outline=color, fill=color + (100,) if fill else None)
        if label is not None:
            draw.text((box[0] + width + 1, box[1] + width + 1), label, fill=color, font=txt_font)
    return ff.from_numpy(np.array(canvas).transpose(2, 0, 1).copy())
