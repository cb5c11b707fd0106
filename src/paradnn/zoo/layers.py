"""Torch-free building blocks for the real-world models' analytic half.

Each zoo model walks its architecture once through a `Plan`, which records the FLOP-carrying
shapes (for `shapes`/`train_flops`), the trainable parameters and the BatchNorm buffers, so the
three can never disagree with each other; the tests then hold them against the built module and
against the reference implementations' published counts.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from paradnn.errors import ConfigError
from paradnn.families.base import ActivationMemory, Family
from paradnn.families.shapes import Conv2d, Gemm, Recurrent, Shape
from paradnn.precisions import itemsize as activation_itemsize


@dataclass(frozen=True)
class RectConv2d(Conv2d):
    """A convolution with a k_h × k_w kernel (Inception's 1×7, 7×1, 1×3, 3×1; Deep Speech 2's
    41×11): `kernel`, `stride` and `padding` are the height's, the `_w` fields the width's."""

    kernel_w: int = 1
    padding_w: int = 0
    stride_w: int = 1

    @property
    def out_w(self) -> int:
        return (self.in_w + 2 * self.padding_w - self.kernel_w) // self.stride_w + 1

    @property
    def weights(self) -> int:
        return self.out_ch * (self.in_ch // self.groups) * self.kernel * self.kernel_w


def conv_out(size: int, kernel: int, stride: int = 1, padding: int = 0) -> int:
    return (size + 2 * padding - kernel) // stride + 1


def pool_out(size: int, kernel: int, stride: int, padding: int = 0, ceil: bool = False) -> int:
    """PyTorch's pooling output size, including ceil_mode's rule that the last window must
    start inside the (left-padded) input."""
    span = size + 2 * padding - kernel
    out = (-(-span // stride) if ceil else span // stride) + 1
    if ceil and (out - 1) * stride >= size + padding:
        out -= 1
    return out


@dataclass
class Plan:
    """The analytic walk of one model: its shapes, parameters and buffer bytes."""

    batch: int
    shapes: list[Shape] = field(default_factory=list)
    params: int = 0
    buffers: int = 0
    # Elements of the tensors autograd certainly saves, one distinct tensor per conv whose
    # output a trainable BatchNorm (saves its input) or a ReLU (saves its output) keeps; the
    # memory model's floor (`RealModel.activation_memory`), so a dry run's fit verdict counts
    # activations, not weights only.
    floor_elements: int = 0

    def conv(
        self,
        name: str,
        cin: int,
        cout: int,
        size: tuple[int, int],
        kernel: int | tuple[int, int],
        stride: int | tuple[int, int] = 1,
        padding: int | tuple[int, int] = 0,
        *,
        groups: int = 1,
        bias: bool = False,
        bn: bool = True,
        input_grad: bool = True,
        kept: bool | None = None,
    ) -> tuple[int, int]:
        """A conv (with a BatchNorm after it when `bn`); returns the output's (h, w). `kept`:
        autograd saves its output (or a same-sized tensor made from it: a BatchNorm's input, a
        ReLU's output); default `bn`."""
        kh, kw = kernel if isinstance(kernel, tuple) else (kernel, kernel)
        ph, pw = padding if isinstance(padding, tuple) else (padding, padding)
        sh, sw = stride if isinstance(stride, tuple) else (stride, stride)
        args = (name, self.batch, cin, cout, size[0], size[1], kh, sh, ph, groups, input_grad)
        square = (kh, ph, sh) == (kw, pw, sw)
        shape = Conv2d(*args) if square else RectConv2d(*args, "conv2d", kw, pw, sw)
        self.shapes.append(shape)
        self.params += shape.weights + (cout if bias else 0)
        if bn if kept is None else kept:
            self.floor_elements += self.batch * cout * shape.out_h * shape.out_w
        if bn:
            self.batchnorm(cout)
        return shape.out_h, shape.out_w

    def batchnorm(self, channels: int) -> None:
        """γ and β trainable; fp32 running mean and variance and an int64 step count kept."""
        self.params += 2 * channels
        self.buffers += 2 * 4 * channels + 8

    def linear(self, name: str, rows: int, fin: int, fout: int, *, bias: bool = True) -> None:
        self.shapes.append(Gemm(name, rows, fout, fin))
        self.params += fin * fout + (fout if bias else 0)

    def recurrent(self, name: str, cell: Any, seq: int, fin: int, hidden: int) -> None:
        """One direction of one recurrent layer, with PyTorch's two bias vectors."""
        shape = Recurrent(name, cell, self.batch, seq, fin, hidden)
        self.shapes.append(shape)
        self.params += shape.weights + 2 * shape.gates * hidden


class RealModel(Family):
    """A fixed, published architecture: its config holds only the batch and input size (and
    a few switches such as Inception's auxiliary head), defaulting to the papers' values."""

    kind: ClassVar[str] = "real"
    source: ClassVar[str] = ""  # the reference implementation its parameter count matches
    paper_space: ClassVar[dict[str, tuple[Any, ...]]] = {}

    def plan(self, cfg: Any) -> Plan:
        raise NotImplementedError

    def _cached(self, cfg: Any) -> Plan:
        cache: dict[Any, Plan] = self.__dict__.setdefault("_plans", {})
        if cfg not in cache:
            if len(cache) > 64:
                cache.clear()
            cache[cfg] = self.plan(cfg)
        return cache[cfg]

    def params(self, cfg: Any) -> int:
        return self._cached(cfg).params

    def shapes(self, cfg: Any) -> list[Shape]:
        return list(self._cached(cfg).shapes)

    def activation_memory(
        self, cfg: Any, precision: str, *, device_type: str = "cuda"
    ) -> ActivationMemory:
        """The fallback estimate from the shapes, with the plan's BatchNorm buffers and a floor:
        the conv outputs a BatchNorm or ReLU saves (`Plan.floor_elements`), each at least the
        activation dtype's size (an fp32 cast of one is larger)."""
        generic = super().activation_memory(cfg, precision, device_type=device_type)
        plan = self._cached(cfg)
        floor = min(plan.floor_elements * activation_itemsize(precision), generic.saved)
        return dataclasses.replace(generic, buffers=plan.buffers, floor=floor)


def check_final_map(prefix: str, batch: int, image: int, final: int) -> None:
    """Training-mode BatchNorm needs more than one value per channel on the last map."""
    if final < 1:
        raise ConfigError(f"{prefix}.image", image, "is too small for this network")
    if batch * final * final < 2:
        raise ConfigError(
            f"{prefix}.batch",
            batch,
            f"with image={image} the last feature map is {final}×{final}, and training-mode "
            "BatchNorm needs more than one value per channel: use batch ≥ 2 or a larger image",
        )
