"""How XLA lays a TPU core's tensors out in HBM: tiles of 8 × 128 over their two minor
dimensions, so a tensor whose batch or feature count is not a multiple of the tile is padded,
and the padding is moved and computed like data.

The Cloud TPU performance guide ("Tensor dimensions", cloud.google.com/tpu/docs/performance-guide)
states the rule: the XLA compiler rounds up the sizes of tensors stored in TPU HBM; the runtime
lays them out to maximize efficiency and minimize padding; to avoid padding, either the batch
per core is a multiple of 8 and the feature dimensions multiples of 128, or the batch per core
is a multiple of 128 and the features multiples of 8 ("each TPU core uses two-dimensional
8 × 128 vector registers"). Seed 001 says why it matters: "the 2D registers dimensions of 128
and 8 might not be filled, lowering ALU and memory utilization". Table 8's TPU runs train 8–16
images per core, so a 64-channel ResNet map or an 80-, 192- or 288-channel Inception map is
padded to the next multiple of 128.

Only the two layouts the guide names are considered, and the one that pads less is taken. The
matrix unit's own folds are `systolic`'s (a GEMM's K and N already fill whole 128-wide folds).
"""

from __future__ import annotations

import math

SUBLANES = 8  # the vector registers' second dimension
LANES = 128  # their first, and the MXU's width


def _up(x: int, to: int) -> int:
    return to * math.ceil(x / to)


def padded(rows: int, features: int) -> int:
    """Elements a [rows, features] tensor occupies: features on the 128 lanes (rows to a
    multiple of 8) or rows on the lanes (features to a multiple of 8), whichever is smaller."""
    if rows < 1 or features < 1:
        return max(0, rows) * max(0, features)
    by_features = _up(rows, SUBLANES) * _up(features, LANES)
    by_rows = _up(rows, LANES) * _up(features, SUBLANES)
    return min(by_features, by_rows)


def factor(rows: int, features: int) -> float:
    """``padded ÷ rows × features``: 1 for a tensor the tiles fit, up to 128 for one feature."""
    if rows < 1 or features < 1:
        return 1.0
    return padded(rows, features) / (rows * features)
