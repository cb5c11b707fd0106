"""What the image classifiers share: a config of batch and image side, and their builder."""

from __future__ import annotations

from typing import Any

from paradnn.families.base import Built, input_dtype
from paradnn.validate import int_at_least

CLASSES = 1000  # ImageNet, as in every reference count
# ResNet-50's stages (torchvision v1.5): blocks per stage, bottleneck widths, expansion. Here,
# below both halves, because the analytic walk (`resnet.py`) and the module (`_vision_torch`,
# also RetinaNet's backbone) build the same network.
RESNET50_BLOCKS = (3, 4, 6, 3)
RESNET50_WIDTHS = (64, 128, 256, 512)
RESNET50_EXPANSION = 4
# Upper bounds of every image model (docs/limits.md): 64× the studies' largest batch (1024)
# and 3× RetinaNet's 640 px; VGG16 at both bounds needs 5e17 FLOPs per step, well inside
# SQLite's 64-bit INTEGER.
MAX_BATCH = 65_536
MAX_IMAGE = 2048


def image_limits(min_image: int = 1) -> dict[str, tuple[int, int]]:
    """(low, high) of an image model's batch and image side."""
    return {"batch": (1, MAX_BATCH), "image": (min_image, MAX_IMAGE)}


def check_image_config(prefix: str, batch: Any, image: Any, min_image: int = 1) -> None:
    int_at_least(f"{prefix}.batch", batch, 1, MAX_BATCH)
    int_at_least(f"{prefix}.image", image, min_image, MAX_IMAGE)


def build_classifier(module: Any, batch: int, image: int, device: Any, precision: str) -> Built:
    """Synthetic uniform images and random labels on the device; softmax cross-entropy (for
    tuple outputs, Inception's main + 0.4 × auxiliary loss, as torchvision's recipe)."""
    import torch
    from torch.nn.functional import cross_entropy

    module = module.to(device)
    dtype = input_dtype(precision)

    def make_batch() -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.rand(batch, 3, image, image, device=device, dtype=dtype)
        return x, torch.randint(0, CLASSES, (batch,), device=device)

    def loss(out: Any, y: torch.Tensor) -> torch.Tensor:
        if isinstance(out, tuple):
            return cross_entropy(out[0], y) + 0.4 * cross_entropy(out[1], y)
        return cross_entropy(out, y)

    return Built(module, make_batch, loss)
