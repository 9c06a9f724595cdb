"""fusionflow.vision.ops: torchvision.ops' box utilities, NMS and RoIAlign / RoIPool on
fusionflow tensors (autograd flows to the feature map through the pooling ops)."""
from .boxes import (batched_nms, box_area, box_convert, box_iou, clip_boxes_to_image, generalized_box_iou, nms,
                    remove_small_boxes)
from .misc import MLP, Conv2dNormActivation, FrozenBatchNorm2d
from .roi_align import RoIAlign, roi_align
from .roi_pool import RoIPool, roi_pool

__all__ = ["nms", "batched_nms", "box_iou", "box_area", "box_convert", "clip_boxes_to_image", "remove_small_boxes",
           "generalized_box_iou", "roi_align", "RoIAlign", "roi_pool", "RoIPool", "Conv2dNormActivation", "MLP",
           "FrozenBatchNorm2d"]
