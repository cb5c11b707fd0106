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

from paradnn.families.shapes import Shape
from paradnn.validate import from_mapping

if TYPE_CHECKING:  # pragma: no cover
    import torch


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

    @abstractmethod
    def build(self, cfg: Any, device: Any, precision: str = "fp32") -> Built:
        """Instantiate on `device`. Weights stay fp32 (mixed precision runs under autocast);
        `precision` picks the dtype of the synthetic floating-point inputs, as ParaDnn fed
        16-bit data to 16-bit runs."""


def input_dtype(precision: str) -> Any:
    import torch

    return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision, torch.float32)
