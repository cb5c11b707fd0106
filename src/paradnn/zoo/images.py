"""What the image classifiers share: a config of batch and image side, and their builder."""

from __future__ import annotations

from typing import Any

from paradnn.families.base import Built, input_dtype
from paradnn.validate import int_at_least

CLASSES = 1000  # ImageNet, as in every reference count


def check_image_config(prefix: str, batch: Any, image: Any, min_image: int = 1) -> None:
    int_at_least(f"{prefix}.batch", batch, 1)
    int_at_least(f"{prefix}.image", image, min_image)


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
