"""RetinaNet (Lin et al. 2017) with a ResNet-50-FPN backbone, torchvision's v1 layout
(`retinanet_resnet50_fpn`): FPN levels P3–P5 from C3–C5 plus P6/P7 by 3×3/2 convs on P5, and
two heads of four 3×3 convs (256 channels, ReLU) shared across the five levels, predicting 91
COCO classes and 4 box offsets for 9 anchors per location. 640×640 inputs and batch 64, as the
ParaDnn paper ran it on TPU (seed 000).

Training differs from torchvision's recipe in two stated ways:
- every layer trains (torchvision freezes the stem and layer1), and BatchNorm is an ordinary
  trainable BatchNorm by default (batches of 64 allow it); `frozen_bn=true` uses torchvision's
  FrozenBatchNorm2d instead, and the parameter count is then torchvision's 34,014,999;
- targets are synthetic per anchor (1% foreground, random classes and box offsets), so no
  anchor generation or matching runs: those are index bookkeeping without matmul FLOPs, but
  they take time on the real model, which this benchmark does not measure.
The loss is torchvision's: sigmoid focal loss (α 0.25, γ 2) over all anchors plus smooth-L1
box loss on foreground anchors, each divided by the number of foreground anchors. The focal
loss's elementwise work has no model FLOPs, so the analytic count is exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from paradnn.errors import ConfigError
from paradnn.families.base import Built, input_dtype
from paradnn.validate import limits
from paradnn.zoo.images import image_limits
from paradnn.zoo.layers import Plan, RealModel, check_final_map, conv_out, pool_out
from paradnn.zoo.resnet import resnet50_body, resnet50_final_map

FPN = 256
ANCHORS = 9  # 3 scales × 3 aspect ratios per location
CLASSES = 91  # torchvision's COCO label space
HEAD_CONVS = 4
FOREGROUND = 0.01  # fraction of anchors given a synthetic object


@dataclass(frozen=True)
class RetinaNetConfig:
    batch: int = 64
    image: int = 640
    frozen_bn: bool = False

    LIMITS: ClassVar[dict[str, tuple[int, int]]] = image_limits(32)

    def __post_init__(self) -> None:
        limits("retinanet", self, self.LIMITS)
        if not isinstance(self.frozen_bn, bool):
            raise ConfigError("retinanet.frozen_bn", self.frozen_bn, "must be true or false")
        if not self.frozen_bn:
            check_final_map("retinanet", self.batch, self.image, resnet50_final_map(self.image))


def level_sides(image: int) -> list[int]:
    """Sides of P3…P7: C3, C4 and C5 (strides 8, 16, 32), then two 3×3/2 convs."""
    size = pool_out(conv_out(image, 7, 2, 3), 3, 2, 1)  # C2
    sides = []
    for _ in range(3):
        size = conv_out(size, 3, 2, 1)
        sides.append(size)
    p6 = conv_out(sides[-1], 3, 2, 1)
    return [*sides, p6, conv_out(p6, 3, 2, 1)]


class RetinaNet(RealModel):
    name = "retinanet"
    title = "RetinaNet ResNet-50-FPN (object detection; seed 000)"
    source = "torchvision retinanet_resnet50_fpn: 34,014,999 parameters (with frozen_bn=true)"
    config_cls = RetinaNetConfig
    paper_space = {"batch": (64,)}

    def anchors(self, cfg: RetinaNetConfig) -> int:
        return ANCHORS * sum(s * s for s in level_sides(cfg.image))

    def plan(self, cfg: RetinaNetConfig) -> Plan:
        plan = Plan(cfg.batch)
        stages = resnet50_body(plan, cfg.image)
        if cfg.frozen_bn:  # FrozenBatchNorm2d: its four per-channel tensors are all buffers
            channels = sum(s.out_ch for s in plan.shapes)  # a BN follows every backbone conv
            plan.params -= 2 * channels
            plan.buffers += 2 * 4 * channels - 8 * len(plan.shapes)
            plan.floor_elements = 0  # a frozen BN saves no input: claim no backbone floor
        sides = level_sides(cfg.image)
        for level, (cin, side) in enumerate(stages[1:], 3):
            plan.conv(f"fpn.inner{level}", cin, FPN, (side, side), 1, bias=True, bn=False)
        for level, side in zip((3, 4, 5), sides[:3], strict=True):
            plan.conv(f"fpn.layer{level}", FPN, FPN, (side, side), 3, 1, 1, bias=True, bn=False)
        plan.conv("fpn.p6", FPN, FPN, (sides[2],) * 2, 3, 2, 1, bias=True, bn=False)
        plan.conv("fpn.p7", FPN, FPN, (sides[3],) * 2, 3, 2, 1, bias=True, bn=False)
        for head, outputs in (("cls", ANCHORS * CLASSES), ("reg", ANCHORS * 4)):
            start = plan.params
            for level, side in enumerate(sides, 3):
                for i in range(HEAD_CONVS):
                    plan.conv(
                        f"{head}.conv{i + 1}@P{level}",
                        FPN,
                        FPN,
                        (side, side),
                        3,
                        1,
                        1,
                        bias=True,
                        bn=False,
                    )
                plan.conv(
                    f"{head}.out@P{level}", FPN, outputs, (side, side), 3, 1, 1, bias=True, bn=False
                )
            shared = (plan.params - start) // len(sides)  # one set of weights for all levels
            plan.params = start + shared
        return plan

    def build(self, cfg: RetinaNetConfig, device: Any, precision: str = "fp32") -> Built:
        import torch

        from paradnn.zoo._vision_torch import RetinaNetNet, retinanet_loss

        module = RetinaNetNet(CLASSES, ANCHORS, cfg.frozen_bn).to(device)
        dtype, n, b = input_dtype(precision), self.anchors(cfg), cfg.batch

        def make_batch() -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
            x = torch.rand(b, 3, cfg.image, cfg.image, device=device, dtype=dtype)
            fg = (torch.rand(b, n, device=device) < FOREGROUND).float()
            labels = torch.randint(0, CLASSES, (b, n), device=device)
            onehot = (labels.unsqueeze(-1) == torch.arange(CLASSES, device=device)).float()
            boxes = torch.randn(b, n, 4, device=device)
            return x, (onehot * fg.unsqueeze(-1), boxes, fg, fg.sum().clamp(min=1.0))

        return Built(module, make_batch, retinanet_loss)


FAMILY = RetinaNet()
