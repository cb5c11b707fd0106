"""MobileNetV2 (Sandler et al. 2018) at width 1.0, as torchvision's `mobilenet_v2()`:
inverted residual blocks (1×1 expand, 3×3 depthwise, 1×1 project; ReLU6), 3,504,872 parameters.

Depthwise convolutions are why the FLOP counter needs its grouped-backward correction
(reference/flops.md §2.4): uncorrected, a training step of this model counts 6.9× too much."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from paradnn.families.base import Built
from paradnn.zoo.images import CLASSES, build_classifier, check_image_config, image_limits
from paradnn.zoo.layers import Plan, RealModel, check_final_map, conv_out

# (expansion t, channels c, repeats n, first stride s): the paper's Table 2
SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
            (6, 160, 3, 2), (6, 320, 1, 1))  # fmt: skip


def _final_map(image: int) -> int:
    size = conv_out(image, 3, 2, 1)
    for *_, s in SETTINGS:
        size = conv_out(size, 3, s, 1)
    return size


@dataclass(frozen=True)
class MobileNetV2Config:
    batch: int = 64
    image: int = 224

    LIMITS: ClassVar[dict[str, tuple[int, int]]] = image_limits()

    def __post_init__(self) -> None:
        check_image_config("mobilenet_v2", self.batch, self.image)
        check_final_map("mobilenet_v2", self.batch, self.image, _final_map(self.image))


class MobileNetV2(RealModel):
    name = "mobilenet_v2"
    title = "MobileNetV2 (image classification; seed 000)"
    source = "torchvision mobilenet_v2: 3,504,872 parameters"
    config_cls = MobileNetV2Config
    paper_space = {"batch": (1024,)}

    def plan(self, cfg: MobileNetV2Config) -> Plan:
        plan = Plan(cfg.batch)
        size = plan.conv("stem", 3, 32, (cfg.image,) * 2, 3, 2, 1, input_grad=False)[0]
        cin, block = 32, 0
        for t, c, n, s in SETTINGS:
            for i in range(n):
                block += 1
                hidden, p = cin * t, f"block{block}"
                if t != 1:
                    plan.conv(f"{p}.expand", cin, hidden, (size, size), 1)
                size = plan.conv(
                    f"{p}.dw", hidden, hidden, (size, size), 3, s if i == 0 else 1, 1, groups=hidden
                )[0]
                plan.conv(f"{p}.project", hidden, c, (size, size), 1)
                cin = c
        plan.conv("last", cin, 1280, (size, size), 1)
        plan.linear("classifier", cfg.batch, 1280, CLASSES)
        return plan

    def build(self, cfg: MobileNetV2Config, device: Any, precision: str = "fp32") -> Built:
        from paradnn.zoo._vision_torch import MobileNetV2Net

        return build_classifier(MobileNetV2Net(SETTINGS), cfg.batch, cfg.image, device, precision)


FAMILY = MobileNetV2()
