"""DenseNet-121 (Huang et al. 2017), as torchvision's `densenet121()`: growth rate 32, blocks
(6, 12, 24, 16), BN-ReLU-conv ordering, 1×1 bottlenecks of 4·growth, transitions halving the
channels. 7,978,856 parameters. Every dense layer concatenates all earlier maps (no
memory-efficient checkpointing, so nothing is recomputed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from paradnn.families.base import Built
from paradnn.zoo.images import CLASSES, build_classifier, check_image_config, image_limits
from paradnn.zoo.layers import Plan, RealModel, check_final_map, conv_out, pool_out

BLOCKS = (6, 12, 24, 16)
GROWTH, BN_SIZE, INIT = 32, 4, 64


def _final_map(image: int) -> int:
    size = pool_out(conv_out(image, 7, 2, 3), 3, 2, 1)
    for _ in BLOCKS[1:]:
        size = pool_out(size, 2, 2)
    return size


@dataclass(frozen=True)
class DenseNet121Config:
    batch: int = 64
    image: int = 224

    LIMITS: ClassVar[dict[str, tuple[int, int]]] = image_limits()

    def __post_init__(self) -> None:
        check_image_config("densenet121", self.batch, self.image)
        check_final_map("densenet121", self.batch, self.image, _final_map(self.image))


class DenseNet121(RealModel):
    name = "densenet121"
    title = "DenseNet-121 (image classification; seed 000)"
    source = "torchvision densenet121: 7,978,856 parameters"
    config_cls = DenseNet121Config
    paper_space = {"batch": (1024,)}

    def plan(self, cfg: DenseNet121Config) -> Plan:
        plan = Plan(cfg.batch)
        size = plan.conv("conv0", 3, INIT, (cfg.image,) * 2, 7, 2, 3, input_grad=False)[0]
        size = pool_out(size, 3, 2, 1)
        ch = INIT
        for b, n in enumerate(BLOCKS, 1):
            for i in range(n):
                p = f"block{b}.layer{i + 1}"
                plan.batchnorm(ch)
                plan.conv(f"{p}.conv1", ch, BN_SIZE * GROWTH, (size, size), 1)
                plan.conv(f"{p}.conv2", BN_SIZE * GROWTH, GROWTH, (size, size), 3, 1, 1, bn=False)
                ch += GROWTH
            if b < len(BLOCKS):
                plan.batchnorm(ch)
                plan.conv(f"transition{b}", ch, ch // 2, (size, size), 1, bn=False)
                ch, size = ch // 2, pool_out(size, 2, 2)
        plan.batchnorm(ch)
        plan.linear("classifier", cfg.batch, ch, CLASSES)
        return plan

    def build(self, cfg: DenseNet121Config, device: Any, precision: str = "fp32") -> Built:
        from paradnn.zoo._vision_torch import DenseNet121Net

        net = DenseNet121Net(BLOCKS, GROWTH, BN_SIZE, INIT)
        return build_classifier(net, cfg.batch, cfg.image, device, precision)


FAMILY = DenseNet121()
