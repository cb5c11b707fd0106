"""The one interface every workload family (and every real-world model) implements.

A family is five things (docs/architecture.md):
- config: `config_cls` (a frozen, validated dataclass) and `config(values)`;
- space: `paper_space` (Table 2) and `paper_fixed`;
- analytic counts: `params`, `shapes` (and from them `train_flops`), `examples_per_step`;
- `build(cfg, device, precision)`: the module, a synthetic-batch maker and a loss;
- `build_jax(cfg, precision)` (optional, docs/jax.md): the same model in JAX;
- `activation_memory(cfg, precision, device_type)`: what the memory model needs from it.

Everything here but `build` is torch-free, so the simulator, the analysis layer and
`paradnn run --dry-run` can reason about a workload without importing torch.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from paradnn import precisions
from paradnn.families.shapes import Conv2d, Gemm, Shape
from paradnn.precisions import AUTOCAST
from paradnn.precisions import itemsize as activation_itemsize
from paradnn.validate import from_mapping

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = [
    "AUTOCAST",
    "ActivationMemory",
    "Built",
    "Family",
    "activation_itemsize",
    "cross_entropy_saved_bytes",
    "input_dtype",
]


def cross_entropy_saved_bytes(rows: int, classes: int) -> int:
    """What F.cross_entropy saves besides its targets: the log-softmax, fp32 even under autocast
    (it is on autocast's fp32 list), and nll_loss's scalar total weight."""
    return rows * classes * 4 + 4


@dataclass(frozen=True)
class ActivationMemory:
    """What a family tells the memory model (`paradnn.memory`) about one training step.

    saved:   bytes autograd holds from the end of forward into backward: saved tensors (the
             batch, 16-bit weight copies under autocast, kernel-library workspaces) and the
             loss's log-softmax;
    floor:   the part of `saved` certainly alive at the end of forward whatever the kernel
             library (the lower bound rests on it: a family without a precise model claims 0);
    casts:   16-bit weight copies autocast caches until its region exits but no backward
             formula saves (those are in `saved`);
    buffers: non-trainable module state (BatchNorm statistics), resident like the weights.
    """

    saved: int
    floor: int = 0
    casts: int = 0
    buffers: int = 0


@dataclass
class Built:
    """A model ready to train: module on the device, a maker of one synthetic batch, a loss."""

    module: torch.nn.Module
    make_batch: Callable[[], tuple[Any, Any]]
    loss: Callable[[Any, Any], torch.Tensor]
    # examples in one batch when the config cannot say (a model of your own: families/user.py)
    examples: int | None = None


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
    # Where `paper_space` comes from, as `paradnn families` labels it.
    space_label: ClassVar[str] = "paper space (Table 2)"
    # The paper's fixed values for heat maps (seed 000 §4); analysis uses them as defaults.
    paper_fixed: ClassVar[Mapping[str, Any]] = {}
    # False for a model known only once built (families/user.py): no params, FLOPs, shapes or
    # memory before it runs; its record's analytic counts and prediction stay null.
    analytic: ClassVar[bool] = True

    def config(self, values: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        """A validated config from a mapping (CLI strings are coerced; unknown keys rejected)."""
        data = {**(values or {}), **kw}
        return from_mapping(self.config_cls, data, prefix=f"{self.name}.")

    def ready(self, cfg: Any) -> None:  # noqa: B027  (a hook: most families need nothing)
        """Raise ConfigError, before any work, when `cfg` cannot be built here (a factory of
        your own that does not import); the built-in families always can."""

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

    def train_flops(self, cfg: Any) -> int:
        """Model FLOPs of one forward+backward step (optimizer excluded)."""
        return sum(s.train_flops() for s in self.shapes(cfg))

    def activation_memory(
        self, cfg: Any, precision: str, *, device_type: str = "cuda"
    ) -> ActivationMemory:
        """Bytes of one step that are not weights, gradients or optimizer state.

        This fallback counts every op's input and output from `shapes` (the right order of
        magnitude for an unknown model), claims no floor, and assumes autocast casts every GEMM
        and convolution weight and saves none; the families override it with what PyTorch's
        autograd actually saves for their modules, per device type.
        """
        elements = 0
        for s in self.shapes(cfg):
            if isinstance(s, Gemm):
                elements += s.m * (s.k + s.n)
            elif isinstance(s, Conv2d):
                elements += s.batch * (s.in_ch * s.in_h * s.in_w + s.out_ch * s.out_h * s.out_w)
            else:
                elements += s.seq * s.batch * (s.input + (s.gates + 1) * s.hidden)
        casts = 2 * sum(s.weights for s in self.shapes(cfg)) if precision in AUTOCAST else 0
        return ActivationMemory(saved=elements * activation_itemsize(precision), casts=casts)

    @abstractmethod
    def build(self, cfg: Any, device: Any, precision: str = "fp32") -> Built:
        """Instantiate on `device`. Weights stay fp32 (mixed precision runs under autocast);
        `precision` picks the dtype of the synthetic floating-point inputs, as ParaDnn fed
        16-bit data to 16-bit runs."""

    def build_jax(self, cfg: Any, precision: str = "fp32") -> Any:
        """The same model in JAX (`families._jax_nets.JaxNet`; docs/jax.md), for the families
        that have one; the others raise NotImplementedError (their JAX runs are
        `unsupported` with this message)."""
        raise NotImplementedError(f"{self.name} has no JAX implementation (docs/jax.md)")


def input_dtype(precision: str) -> Any:
    """The synthetic floating-point inputs' dtype: the precision's autocast dtype, else fp32."""
    import torch

    return getattr(torch, precisions.get(precision).autocast_dtype or "float32")
