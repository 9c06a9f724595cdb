"""FakeData: random images that are the same every time for the same index (each index seeds
its own draws from fusionflow's seeded generator), without touching the global random state,
as torchvision's."""
import numpy as np
from PIL import Image

import fusionflow as ff
from .vision import VisionDataset

_TARGET_STREAM = 0x9E3779B97F4A7C15  # any fixed odd 64-bit constant
_MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}  # as ToPILImage picks them by channel count


class FakeData(VisionDataset):
    """size images of image_size (C, H, W), C in 1..4, as PIL images; targets in [0, num_classes).
    The values are not torchvision's (another generator), the contract is: PIL mode by C, size
    (W, H), repeatable per index + random_offset."""

    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None, target_transform=None,
                 random_offset=0):
        super().__init__(None, transform=transform, target_transform=target_transform)
        self.size = size
        self.num_classes = num_classes
        self.image_size = image_size
        self.random_offset = random_offset

    def __getitem__(self, index):
        if index >= len(self):
            raise IndexError("%s index out of range" % type(self).__name__)
        seed = (index + self.random_offset) & 0xFFFFFFFFFFFFFFFF
        # explicit seeds leave the global generator alone (torchvision saves and restores it); the
        # target's stream is the image's seed with its bits mixed, so the two draws are unrelated
        img = ff.randn(*self.image_size, seed=seed)
        target = ff.randint(0, self.num_classes, (1,), seed=seed ^ _TARGET_STREAM)[0]
        img = self._to_pil(img)
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)  # given a 0-d tensor, as torchvision's
        return img, target.item()

    def _to_pil(self, img):
        """A float C x H x W draw as ToPILImage makes it: x * 255 cast to uint8 (wrapping, as a
        C cast of out-of-range values does on x86), then the mode of its channel count."""
        if img.dim() == 2:  # image_size (H, W): one channel
            img = img.unsqueeze(0)
        channels = img.shape[0]
        if channels not in _MODES:
            raise ValueError("FakeData: image_size %s has %d channels; expected 1 to 4"
                             % (tuple(self.image_size), channels))
        arr = (img * 255).numpy().astype(np.int64).astype(np.uint8).transpose(1, 2, 0)
        return Image.fromarray(arr[..., 0] if channels == 1 else arr, _MODES[channels])

    def __len__(self):
        return self.size
