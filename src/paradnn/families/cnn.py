"""ParaDnn convolutional models: ResNet v1 with residual or bottleneck blocks.

Stem 7×7/2 conv + BN + ReLU + 3×3/2 max-pool; four groups (filters ×1, ×2, ×4, ×8; strides 1, 2,
2, 2) of `blocks` blocks, a projection shortcut on each group's first block; global average
pooling (ParaDnn's fixed 7×7 pool only works for 193–224 px inputs, reference/suites.md a.3);
Linear(output). As in the TensorFlow original, the last BN of each block starts with γ = 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from paradnn.errors import ConfigError
from paradnn.families.base import (
    AUTOCAST,
    ActivationMemory,
    Built,
    Family,
    activation_itemsize,
    cross_entropy_saved_bytes,
    input_dtype,
)
from paradnn.families.shapes import Conv2d, Gemm, Shape
from paradnn.space import arithmetic, geometric
from paradnn.validate import limits, one_of

BlockType = Literal["residual", "bottleneck"]
GROUP_WIDTH = (1, 2, 4, 8)
GROUP_STRIDE = (1, 2, 2, 2)


@dataclass(frozen=True)
class CNNConfig:
    blocks: int = 1
    filters: int = 16
    image: int = 224
    output: int = 1000
    batch: int = 64
    block: BlockType = "residual"

    # (low, high) per field, docs/limits.md: 4× the paper's deepest blocks, 8× its filters,
    # 3× its images, 16× its batch; FLOPs per step stay ≤ 3.9e18 (SQLite's 64-bit INTEGER).
    LIMITS: ClassVar[dict[str, tuple[int, int]]] = {
        "blocks": (1, 32),
        "filters": (1, 512),
        "image": (1, 1024),
        "output": (2, 1 << 20),
        "batch": (1, 16_384),
    }

    def __post_init__(self) -> None:
        limits("cnn", self, self.LIMITS)
        one_of("cnn.block", self.block, ("residual", "bottleneck"))
        if self.batch * self.final_map**2 < 2:
            raise ConfigError(
                "cnn.batch",
                self.batch,
                f"with image={self.image} the last feature map is {self.final_map}×"
                f"{self.final_map}, and training-mode BatchNorm needs more than one value per "
                "channel: use batch ≥ 2 or image ≥ 33",
            )

    @property
    def final_map(self) -> int:
        """Side of the last feature map: the stem and pool halve it, groups 2–4 halve it."""
        size = _pool_out((self.image + 2 * 3 - 7) // 2 + 1)
        for _ in GROUP_STRIDE[1:]:
            size = (size + 2 - 3) // 2 + 1
        return size

    @property
    def expansion(self) -> int:
        return 4 if self.block == "bottleneck" else 1

    @property
    def features(self) -> int:
        """Channels entering the classifier."""
        return self.filters * GROUP_WIDTH[-1] * self.expansion


def _pool_out(size: int) -> int:
    return (size + 2 * 1 - 3) // 2 + 1  # 3×3/2 max-pool, padding 1


class CNN(Family):
    name = "cnn"
    title = "Residual/bottleneck CNN (ParaDnn, ResNet v1)"
    config_cls = CNNConfig
    paper_space = {
        "blocks": arithmetic(1, 8, 1),
        "filters": (16, 32, 64),
        "image": arithmetic(200, 300, 50),
        "output": arithmetic(500, 1500, 500),
        "batch": geometric(64, 1024, 2),
        "block": ("residual", "bottleneck"),
    }
    paper_fixed = {"blocks": 6, "image": 300, "output": 1000}

    def _convs(self, cfg: CNNConfig) -> list[Conv2d]:
        b = cfg.batch
        stem = Conv2d("stem", b, 3, cfg.filters, cfg.image, cfg.image, 7, 2, 3, input_grad=False)
        convs = [stem]
        size = _pool_out(stem.out_h)
        channels = cfg.filters
        for g, (mult, stride) in enumerate(zip(GROUP_WIDTH, GROUP_STRIDE, strict=True), 1):
            width = cfg.filters * mult
            out_ch = width * cfg.expansion
            for i in range(cfg.blocks):
                s = stride if i == 0 else 1
                p = f"g{g}b{i + 1}"
                if cfg.block == "residual":
                    c1 = Conv2d(f"{p}.conv1", b, channels, width, size, size, 3, s, 1)
                    main = [c1, Conv2d(f"{p}.conv2", b, width, width, c1.out_h, c1.out_w, 3, 1, 1)]
                else:
                    c1 = Conv2d(f"{p}.conv1", b, channels, width, size, size, 1, 1, 0)
                    c2 = Conv2d(f"{p}.conv2", b, width, width, size, size, 3, s, 1)
                    c3 = Conv2d(f"{p}.conv3", b, width, out_ch, c2.out_h, c2.out_w, 1, 1, 0)
                    main = [c1, c2, c3]
                convs += main
                if i == 0:
                    convs.append(Conv2d(f"{p}.proj", b, channels, out_ch, size, size, 1, s, 0))
                size = main[-1].out_h
                channels = out_ch
        return convs

    def params(self, cfg: CNNConfig) -> int:
        convs = sum(c.weights + 2 * c.out_ch for c in self._convs(cfg))  # each conv has a BN
        return convs + cfg.features * cfg.output + cfg.output

    def shapes(self, cfg: CNNConfig) -> list[Shape]:
        head = Gemm("head", cfg.batch, cfg.output, cfg.features)
        return [*self._convs(cfg), head]

    def _buffer_bytes(self, cfg: CNNConfig) -> int:
        """Each conv's BatchNorm keeps fp32 running mean and variance and an int64 step count."""
        return sum(2 * 4 * c.out_ch + 8 for c in self._convs(cfg))

    def _saved_bytes(self, cfg: CNNConfig, precision: str, device_type: str) -> int:
        """Per conv: BatchNorm saves its input (the conv output) and fp32 mean and inverse std,
        and the in-place ReLU after it saves its output, which the next conv saves as its input
        (one tensor). A block's last BatchNorm and its projection's feed the residual add, which
        saves nothing, and the block's ReLU saves the sum: two maps per conv, one per projection.
        The stem conv saves the batch; max-pool saves its input (the stem ReLU's output) and
        int64 indices; the first block's input is the pool output. Under autocast each conv and
        the head also save their 16-bit weight copy. Same on CPU and CUDA."""
        b, size = cfg.batch, activation_itemsize(precision)
        convs = self._convs(cfg)
        pool = _pool_out(convs[0].out_h) * _pool_out(convs[0].out_w)
        saved = b * 3 * cfg.image**2 * size + b * cfg.filters * pool * (8 + size)
        for c in convs:
            maps = 1 if c.name.endswith(".proj") else 2
            saved += maps * c.batch * c.out_ch * c.out_h * c.out_w * size + 2 * 4 * c.out_ch
        saved += b * cfg.features * size  # the pooled features, the head's input
        saved += b * 8 + cross_entropy_saved_bytes(b, cfg.output)  # int64 targets
        if precision in AUTOCAST:
            saved += 2 * (sum(c.weights for c in convs) + cfg.features * cfg.output)
        return saved

    def _cast_bytes(self, cfg: CNNConfig, precision: str, device_type: str) -> int:
        """Only the head's bias: convs have none, and BatchNorm is not cast."""
        return 2 * cfg.output if precision in AUTOCAST else 0

    def activation_memory(
        self, cfg: CNNConfig, precision: str, *, device_type: str = "cuda"
    ) -> ActivationMemory:
        """The floor is all of `saved`: each tensor counted is one a derivative formula of these
        ops requires."""
        saved = self._saved_bytes(cfg, precision, device_type)
        return ActivationMemory(
            saved=saved,
            floor=saved,
            casts=self._cast_bytes(cfg, precision, device_type),
            buffers=self._buffer_bytes(cfg),
        )

    def build(self, cfg: CNNConfig, device: Any, precision: str = "fp32") -> Built:
        import torch

        from paradnn.families._cnn_torch import ResNetV1

        module = ResNetV1(cfg, GROUP_WIDTH, GROUP_STRIDE).to(device)
        dtype = input_dtype(precision)

        def make_batch() -> tuple[torch.Tensor, torch.Tensor]:
            x = torch.rand(cfg.batch, 3, cfg.image, cfg.image, device=device, dtype=dtype)
            y = torch.randint(0, cfg.output, (cfg.batch,), device=device)
            return x, y

        return Built(module, make_batch, torch.nn.functional.cross_entropy)

    def build_jax(self, cfg: Any, precision: str = "fp32") -> Any:
        """The JAX model (docs/jax.md): the same layers, parameters and FLOP-carrying shapes."""
        from paradnn.families import _jax_nets

        return _jax_nets.cnn(cfg, precision, GROUP_WIDTH, GROUP_STRIDE)


FAMILY = CNN()
