"""The one interface every workload family (and every real-world model) implements.

Everything here but `build` is torch-free, so the simulator, the analysis layer and
`paradnn run --dry-run` can reason about a workload without importing torch.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from paradnn.families.shapes import Conv2d, Gemm, Shape
from paradnn.validate import from_mapping

if TYPE_CHECKING:  # pragma: no cover
    import torch


AUTOCAST = ("bf16", "fp16")  # precisions that run under autocast with 16-bit activations


def activation_itemsize(precision: str) -> int:
    """Bytes per activation element, which is also the synthetic input's (see `input_dtype`)."""
    return 2 if precision in AUTOCAST else 4


def cross_entropy_saved_bytes(rows: int, classes: int) -> int:
    """What F.cross_entropy saves besides its targets: the log-softmax, fp32 even under autocast
    (it is on autocast's fp32 list), and nll_loss's scalar total weight."""
    return rows * classes * 4 + 4


@dataclass
class Built:
    """A model ready to train: module on the device, a maker of one synthetic batch, a loss."""

    module: torch.nn.Module
    make_batch: Callable[[], tuple[Any, Any]]
    loss: Callable[[Any, Any], torch.Tensor]


class Family(ABC):
    """A parameterized model family: config class, paper space, analytic counts and a builder."""

    name: ClassVar[str]
    title: ClassVar[str]
    config_cls: ClassVar[type]
    # "generated" for parameterized families (a space of models), "real" for the fixed
    # published models of paradnn.zoo, which the analysis places among them as reference points.
    kind: ClassVar[str] = "generated"
    # Table 2 of the ParaDnn paper (what a sweep spans by default); axis -> values.
    paper_space: ClassVar[Mapping[str, Sequence[Any]]]
    # The paper's fixed values for heat maps (seed 000 §4); analysis uses them as defaults.
    paper_fixed: ClassVar[Mapping[str, Any]] = {}

    def config(self, values: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        """A validated config from a mapping (CLI strings are coerced; unknown keys rejected)."""
        data = {**(values or {}), **kw}
        return from_mapping(self.config_cls, data, prefix=f"{self.name}.")

    def default_config(self) -> Any:
        return self.config_cls()

    def fields(self) -> list[dataclasses.Field]:
        return list(dataclasses.fields(self.config_cls))

    def examples_per_step(self, cfg: Any) -> int:
        return int(cfg.batch)

    @abstractmethod
    def params(self, cfg: Any) -> int:
        """Trainable parameters, from the config alone."""

    @abstractmethod
    def shapes(self, cfg: Any) -> list[Shape]:
        """The FLOP-carrying operations of one training step, in forward order."""

    def fwd_flops(self, cfg: Any) -> int:
        return sum(s.fwd_flops() for s in self.shapes(cfg))

    def train_flops(self, cfg: Any) -> int:
        """Model FLOPs of one forward+backward step (optimizer excluded)."""
        return sum(s.train_flops() for s in self.shapes(cfg))

    def buffer_bytes(self, cfg: Any) -> int:
        """Bytes of non-trainable module state (BatchNorm statistics): resident like weights."""
        return 0

    def activation_bytes(self, cfg: Any, precision: str, *, device_type: str = "cuda") -> int:
        """Bytes autograd holds from the end of forward into backward: saved tensors (the batch,
        16-bit weight copies under autocast, kernel-library workspaces) and the loss's log-softmax.

        This fallback counts every op's input and output from `shapes`, which is the right order
        of magnitude for an unknown model; the families override it with what PyTorch's autograd
        actually saves for their modules, per device type (`paradnn.memory` adds the rest).
        """
        elements = 0
        for s in self.shapes(cfg):
            if isinstance(s, Gemm):
                elements += s.m * (s.k + s.n)
            elif isinstance(s, Conv2d):
                elements += s.batch * (s.in_ch * s.in_h * s.in_w + s.out_ch * s.out_h * s.out_w)
            else:
                elements += s.seq * s.batch * (s.input + (s.gates + 1) * s.hidden)
        return elements * activation_itemsize(precision)

    def activation_floor_bytes(self, cfg: Any, precision: str, *, device_type: str = "cuda") -> int:
        """The part of `activation_bytes` that is certainly alive at the end of forward, whatever
        the kernel library: the memory model's lower bound rests on it, so a family without a
        precise model claims nothing."""
        return 0

    def transient_cast_bytes(self, cfg: Any, precision: str, *, device_type: str = "cuda") -> int:
        """16-bit weight copies that autocast caches until its region exits but no backward
        formula saves (those are in `activation_bytes`). The fallback assumes every GEMM and
        convolution weight is cast and none saved."""
        if precision not in AUTOCAST:
            return 0
        return 2 * sum(s.weights for s in self.shapes(cfg))

    @abstractmethod
    def build(self, cfg: Any, device: Any, precision: str = "fp32") -> Built:
        """Instantiate on `device`. Weights stay fp32 (mixed precision runs under autocast);
        `precision` picks the dtype of the synthetic floating-point inputs, as ParaDnn fed
        16-bit data to 16-bit runs."""


def input_dtype(precision: str) -> Any:
    import torch

    return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision, torch.float32)
