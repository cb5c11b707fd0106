"""SqueezeNet 1.1 (Iandola et al. 2016; the 1.1 revision in the authors' repository), as
torchvision's `squeezenet1_1()`: a 3×3/2 stem, eight Fire modules between ceil-mode max-pools
and a 1×1 convolutional classifier. 1,235,496 parameters; no BatchNorm."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from paradnn.families.base import Built
from paradnn.zoo.images import CLASSES, build_classifier, check_image_config, image_limits
from paradnn.zoo.layers import Plan, RealModel, pool_out

# "M": 3×3/2 max-pool with ceil_mode; tuples: Fire(in, squeeze, expand 1×1, expand 3×3)
FIRES: tuple[tuple[int, int, int, int] | str, ...] = (
    "M", (64, 16, 64, 64), (128, 16, 64, 64),
    "M", (128, 32, 128, 128), (256, 32, 128, 128),
    "M", (256, 48, 192, 192), (384, 48, 192, 192), (384, 64, 256, 256), (512, 64, 256, 256),
)  # fmt: skip
MIN_IMAGE = 17  # the smallest side for which every pool has an output (a test runs it)


@dataclass(frozen=True)
class SqueezeNet11Config:
    batch: int = 64
    image: int = 224

    LIMITS: ClassVar[dict[str, tuple[int, int]]] = image_limits(MIN_IMAGE)

    def __post_init__(self) -> None:
        check_image_config("squeezenet1_1", self.batch, self.image, MIN_IMAGE)


class SqueezeNet11(RealModel):
    name = "squeezenet1_1"
    title = "SqueezeNet 1.1 (image classification; seed 000)"
    source = "torchvision squeezenet1_1: 1,235,496 parameters"
    config_cls = SqueezeNet11Config
    paper_space = {"batch": (1024,)}

    def plan(self, cfg: SqueezeNet11Config) -> Plan:
        plan = Plan(cfg.batch)
        size = plan.conv(
            "conv1", 3, 64, (cfg.image,) * 2, 3, 2, bias=True, bn=False, input_grad=False, kept=True
        )[0]
        for i, f in enumerate(FIRES):
            if f == "M":
                size = pool_out(size, 3, 2, ceil=True)
                continue
            cin, s, e1, e3 = f  # type: ignore[misc]
            p, hw = f"fire{i}", (size, size)
            plan.conv(f"{p}.squeeze", cin, s, hw, 1, bias=True, bn=False, kept=True)
            plan.conv(f"{p}.expand1x1", s, e1, hw, 1, bias=True, bn=False, kept=True)
            plan.conv(f"{p}.expand3x3", s, e3, hw, 3, 1, 1, bias=True, bn=False, kept=True)
        plan.conv("classifier", 512, CLASSES, (size, size), 1, bias=True, bn=False, kept=True)
        return plan

    def build(self, cfg: SqueezeNet11Config, device: Any, precision: str = "fp32") -> Built:
        from paradnn.zoo._vision_torch import SqueezeNet11Net

        return build_classifier(SqueezeNet11Net(FIRES), cfg.batch, cfg.image, device, precision)


FAMILY = SqueezeNet11()
