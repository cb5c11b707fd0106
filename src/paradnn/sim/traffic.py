"""Bytes per layer, roofline bounds, and whether a model fits a chip's memory.

Per GEMM the time is bounded below by the roofline, ``max(t_compute, bytes / BW)`` (perfect
overlap of compute and memory traffic), and above by the serial sum ``t_compute + bytes / BW``
(no overlap); the two differ by at most 2× (modelling.md §2.5). Bytes are the op's input, weight
and output tensors each moved once (on-chip reuse within an op, none between ops).

Traffic that is not a GEMM is counted too, because on a real step it is not free: the optimizer
reads and writes every parameter and its state, and each GEMM's output passes through
elementwise ops (bias, activation, normalisation) forward and backward. `ELEMENTWISE_PASSES`
states how many times such an output is read or written; it is a modelling assumption, not a
measurement, and `paradnn simulate validate` shows what it costs in accuracy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from paradnn import optimizers
from paradnn.errors import ConfigError
from paradnn.families.lowering import Op
from paradnn.optimizers import OPTIMIZERS

if TYPE_CHECKING:  # pragma: no cover
    from paradnn.config import RunSpec

# Reads + writes of each forward GEMM output by the elementwise ops around it, forward and
# backward (an assumption; see the module docstring): FC bias + ReLU, CNN BatchNorm + ReLU
# (+ residual), RNN gate nonlinearities and the state update.
ELEMENTWISE_PASSES = {"gemm": 4, "conv2d": 10, "recurrent": 6, "attention": 4}


@dataclass(frozen=True)
class Bounds:
    compute_s: float
    memory_s: float

    @property
    def lower_s(self) -> float:
        return max(self.compute_s, self.memory_s)

    @property
    def upper_s(self) -> float:
        return self.compute_s + self.memory_s

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s >= self.memory_s else "memory"


def op_bytes(op: Op, itemsize: int) -> int:
    return op.elements() * itemsize


def roofline(flops: float, nbytes: float, peak: float, bandwidth: float) -> Bounds:
    """Compute time at ``peak`` and memory time at ``bandwidth``; see `Bounds`."""
    return Bounds(flops / peak, nbytes / bandwidth)


def attainable(intensity: float, peak: float, bandwidth: float) -> float:
    """Roofline FLOP/s at ``intensity`` FLOP/byte: min(peak, BW × intensity)."""
    return min(peak, bandwidth * intensity)


def optimizer_bytes(params: int, optimizer: str, impl: str = "fused") -> int:
    """Bytes of fp32 words the parameters move in one optimizer step (`paradnn.optimizers`):
    one pass when the update is ``fused`` (a fused kernel, or XLA), every elementwise op's reads
    and writes under torch's ``loop`` and ``foreach`` implementations."""
    if optimizer not in optimizers.TABLE:
        raise ConfigError("--optimizer", optimizer, "must be one of " + ", ".join(OPTIMIZERS))
    facts = optimizers.get(optimizer)
    words = facts.words_per_param
    if impl != "fused" and facts.unfused_words_per_param is not None:
        words = facts.unfused_words_per_param
    return words * 4 * params


def elementwise_bytes(fwd_outputs: int, kind: str, itemsize: int) -> int:
    return ELEMENTWISE_PASSES.get(kind, ELEMENTWISE_PASSES["gemm"]) * fwd_outputs * itemsize


@dataclass(frozen=True)
class Capacity:
    """Per-chip memory of data-parallel training: every chip holds the whole model (weights,
    gradients, optimizer state) and the activations of its share of the batch."""

    needed_bytes: int  # paradnn.memory's estimate of the peak
    lower_bound_bytes: int  # what certainly must fit
    capacity_bytes: float | None
    fits: bool | None  # None when the chip's memory is unknown

    def as_dict(self) -> dict[str, Any]:
        return {
            "needed_bytes": self.needed_bytes,
            "lower_bound_bytes": self.lower_bound_bytes,
            "capacity_bytes": self.capacity_bytes,
            "fits": self.fits,
        }


def capacity(spec: RunSpec, capacity_bytes: float | None) -> Capacity:
    """Uses `paradnn.memory` (the same model `run` trusts to skip configs) on the per-chip run,
    described whole (its precision policy: pure keeps 16-bit weights, gradients and optimizer
    state; its optimizer implementation); it fits when the lower bound does (never claim an OOM
    that might not happen). A tf32 run is stored in fp32, and sized so."""
    import dataclasses

    from paradnn import memory

    if spec.options.precision == "tf32":
        options = dataclasses.replace(spec.options, precision="fp32")
        spec = dataclasses.replace(spec, options=options)
    est = memory.estimate(spec, device_type="cuda")
    fits = None if capacity_bytes is None else est.lower_bound <= capacity_bytes
    return Capacity(est.total, est.lower_bound, capacity_bytes, fits)
