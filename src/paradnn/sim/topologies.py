"""Reference layer lists for checking the systolic model against published what-if numbers.

`RESNET50` is SCALE-Sim v2's `topologies/conv_nets/Resnet50.csv` (scalesim-project/scale-sim-v2,
MIT licence): name, ifmap height and width, filter height and width, input channels, filters,
stride. SCALE-Sim models no padding and one image per layer (a batch is folded into M), so these
rows are lowered with `conv_gemm`, not with the families' padded `Conv2d`.
"""

from __future__ import annotations

import math

from paradnn.families.lowering import Op

# fmt: off
RESNET50: tuple[tuple[str, int, int, int, int, int, int, int], ...] = (
    ("Conv1", 224, 224, 7, 7, 3, 64, 2),
    ("CB2a_1", 56, 56, 1, 1, 64, 64, 1), ("CB2a_2", 56, 56, 3, 3, 64, 64, 1),
    ("CB2a_3", 56, 56, 1, 1, 64, 256, 1), ("CB2s", 56, 56, 1, 1, 64, 256, 1),
    ("IB2b_1", 56, 56, 1, 1, 256, 64, 1), ("IB2b_2", 56, 56, 3, 3, 64, 64, 1),
    ("IB2b_3", 56, 56, 1, 1, 64, 256, 1), ("IB2c_1", 56, 56, 1, 1, 256, 64, 1),
    ("IB2c_2", 56, 56, 3, 3, 64, 64, 1), ("IB2c_3", 56, 56, 1, 1, 64, 256, 1),
    ("CB3a_1", 56, 56, 1, 1, 256, 128, 2), ("CB3a_2", 28, 28, 3, 3, 128, 128, 1),
    ("CB3a_3", 28, 28, 1, 1, 128, 512, 1), ("CB3s", 56, 56, 1, 1, 256, 512, 2),
    ("IB3b_1", 28, 28, 1, 1, 512, 128, 1), ("IB3b_2", 28, 28, 3, 3, 128, 128, 1),
    ("IB3b_3", 28, 28, 1, 1, 128, 512, 1), ("IB3c_1", 28, 28, 1, 1, 512, 128, 1),
    ("IB3c_2", 28, 28, 3, 3, 128, 128, 1), ("IB3c_3", 28, 28, 1, 1, 128, 512, 1),
    ("IB3d_1", 28, 28, 1, 1, 512, 128, 1), ("IB3d_2", 28, 28, 3, 3, 128, 128, 1),
    ("IB3d_3", 28, 28, 1, 1, 128, 512, 1),
    ("CB4a_1", 28, 28, 1, 1, 512, 256, 2), ("CB4a_2", 14, 14, 3, 3, 256, 256, 1),
    ("CB4a_3", 14, 14, 1, 1, 256, 1024, 1), ("CB4s", 28, 28, 1, 1, 512, 1024, 2),
    ("IB4b_1", 14, 14, 1, 1, 1024, 256, 1), ("IB4b_2", 14, 14, 3, 3, 256, 256, 1),
    ("IB4b_3", 14, 14, 1, 1, 256, 1024, 1), ("IB4c_1", 14, 14, 1, 1, 1024, 256, 1),
    ("IB4c_2", 14, 14, 3, 3, 256, 256, 1), ("IB4c_3", 14, 14, 1, 1, 256, 1024, 1),
    ("IB4d_1", 14, 14, 1, 1, 1024, 256, 1), ("IB4d_2", 14, 14, 3, 3, 256, 256, 1),
    ("IB4d_3", 14, 14, 1, 1, 256, 1024, 1), ("IB4e_1", 14, 14, 1, 1, 1024, 256, 1),
    ("IB4e_2", 14, 14, 3, 3, 256, 256, 1), ("IB4e_3", 14, 14, 1, 1, 256, 1024, 1),
    ("IB4f_1", 14, 14, 1, 1, 1024, 256, 1), ("IB4f_2", 14, 14, 3, 3, 256, 256, 1),
    ("IB4f_3", 14, 14, 1, 1, 256, 1024, 1),
    ("CB5a_1", 14, 14, 1, 1, 1024, 512, 2), ("CB5a_2", 7, 7, 3, 3, 512, 512, 1),
    ("CB5a_3", 7, 7, 1, 1, 512, 2048, 1), ("CB5s", 14, 14, 1, 1, 1024, 2048, 2),
    ("IB5b_1", 7, 7, 1, 1, 2048, 512, 1), ("IB5b_2", 7, 7, 3, 3, 512, 512, 1),
    ("IB5b_3", 7, 7, 1, 1, 512, 2048, 1), ("IB5c_1", 7, 7, 1, 1, 2048, 512, 1),
    ("IB5c_2", 7, 7, 3, 3, 512, 512, 1), ("IB5c_3", 7, 7, 1, 1, 512, 2048, 1),
    ("FC6", 1, 1, 1, 1, 2048, 1000, 1),
)
# fmt: on


def conv_gemm(
    name: str, h: int, w: int, r: int, s: int, c: int, n: int, stride: int, batch: int = 1
) -> Op:
    """SCALE-Sim's conv → GEMM: M = ofmap pixels × batch, N = filters, K = R·S·C; its ofmap side
    is ceil((H − R + stride) / stride) (no padding)."""
    e = math.ceil((h - r + stride) / stride)
    f = math.ceil((w - s + stride) / stride)
    return Op(name, "fwd", batch * e * f, n, r * s * c)


def resnet50_forward(batch: int = 1) -> list[Op]:
    """ResNet-50's forward GEMMs as SCALE-Sim sees them (3.48 GMAC per image)."""
    return [conv_gemm(*row, batch=batch) for row in RESNET50]
