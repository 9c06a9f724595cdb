"""Helpers of the box and RoI ops: the box-list -> [K, 5] rois conversion, and the index order
torch's (unstable) CPU sort gives, which batched_nms's per-class path inherits."""
from ... import Tensor, cat, full

__all__ = ["convert_boxes_to_roi_format", "check_roi_boxes_shape", "torch_sort_desc_order"]


def check_roi_boxes_shape(boxes, where):
    if isinstance(boxes, (list, tuple)):
        for b in boxes:
            if not isinstance(b, Tensor) or b.dim() != 2 or b.shape[1] != 4:
                raise ValueError("%s: the boxes in a list should be Tensor[L, 4], got %s"
                                 % (where, getattr(b, "shape", type(b).__name__)))
    elif isinstance(boxes, Tensor):
        if boxes.dim() != 2 or boxes.shape[1] != 5:
            raise ValueError("%s: boxes should be a Tensor[K, 5] (batch index, x1, y1, x2, y2), got shape %s"
                             % (where, tuple(boxes.shape)))
    else:
        raise TypeError("%s: boxes should be a Tensor[K, 5] or a list of Tensor[L, 4], got %s"
                        % (where, type(boxes).__name__))


def convert_boxes_to_roi_format(boxes):
    """[Tensor[L_i, 4]] per image -> Tensor[K, 5] with the image index in column 0."""
    if not boxes:
        raise ValueError("convert_boxes_to_roi_format: expected at least one Tensor of boxes, got an empty list")
    ids = [full((b.shape[0], 1), i, dtype=b.dtype, device=b.device) for i, b in enumerate(boxes)]
    return cat([cat(ids, 0), cat(list(boxes), 0)], 1)


def torch_sort_desc_order(values):
    """The permutation torch.sort(values, descending=True) returns on CPU (stable=False): that is
    libstdc++'s std::sort (introsort: median-of-3 quicksort down to runs of 16, heapsort past the
    depth limit, a final insertion sort), whose order of tied values is its own. Reproduced step
    by step so that tied scores come out in torchvision's order."""
    a = [(v, i) for i, v in enumerate(values)]

    def before(x, y):  # the comparator: greater first, NaN before everything
        return (x[0] != x[0] and y[0] == y[0]) or x[0] > y[0]

    def median_to_first(r, x, y, z):
        if before(a[x], a[y]):
            m = y if before(a[y], a[z]) else z if before(a[x], a[z]) else x
        else:
            m = x if before(a[x], a[z]) else z if before(a[y], a[z]) else y
        a[r], a[m] = a[m], a[r]

    def partition(lo, hi, pivot):
        while True:
            while before(a[lo], a[pivot]):
                lo += 1
            hi -= 1
            while before(a[pivot], a[hi]):
                hi -= 1
            if not lo < hi:
                return lo
            a[lo], a[hi] = a[hi], a[lo]
            lo += 1

    def adjust_heap(first, hole, length, value):
        top, child = hole, hole
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if before(a[first + child], a[first + child - 1]):
                child -= 1
            a[first + hole] = a[first + child]
            hole = child
        if length % 2 == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            a[first + hole] = a[first + child - 1]
            hole = child - 1
        parent = (hole - 1) // 2
        while hole > top and before(a[first + parent], value):
            a[first + hole] = a[first + parent]
            hole = parent
            parent = (hole - 1) // 2
        a[first + hole] = value

    def heap_sort(first, last):
        length = last - first
        for parent in range((length - 2) // 2, -1, -1):
            adjust_heap(first, parent, length, a[first + parent])
        while last - first > 1:
            last -= 1
            value, a[last] = a[last], a[first]
            adjust_heap(first, 0, last - first, value)

    def introsort(lo, hi, depth):
        while hi - lo > 16:
            if depth == 0:
                heap_sort(lo, hi)
                return
            depth -= 1
            median_to_first(lo, lo + 1, lo + (hi - lo) // 2, hi - 1)
            cut = partition(lo + 1, hi, lo)
            introsort(cut, hi, depth)
            hi = cut

    def linear_insert(i):
        value, j = a[i], i - 1
        while before(value, a[j]):
            a[i] = a[j]
            i, j = j, j - 1
        a[i] = value

    def insertion_sort(lo, hi):
        for i in range(lo + 1, hi):
            if before(a[i], a[lo]):
                value = a[i]
                a[lo + 1:i + 1] = a[lo:i]
                a[lo] = value
            else:
                linear_insert(i)

    n = len(a)
    if n > 1:
        introsort(0, n, 2 * (n.bit_length() - 1))
        insertion_sort(0, min(n, 16))
        for i in range(16, n):
            linear_insert(i)
    return [i for _, i in a]
