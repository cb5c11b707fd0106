"""VGG16 (Simonyan and Zisserman 2015), configuration D, as torchvision's `vgg16()`:
13 3×3 convolutions with bias and ReLU, five 2×2 max-pools, a 7×7 adaptive pool and three fully
connected layers. 138,357,544 parameters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from paradnn.families.base import Built
from paradnn.zoo.images import CLASSES, build_classifier, check_image_config, image_limits
from paradnn.zoo.layers import Plan, RealModel, pool_out

PLAN_D: tuple[int | str, ...] = (
    64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M",
)  # fmt: skip


@dataclass(frozen=True)
class VGG16Config:
    batch: int = 64
    image: int = 224

    LIMITS: ClassVar[dict[str, tuple[int, int]]] = image_limits(32)

    def __post_init__(self) -> None:
        check_image_config("vgg16", self.batch, self.image, 32)  # five 2×2 pools


class VGG16(RealModel):
    name = "vgg16"
    title = "VGG16 (image classification; seed 002)"
    source = "torchvision vgg16: 138,357,544 parameters"
    config_cls = VGG16Config
    paper_space = {"batch": (64, 128)}

    def plan(self, cfg: VGG16Config) -> Plan:
        plan, b = Plan(cfg.batch), cfg.batch
        size, cin, i = cfg.image, 3, 0
        for v in PLAN_D:
            if v == "M":
                size = pool_out(size, 2, 2)
                continue
            i += 1
            plan.conv(
                f"conv{i}",
                cin,
                int(v),
                (size, size),
                3,
                1,
                1,
                bias=True,
                bn=False,
                input_grad=i > 1,
                kept=True,  # ReLU(inplace) saves it
            )
            cin = int(v)
        plan.linear("fc1", b, 512 * 7 * 7, 4096)
        plan.linear("fc2", b, 4096, 4096)
        plan.linear("fc3", b, 4096, CLASSES)
        return plan

    def build(self, cfg: VGG16Config, device: Any, precision: str = "fp32") -> Built:
        from paradnn.zoo._vision_torch import VGG16Net

        return build_classifier(VGG16Net(PLAN_D), cfg.batch, cfg.image, device, precision)


FAMILY = VGG16()
