"""ResNet-50 (He et al. 2016), torchvision's v1.5 layout: the stride sits in the 3×3 conv.

Reference: torchvision `resnet50()`, 25,557,032 parameters. Its body (without the classifier)
is RetinaNet's backbone, so the walk is shared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from paradnn.families.base import Built
from paradnn.zoo.images import (
    CLASSES,
    RESNET50_BLOCKS,
    RESNET50_EXPANSION,
    RESNET50_WIDTHS,
    build_classifier,
    check_image_config,
    image_limits,
)
from paradnn.zoo.layers import Plan, RealModel, check_final_map, conv_out, pool_out

BLOCKS, WIDTHS, EXPANSION = RESNET50_BLOCKS, RESNET50_WIDTHS, RESNET50_EXPANSION


def resnet50_body(plan: Plan, image: int) -> list[tuple[int, int]]:
    """Stem and the four stages; returns (channels, side) after each stage (C2…C5)."""
    size = plan.conv("conv1", 3, 64, (image, image), 7, 2, 3, input_grad=False)[0]
    size = pool_out(size, 3, 2, 1)
    cin, out = 64, []
    for stage, (blocks, width) in enumerate(zip(BLOCKS, WIDTHS, strict=True), 1):
        for i in range(blocks):
            stride = 2 if stage > 1 and i == 0 else 1
            p = f"layer{stage}.{i}"
            plan.conv(f"{p}.conv1", cin, width, (size, size), 1)
            mid = plan.conv(f"{p}.conv2", width, width, (size, size), 3, stride, 1)[0]
            plan.conv(f"{p}.conv3", width, width * EXPANSION, (mid, mid), 1)
            if i == 0:
                plan.conv(f"{p}.downsample", cin, width * EXPANSION, (size, size), 1, stride)
            cin, size = width * EXPANSION, mid
        out.append((cin, size))
    return out


def resnet50_final_map(image: int) -> int:
    size = pool_out(conv_out(image, 7, 2, 3), 3, 2, 1)
    for _ in range(3):
        size = conv_out(size, 3, 2, 1)
    return size


@dataclass(frozen=True)
class ResNet50Config:
    batch: int = 64
    image: int = 224

    LIMITS: ClassVar[dict[str, tuple[int, int]]] = image_limits()

    def __post_init__(self) -> None:
        check_image_config("resnet50", self.batch, self.image)
        check_final_map("resnet50", self.batch, self.image, resnet50_final_map(self.image))


class ResNet50(RealModel):
    name = "resnet50"
    title = "ResNet-50 (image classification; seeds 000 and 002)"
    source = "torchvision resnet50: 25,557,032 parameters"
    config_cls = ResNet50Config
    paper_space = {"batch": (64, 128, 1024)}

    def plan(self, cfg: ResNet50Config) -> Plan:
        plan = Plan(cfg.batch)
        resnet50_body(plan, cfg.image)
        plan.linear("fc", cfg.batch, 2048, CLASSES)
        return plan

    def build(self, cfg: ResNet50Config, device: Any, precision: str = "fp32") -> Built:
        from paradnn.zoo._vision_torch import ResNet50Net

        return build_classifier(ResNet50Net(), cfg.batch, cfg.image, device, precision)


FAMILY = ResNet50()
