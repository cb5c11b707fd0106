"""Inception v3 (Szegedy et al. 2016), as torchvision's `inception_v3(aux_logits=…,
init_weights=True)` without input transform: 27,161,264 parameters with the auxiliary
classifier, 23,834,568 without. The auxiliary head runs in training only; its loss is added
with weight 0.4 (torchvision's recipe).

The auxiliary head pools Mixed_6e's map 5×5/3 and then applies a 5×5 convolution without
padding, so it needs that map to be ≥ 17×17: images of at least 299 pixels. Without it, the
network runs from 75 pixels up (torchvision's stated minimum).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from paradnn.errors import ConfigError
from paradnn.families.base import Built
from paradnn.zoo.images import CLASSES, build_classifier, check_image_config, image_limits
from paradnn.zoo.layers import Plan, RealModel, check_final_map, conv_out, pool_out


def _sizes(image: int) -> tuple[int, int, int]:
    """Sides of the stem's output (Mixed_5b's input), Mixed_6e's and Mixed_7c's maps."""
    s = conv_out(image, 3, 2)
    s = conv_out(conv_out(s, 3), 3, 1, 1)
    s = conv_out(pool_out(s, 3, 2), 3)  # maxpool, 1×1, 3×3
    stem = pool_out(s, 3, 2)
    m6 = conv_out(stem, 3, 2)
    return stem, m6, conv_out(m6, 3, 2)


@dataclass(frozen=True)
class InceptionV3Config:
    batch: int = 64
    image: int = 299
    aux: bool = True

    LIMITS: ClassVar[dict[str, tuple[int, int]]] = image_limits(75)

    def __post_init__(self) -> None:
        check_image_config("inception_v3", self.batch, self.image, 75)
        if not isinstance(self.aux, bool):
            raise ConfigError("inception_v3.aux", self.aux, "must be true or false")
        _, m6, m7 = _sizes(self.image)
        check_final_map("inception_v3", self.batch, self.image, m7)
        if self.aux and pool_out(m6, 5, 3) < 5:
            raise ConfigError(
                "inception_v3.image", self.image, "must be ≥ 299 with the auxiliary head (aux)"
            )
        if self.aux and self.batch < 2:
            raise ConfigError(
                "inception_v3.batch",
                self.batch,
                "must be ≥ 2 with the auxiliary head: its BatchNorm sees a 1×1 map",
            )


class InceptionV3(RealModel):
    name = "inception_v3"
    title = "Inception v3 (image classification; seed 002)"
    source = "torchvision inception_v3: 27,161,264 parameters (23,834,568 without aux)"
    config_cls = InceptionV3Config
    paper_space = {"batch": (64, 128)}

    def plan(self, cfg: InceptionV3Config) -> Plan:
        plan = Plan(cfg.batch)

        def bc(name, cin, cout, hw, k, s=1, p=0, input_grad=True):  # torchvision BasicConv2d
            return plan.conv(name, cin, cout, hw, k, s, p, input_grad=input_grad)

        hw = bc("Conv2d_1a", 3, 32, (cfg.image,) * 2, 3, 2, input_grad=False)
        hw = bc("Conv2d_2a", 32, 32, hw, 3)
        hw = bc("Conv2d_2b", 32, 64, hw, 3, 1, 1)
        hw = (pool_out(hw[0], 3, 2),) * 2
        hw = bc("Conv2d_3b", 64, 80, hw, 1)
        hw = bc("Conv2d_4a", 80, 192, hw, 3)
        hw = (pool_out(hw[0], 3, 2),) * 2

        def a(p, cin, pool):
            bc(f"{p}.b1x1", cin, 64, hw, 1)
            bc(f"{p}.b5x5_2", 48, 64, bc(f"{p}.b5x5_1", cin, 48, hw, 1), 5, 1, 2)
            bc(f"{p}.b3x3dbl_1", cin, 64, hw, 1)
            bc(f"{p}.b3x3dbl_3", 96, 96, bc(f"{p}.b3x3dbl_2", 64, 96, hw, 3, 1, 1), 3, 1, 1)
            bc(f"{p}.pool", cin, pool, hw, 1)
            return 224 + pool

        cin = a("Mixed_5b", 192, 32)
        cin = a("Mixed_5c", cin, 64)
        cin = a("Mixed_5d", cin, 64)
        out = bc("Mixed_6a.b3x3", cin, 384, hw, 3, 2)
        bc("Mixed_6a.b3x3dbl_1", cin, 64, hw, 1)
        bc("Mixed_6a.b3x3dbl_3", 96, 96, bc("Mixed_6a.b3x3dbl_2", 64, 96, hw, 3, 1, 1), 3, 2)
        hw, cin = out, 384 + 96 + cin

        for p, c7 in (("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160), ("Mixed_6e", 192)):
            bc(f"{p}.b1x1", cin, 192, hw, 1)
            bc(f"{p}.b7x7_1", cin, c7, hw, 1)
            bc(f"{p}.b7x7_2", c7, c7, hw, (1, 7), 1, (0, 3))
            bc(f"{p}.b7x7_3", c7, 192, hw, (7, 1), 1, (3, 0))
            bc(f"{p}.b7x7dbl_1", cin, c7, hw, 1)
            for i, (k, pad) in enumerate((((7, 1), (3, 0)), ((1, 7), (0, 3))) * 2, 2):
                bc(f"{p}.b7x7dbl_{i}", c7, 192 if i == 5 else c7, hw, k, 1, pad)
            bc(f"{p}.pool", cin, 192, hw, 1)

        if cfg.aux:
            side = pool_out(hw[0], 5, 3)
            side = bc(
                "AuxLogits.conv1", 128, 768, bc("AuxLogits.conv0", 768, 128, (side,) * 2, 1), 5
            )
            plan.linear("AuxLogits.fc", cfg.batch, 768, CLASSES)

        out = bc("Mixed_7a.b3x3_2", 192, 320, bc("Mixed_7a.b3x3_1", cin, 192, hw, 1), 3, 2)
        bc("Mixed_7a.b7x7x3_1", cin, 192, hw, 1)
        bc("Mixed_7a.b7x7x3_2", 192, 192, hw, (1, 7), 1, (0, 3))
        bc("Mixed_7a.b7x7x3_3", 192, 192, hw, (7, 1), 1, (3, 0))
        bc("Mixed_7a.b7x7x3_4", 192, 192, hw, 3, 2)
        hw, cin = out, 320 + 192 + cin

        for p in ("Mixed_7b", "Mixed_7c"):
            bc(f"{p}.b1x1", cin, 320, hw, 1)
            bc(f"{p}.b3x3_1", cin, 384, hw, 1)
            bc(f"{p}.b3x3_2a", 384, 384, hw, (1, 3), 1, (0, 1))
            bc(f"{p}.b3x3_2b", 384, 384, hw, (3, 1), 1, (1, 0))
            bc(f"{p}.b3x3dbl_1", cin, 448, hw, 1)
            bc(f"{p}.b3x3dbl_2", 448, 384, hw, 3, 1, 1)
            bc(f"{p}.b3x3dbl_3a", 384, 384, hw, (1, 3), 1, (0, 1))
            bc(f"{p}.b3x3dbl_3b", 384, 384, hw, (3, 1), 1, (1, 0))
            bc(f"{p}.pool", cin, 192, hw, 1)
            cin = 2048
        plan.linear("fc", cfg.batch, 2048, CLASSES)
        return plan

    def build(self, cfg: InceptionV3Config, device: Any, precision: str = "fp32") -> Built:
        from paradnn.zoo._vision_torch import InceptionV3Net

        return build_classifier(InceptionV3Net(cfg.aux), cfg.batch, cfg.image, device, precision)


FAMILY = InceptionV3()
