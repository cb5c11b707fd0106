"""Torch-free descriptions of the FLOP-carrying operations of a workload.

The families list their GEMM, convolution and recurrent shapes here; analytic training FLOPs are
the sum over this list, so the counter test in `tests/` checks the shapes and the formula at once,
and the simulator and the roofline read the same list.

Conventions (reference/flops.md §1, §7): one multiply-add is 2 FLOPs; only matmul/conv/recurrent
GEMMs count (bias, norm, activation, pooling, loss and optimizer are 0); a training step is forward
plus backward, where backward is a data-gradient (skipped when the op's input needs no gradient)
plus a weight-gradient, each costing one forward.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Cell = Literal["rnn", "lstm", "gru"]
GATES: dict[str, int] = {"rnn": 1, "gru": 3, "lstm": 4}


@dataclass(frozen=True)
class Gemm:
    """y[m, n] = x[m, k] @ w[k, n] (a Linear layer over m rows)."""

    name: str
    m: int
    n: int
    k: int
    input_grad: bool = True
    kind: str = "gemm"

    def fwd_flops(self) -> int:
        return 2 * self.m * self.n * self.k

    def train_flops(self) -> int:
        return self.fwd_flops() * (3 if self.input_grad else 2)

    @property
    def weights(self) -> int:
        return self.n * self.k


@dataclass(frozen=True)
class Conv2d:
    """A 2-D convolution over square or rectangular maps, NCHW semantics."""

    name: str
    batch: int
    in_ch: int
    out_ch: int
    in_h: int
    in_w: int
    kernel: int
    stride: int = 1
    padding: int = 0
    groups: int = 1
    input_grad: bool = True
    kind: str = "conv2d"

    @property
    def out_h(self) -> int:
        return (self.in_h + 2 * self.padding - self.kernel) // self.stride + 1

    @property
    def out_w(self) -> int:
        return (self.in_w + 2 * self.padding - self.kernel) // self.stride + 1

    @property
    def weights(self) -> int:
        return self.out_ch * (self.in_ch // self.groups) * self.kernel * self.kernel

    def fwd_flops(self) -> int:
        return 2 * self.batch * self.out_h * self.out_w * self.weights

    def train_flops(self) -> int:
        return self.fwd_flops() * (3 if self.input_grad else 2)


@dataclass(frozen=True)
class Recurrent:
    """One unidirectional recurrent layer (RNN/GRU/LSTM) run over `seq` steps.

    Per step the gates do x@W_ih (gates*hidden × input) and h@W_hh (gates*hidden × hidden).
    h0 is a constant zero state, so backward computes no gradient for it at t = 0; the formula
    subtracts that one h@W_hh data-gradient, which is what PyTorch's decomposed path executes.
    """

    name: str
    cell: Cell
    batch: int
    seq: int
    input: int
    hidden: int
    input_grad: bool = True
    kind: str = "recurrent"

    @property
    def gates(self) -> int:
        return GATES[self.cell]

    @property
    def weights(self) -> int:
        return self.gates * self.hidden * (self.input + self.hidden)

    def fwd_flops(self) -> int:
        return 2 * self.seq * self.batch * self.weights

    def train_flops(self) -> int:
        fwd = self.fwd_flops()
        dgrad_x = 2 * self.seq * self.batch * self.gates * self.hidden * self.input
        dgrad_h = 2 * (self.seq - 1) * self.batch * self.gates * self.hidden * self.hidden
        wgrad = fwd
        return fwd + wgrad + dgrad_h + (dgrad_x if self.input_grad else 0)


Shape = Gemm | Conv2d | Recurrent
